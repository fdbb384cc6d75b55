package blocks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// This file renders what reviewers did beyond answering (a directive that
// closed the request, escalations by hand, a follow-up's lineage), how an
// approval was given (with changes, by a standing approval), the bounds a
// decision's answer must keep, and the date-and-time picker.

// Budgets of the outcome texts.
const (
	directiveBudget  = 1500 // the guidance, requirement or reason of a directive
	changesBudget    = 400  // the "name: old → new" lines of a modified approval
	changeValue      = 80   // one side of a change
	reassignBudget   = 300  // one escalation's note
	maxReassignLines = 5
)

// boundsText says what an answer must keep to: a number's range, a text's
// length, how many options to pick, a date's range; "" when unbounded.
func boundsText(d aah.Decision) string {
	c := d.Constraints
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	switch d.Type {
	case aah.TypeNumber:
		return between(c.Min, c.Max, num, "Between %s and %s", "At least %s", "At most %s")
	case aah.TypeText:
		return between(c.Min, c.Max, num, "%s to %s characters", "At least %s characters", "At most %s characters")
	case aah.TypeMultiChoice:
		lo := c.Min
		if lo != nil && *lo <= 0 {
			lo = nil
		}
		if lo != nil && c.Max != nil && *lo == *c.Max {
			return "Pick " + num(lo)
		}
		return between(lo, c.Max, num, "Pick %s to %s", "Pick at least %s", "Pick at most %s")
	case aah.TypeDate:
		var lo, hi *string
		if c.MinDate != "" {
			lo = &c.MinDate
		}
		if c.MaxDate != "" {
			hi = &c.MaxDate
		}
		return between(lo, hi, dateBound, "Between %s and %s", "On or after %s", "On or before %s")
	}
	return ""
}

func between[T any](lo, hi *T, show func(*T) string, both, min, max string) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf(both, show(lo), show(hi))
	case lo != nil:
		return fmt.Sprintf(min, show(lo))
	case hi != nil:
		return fmt.Sprintf(max, show(hi))
	}
	return ""
}

// dateBound shows a date bound as given, a date-time in the reader's zone.
func dateBound(s *string) string {
	if t, err := aah.ParseDateValue(*s); err == nil && len(*s) > len(aah.DateOnlyLayout) {
		return slackDate(t)
	}
	return escape(*s)
}

// grantText names the standing approval that answered a decision.
func grantText(g aah.GrantRef) string {
	return fmt.Sprintf(" by a standing approval from <@%s> for %s, until %s", g.By.ID, code(g.ActionKey, 100), slackDate(g.ExpiresAt))
}

// changeLines lists the parameters a modified approval changed, as
// "• *name:* old → new" in the order the agent listed them, within
// changesBudget.
func changeLines(d aah.Decision, edited map[string]any) string {
	var original map[string]any
	order := map[string]int{}
	if d.Review != nil && d.Review.Action != nil {
		original = d.Review.Action.Parameters
		for i, name := range parameterNames(d.Review.Action) {
			order[name] = i + 1
		}
	}
	changes := aah.ChangedParameters(original, edited)
	slices.SortStableFunc(changes, func(a, b aah.ParamChange) int {
		// Known parameters in the agent's order, then the others by name.
		ia, ib := order[a.Name], order[b.Name]
		switch {
		case ia == 0 && ib == 0:
			return 0
		case ia == 0:
			return 1
		case ib == 0:
			return -1
		}
		return ia - ib
	})
	side := func(v any, present bool) string {
		if !present {
			return "_(none)_"
		}
		out, _ := fit(oneLine(valueString(v)), changeValue, "…")
		return out
	}
	var b strings.Builder
	for _, c := range changes {
		_, had := original[c.Name]
		_, has := edited[c.Name]
		line := "\n• " + paramName(c.Name) + " " + side(c.From, had) + " → " + side(c.To, has)
		if b.Len()+len(line) > changesBudget {
			b.WriteString("\n• …more changes are in the response and the audit trail")
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// dateTimePicker is a date decision's control when it asks for a moment
// (precision "datetime"), set to current: the answer, else the default.
func dateTimePicker(current any) *slack.DateTimePickerBlockElement {
	dp := slack.NewDateTimePickerBlockElement(ActionDate)
	if v, ok := current.(string); ok {
		if t, err := aah.ParseDateValue(v); err == nil {
			dp.InitialDateTime = t.Unix()
		}
	}
	return dp
}

// directiveBanner is how a directive closed the request, e.g.
// ":double_vertical_bar: *Deferred* by <@U1> … — guidance: try a smaller batch".
func directiveBanner(dir aah.Directive) string {
	text, _ := fit(strings.TrimSpace(dir.Text), directiveBudget, "…")
	at := ""
	if !dir.At.IsZero() {
		at = " " + slackDate(dir.At)
	}
	by := fmt.Sprintf("<@%s>%s", dir.By.ID, at)
	switch dir.Verb {
	case aah.VerbDefer:
		return fmt.Sprintf(":double_vertical_bar: *Deferred* by %s — guidance: %s", by, text)
	case aah.VerbChangePlan:
		return fmt.Sprintf(":repeat: *Change of plan requested* by %s: %s", by, text)
	case aah.VerbAbort:
		return fmt.Sprintf(":octagonal_sign: *Aborted* by %s: %s\nThe agent was told to stop its run.", by, text)
	}
	return fmt.Sprintf("*%s* by %s: %s", escape(string(dir.Verb)), by, text)
}

// directiveEmoji marks each directive.
func directiveEmoji(v aah.Verb) string {
	switch v {
	case aah.VerbDefer:
		return ":double_vertical_bar:"
	case aah.VerbChangePlan:
		return ":repeat:"
	case aah.VerbAbort:
		return ":octagonal_sign:"
	}
	return ":white_check_mark:"
}

// directivePhrase is a directive in a few words for the fallback text and
// a follow-up's line, e.g. "Deferred by <@U1>".
func directivePhrase(dir aah.Directive) string {
	switch dir.Verb {
	case aah.VerbDefer:
		return fmt.Sprintf("Deferred by <@%s>", dir.By.ID)
	case aah.VerbChangePlan:
		return fmt.Sprintf("Change of plan requested by <@%s>", dir.By.ID)
	case aah.VerbAbort:
		return fmt.Sprintf("Aborted by <@%s>", dir.By.ID)
	}
	return fmt.Sprintf("%s by <@%s>", escape(string(dir.Verb)), dir.By.ID)
}

// reassignmentText lists the escalations reviewers made by hand, the
// latest maxReassignLines of them.
func reassignmentText(list []aah.Reassignment) string {
	var lines []string
	if hidden := len(list) - maxReassignLines; hidden > 0 {
		lines = append(lines, fmt.Sprintf("_…%d earlier escalations are in the audit trail_", hidden))
		list = list[hidden:]
	}
	for _, re := range list {
		line := fmt.Sprintf(":arrow_heading_up: Escalated by <@%s> to %s", re.By.ID, TargetMention(re.To))
		if !re.At.IsZero() {
			line += " " + slackDate(re.At)
		}
		if note := strings.TrimSpace(re.Note); note != "" {
			n, _ := fit(oneLine(note), reassignBudget, "…")
			line += ": " + n
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TargetMention shows an escalation target in Slack syntax: a user, a user
// group or a channel id as a mention; a channel name or an email as text
// (escaped). Every place a request is shown names its targets this way.
func TargetMention(to string) string {
	to = strings.TrimSpace(to)
	switch {
	case aah.IsSlackUserID(to):
		return "<@" + to + ">"
	case aah.IsSlackGroupID(to):
		return "<!subteam^" + to + ">"
	case aah.IsSlackChannelID(to):
		return "<#" + to + ">"
	}
	return plain(escape(to), 200)
}

// followUpLine says which earlier request this one follows up, linked to
// its message, and how that one ended when a reviewer deferred it or asked
// for a new plan.
func followUpLine(f FollowUp) string {
	title, _ := fit(strings.ReplaceAll(oneLine(f.Title), "|", "/"), 150, "…")
	if title == "" {
		title = escape(f.ID)
	}
	ref := "*" + title + "*"
	if f.Permalink != "" {
		ref = "<" + f.Permalink + "|" + title + ">"
	}
	line := ":arrow_right_hook: Follow-up of " + ref
	if f.Directive != nil {
		text, _ := fit(oneLine(f.Directive.Text), 300, "…")
		line += " — " + strings.ToLower(directivePhrase(*f.Directive)[:1]) + directivePhrase(*f.Directive)[1:] + ": " + text
	}
	return line
}

// DirectiveOutcome says in a few words how a directive ended a request,
// for sentences like "it was deferred by <@U1>" (a reminder's last copy).
func DirectiveOutcome(dir aah.Directive) string {
	switch dir.Verb {
	case aah.VerbDefer:
		return fmt.Sprintf("was deferred by <@%s>", dir.By.ID)
	case aah.VerbChangePlan:
		return fmt.Sprintf("was sent back for a new plan by <@%s>", dir.By.ID)
	case aah.VerbAbort:
		return fmt.Sprintf("was aborted by <@%s>", dir.By.ID)
	}
	return fmt.Sprintf("was closed (%s) by <@%s>", escape(string(dir.Verb)), dir.By.ID)
}

// directiveFallback is the notification text of a request a directive
// closed: the directive, the title and the directive's text (escaped; the
// mention is Slack's).
func directiveFallback(title string, dir aah.Directive) string {
	return directivePhrase(dir) + ": " + escape(title) + " — " + escape(oneLine(dir.Text))
}
