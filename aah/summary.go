package aah

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// summaryItem is one decision in the summary.
type summaryItem struct {
	group  int    // groupApproved, groupRejected or groupOther
	prompt string // the decision's prompt
	value  string // groupOther: the answer as words
	notes  []string
}

const (
	groupApproved = iota
	groupRejected
	groupOther
)

// Summary is data.summary: a deterministic one-paragraph English summary of
// the answers, at most MaxSummaryLength characters. It lists the approved
// prompts, the rejected prompts with their comments in parentheses, then
// every other decision as "<prompt>: <answer>"; answers that took the
// decision's default are marked "(default)", defaults a reviewer accepted
// as shown "(default accepted)", answers the on_deadline action gave
// "(timed out)", approvals given with edited parameters "(modified: replicas
// 6 → 4)", rejections with a picked reason that reason, and decisions nobody answered
// read "<prompt>: no answer". An expired request's summary starts with
// "Expired before it was resolved." Long prompts, answers and comments are
// shortened with "…" to keep within the bound.
func Summary(req *Request, answers map[string]Answer, outcome string) string {
	prefix := ""
	if outcome == OutcomeExpired {
		prefix = "Expired before it was resolved."
	}
	return summary(req, answers, prefix)
}

// summary is Summary opened by the sentence prefix ("" for none).
func summary(req *Request, answers map[string]Answer, prefix string) string {
	items := make([]summaryItem, 0, len(req.Data.Decisions))
	for _, d := range req.Data.Decisions {
		a := answers[d.ID]
		it := summaryItem{group: groupOther, prompt: oneLine(d.Prompt)}
		v := answerValue(d, a)
		switch {
		case v == nil:
		case a.Defaulted:
			it.notes = append(it.notes, "default")
		case a.DefaultAccepted:
			it.notes = append(it.notes, "default accepted")
		case a.TimedOut:
			it.notes = append(it.notes, "timed out")
		}
		switch x := v.(type) {
		case nil:
			it.value = "no answer"
			it.notes = nil
		case bool:
			it.group = groupApproved
			if x && a.Verb == VerbModify {
				if ch := changeWords(d, a.Parameters); ch != "" {
					it.notes = append(it.notes, "modified: "+ch)
				}
			}
			if !x {
				it.group = groupRejected
				if r := oneLine(a.RejectReason); r != "" {
					it.notes = append(it.notes, r)
				}
				if r, ok := a.Rationale(); ok && oneLine(r.Text) != "" {
					it.notes = append(it.notes, oneLine(r.Text))
				}
			}
		default:
			it.value = valueWords(d, v)
		}
		items = append(items, it)
	}
	// Shorten every prompt, answer and comment to ever fewer characters
	// until the whole fits; as a last resort cut the paragraph itself.
	for _, limit := range []int{0, 200, 150, 120, 100, 80, 64, 48, 40, 32, 24, 16, 12, 8} {
		if s := renderSummary(prefix, items, limit); utf8.RuneCountInString(s) <= MaxSummaryLength {
			return s
		}
	}
	return shorten(renderSummary(prefix, items, 8), MaxSummaryLength)
}

func renderSummary(prefix string, items []summaryItem, limit int) string {
	cut := func(s string) string { return shorten(s, limit) }
	withNotes := func(it summaryItem) string {
		s := cut(it.prompt)
		if len(it.notes) > 0 {
			notes := make([]string, len(it.notes))
			for i, n := range it.notes {
				notes[i] = cut(n)
			}
			s += " (" + strings.Join(notes, "; ") + ")"
		}
		return s
	}
	var sentences []string
	if prefix != "" {
		sentences = append(sentences, prefix)
	}
	for _, g := range []struct {
		group int
		label string
	}{{groupApproved, "Approved: "}, {groupRejected, "Rejected: "}} {
		var list []string
		for _, it := range items {
			if it.group == g.group {
				list = append(list, withNotes(it))
			}
		}
		if len(list) > 0 {
			sentences = append(sentences, sentence(g.label+strings.Join(list, ", ")))
		}
	}
	for _, it := range items {
		if it.group == groupOther {
			s := strings.TrimSuffix(cut(it.prompt), ":") + ": " + cut(it.value)
			if len(it.notes) > 0 {
				s += " (" + strings.Join(it.notes, "; ") + ")"
			}
			sentences = append(sentences, sentence(s))
		}
	}
	return strings.Join(sentences, " ")
}

// valueWords is an answer as the summary writes it: option labels for
// choices, the number as JSON writes it, text in quotes, a date as given.
func valueWords(d Decision, v any) string {
	switch x := v.(type) {
	case []string:
		if len(x) == 0 {
			return "none"
		}
		labels := make([]string, len(x))
		for i, s := range x {
			labels[i] = oneLine(d.OptionLabel(s))
		}
		return strings.Join(labels, ", ")
	case float64:
		b, _ := json.Marshal(x)
		return string(b)
	case string:
		switch d.Type {
		case TypeChoice:
			return oneLine(d.OptionLabel(x))
		case TypeText:
			return `"` + oneLine(x) + `"`
		}
		return oneLine(x)
	}
	return fmt.Sprint(v)
}

// changeWords is what a modify changed, as the summary writes it:
// "replicas 6 → 4, service api → web".
func changeWords(d Decision, edited map[string]any) string {
	if d.Review == nil || d.Review.Action == nil {
		return ""
	}
	var parts []string
	for _, c := range ChangedParameters(d.Review.Action.Parameters, edited) {
		parts = append(parts, oneLine(c.Name+" "+ParamText(c.From)+" → "+ParamText(c.To)))
	}
	return strings.Join(parts, ", ")
}

// sentence ends s with a full stop unless it already ends with one.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// oneLine collapses runs of white space (newlines included) to one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// shorten cuts s to at most limit characters, ending it with "…" when cut;
// limit 0 means no limit.
func shorten(s string, limit int) string {
	if limit <= 0 || utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:limit-1]), " ") + "…"
}
