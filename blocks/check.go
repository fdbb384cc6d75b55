package blocks

import (
	"fmt"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
)

const fieldData = "content.body.data"

// Check reports what Slack would reject about a valid request, so intake can
// refuse it before anything is posted. Text that can be shortened honestly
// (descriptions, context: the full text stays reachable through "View
// details") is not a problem; titles, prompts, option labels and values are,
// because cutting them would change what the reviewer is asked.
func Check(req *aah.Request) []aah.FieldError {
	var probs []aah.FieldError
	add := func(field, format string, args ...any) {
		probs = append(probs, aah.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if n := utf8.RuneCountInString(req.Artifact.Title); n > MaxHeaderText {
		add("artifact.title", "is %d characters; a Slack header holds at most %d", n, MaxHeaderText)
	}
	if n := utf8.RuneCountInString(req.Data.Context); n > maxDescriptionLen {
		add(fieldData+".context", "is %d characters; at most %d are accepted", n, maxDescriptionLen)
	}
	for i, d := range req.Data.Decisions {
		// Built only for a problem: a valid request formats no path.
		path := func() string { return fmt.Sprintf("%s.decisions[%d]", fieldData, i) }
		// Counted as Slack will see it: &, < and > are escaped for mrkdwn.
		if n := utf8.RuneCountInString(escape(d.Prompt)); n > MaxPromptLength {
			add(path()+".prompt", "is %d characters (counting &, < and > as Slack's escapes); at most %d fit a Slack message and its input dialog", n, MaxPromptLength)
		}
		if n := utf8.RuneCountInString(d.Description); n > maxDescriptionLen {
			add(path()+".description", "is %d characters; at most %d are accepted", n, maxDescriptionLen)
		}
		if len(d.Options) > MaxSelectOptions {
			add(path()+".options", "has %d options; a Slack select menu holds at most %d", len(d.Options), MaxSelectOptions)
		}
		for j, o := range d.Options {
			if n := utf8.RuneCountInString(o.Label); n > MaxOptionText {
				add(fmt.Sprintf("%s.options[%d].label", path(), j), "is %d characters; a Slack menu option holds at most %d", n, MaxOptionText)
			}
			if n := utf8.RuneCountInString(o.Value); n > MaxOptionValue {
				add(fmt.Sprintf("%s.options[%d].value", path(), j), "is %d characters; a Slack menu option value holds at most %d", n, MaxOptionValue)
			}
		}
	}
	// Counted in the request's largest state, without rendering (count.go).
	if n := countBlocks(req, largestState(req)); n > MaxMessageBlocks {
		// What one decision takes: its question and controls, and its
		// review's blocks.
		fixed, most := n, 0
		for _, d := range req.Data.Decisions {
			k := 2 + reviewBlockCount(d)
			fixed -= k
			most = max(most, k)
		}
		add(fieldData+".decisions", "needs %d Slack blocks but a message holds %d: at most %d decisions fit in one request; split it",
			n, MaxMessageBlocks, (MaxMessageBlocks-fixed)/most)
	}
	return probs
}
