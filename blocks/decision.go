package blocks

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// Budgets for the variable parts of a decision's section, chosen so that a
// prompt of MaxPromptLength plus all of them stays under MaxSectionText.
const (
	valueBudget   = 200 // a default or answer value
	commentBudget = 330 // every comment on the decision with its author, together
)

// decisionBlocks renders one decision as two blocks: a section with the
// question (prompt, required mark, description, options, default, answer) and,
// while the request is open, an actions block with its controls.
func (r *renderer) decisionBlocks(i int, d aah.Decision) []slack.Block {
	var b strings.Builder
	mark := "_optional_"
	if d.Required {
		mark = "*required*"
	}
	fmt.Fprintf(&b, "*%d. %s*  %s", i+1, escape(d.Prompt), mark)
	answer, answered := r.st.Answers[d.ID]
	tail := r.answerText(d, answer, answered) + r.signoffText(d, answer)
	if d.HasDefault() {
		tail = "\n_Default: " + valueText(d, d.Default) + "_" + tail
	}
	if bounds := boundsText(d); bounds != "" {
		tail = "\n_" + bounds + "_" + tail
	}
	// The description and the option list share what the section has left;
	// a choice keeps at least half of it for its options.
	room := MaxSectionText - utf8.RuneCountInString(b.String()) - utf8.RuneCountInString(tail)
	cut := false
	if d.Description != "" {
		descRoom := room - 1
		if len(d.Options) > 0 {
			descRoom = room / 2
		}
		desc, descCut := fit(d.Description, descRoom, truncatedMarker)
		b.WriteString("\n" + desc)
		room -= utf8.RuneCountInString(desc) + 1
		cut = descCut
	}
	if len(d.Options) > 0 {
		list, listCut := optionList(d, room)
		b.WriteString(list)
		cut = cut || listCut
	}
	b.WriteString(tail)
	review, reviewCut := reviewBlocks(d)
	cut = cut || reviewCut
	r.truncated = r.truncated || cut
	blocks := append([]slack.Block{section(clampSection(b.String()))}, review...)
	if r.open() {
		blocks = append(blocks, r.controls(d, answer, answered, cut))
	}
	return blocks
}

// optionList lists choice options with their descriptions, within room;
// cut reports that some had to be left to the menu.
func optionList(d aah.Decision, room int) (list string, cut bool) {
	var b strings.Builder
	n := 0
	for i, o := range d.Options {
		line := "\n• *" + escape(o.Label) + "*"
		if o.Description != "" {
			line += " — " + escape(o.Description)
		}
		more := fmt.Sprintf("\n• …and %d more options in the menu", len(d.Options)-i)
		if n+utf8.RuneCountInString(line)+utf8.RuneCountInString(more) > room {
			b.WriteString(more)
			return b.String(), true
		}
		b.WriteString(line)
		n += utf8.RuneCountInString(line)
	}
	return b.String(), false
}

// valueText renders a typed value (a default or an answer) for humans,
// escaped for mrkdwn and at most valueBudget characters long.
func valueText(d aah.Decision, v any) string {
	var s string
	switch val := v.(type) {
	case bool:
		s = "Reject"
		if val {
			s = "Approve"
		}
	case string:
		s = val
		switch d.Type {
		case aah.TypeChoice:
			s = d.OptionLabel(val)
		case aah.TypeText:
			s = "“" + val + "”"
		case aah.TypeDate:
			if t, err := aah.ParseDateValue(val); err == nil && len(val) > len(aah.DateOnlyLayout) {
				// A moment: every reader sees it in their own time zone.
				return slackDate(t)
			}
		}
	case []string:
		labels := make([]string, len(val))
		for i, v := range val {
			labels[i] = d.OptionLabel(v)
		}
		s = strings.Join(labels, ", ")
		if len(labels) == 0 {
			s = "nothing selected"
		}
	case float64:
		s = strconv.FormatFloat(val, 'f', -1, 64)
	default:
		s = fmt.Sprint(v)
	}
	out, _ := fit(s, valueBudget, "…")
	return out
}

// answerText is the recorded answer line with every comment, or while
// closed, "No answer".
func (r *renderer) answerText(d aah.Decision, a aah.Answer, answered bool) string {
	if !answered || !a.Answered() {
		s := ""
		if !r.open() {
			s = "\n:heavy_minus_sign: _No answer_"
		}
		if answered {
			s += commentLines(a)
		}
		return s
	}
	icon := ":ballot_box_with_check:"
	if v, ok := a.Value.(bool); ok {
		icon = ":white_check_mark:"
		if !v {
			icon = ":x:"
		}
	}
	if a.TimedOut {
		// Nobody gave this answer: the icon must not read as a person's verdict.
		icon = ":hourglass:"
	}
	s := fmt.Sprintf("\n%s *%s*", icon, valueText(d, a.Value))
	if a.Verb == aah.VerbModify {
		s = fmt.Sprintf("\n%s *Approved with changes*", icon)
	}
	switch {
	case a.Grant != nil:
		s += grantText(*a.Grant)
	case a.Defaulted:
		s += " _(default: nobody answered)_"
	case a.TimedOut:
		s += fmt.Sprintf(" _(timed out: nobody answered before the deadline; on_deadline is %s)_", r.req.OnDeadline)
	case a.By.ID != "" && a.DefaultAccepted:
		s += fmt.Sprintf(" by <@%s> _(accepted the default shown)_", a.By.ID)
	case a.By.ID != "":
		s += fmt.Sprintf(" by <@%s>", a.By.ID)
	}
	if !a.At.IsZero() && !a.Defaulted && !a.TimedOut && a.Grant == nil {
		s += " " + slackDate(a.At)
	}
	if a.RejectReason != "" {
		reason, _ := fit(oneLine(a.RejectReason), 100, "…")
		s += " · reason: *" + reason + "*"
	}
	if a.Verb == aah.VerbModify {
		s += changeLines(d, a.Parameters)
	}
	return s + commentLines(a)
}

// commentLines quotes every comment, each on one line (newlines would
// multiply the quote markers past the section's budget) and named by its
// author unless that is the person who answered. Together they stay within
// commentBudget: each comment gets an equal share (at least
// minCommentShare), and the earliest that do not fit are counted instead.
func commentLines(a aah.Answer) string {
	var list []aah.Comment
	for _, c := range a.Comments {
		if strings.TrimSpace(c.Text) != "" {
			list = append(list, c)
		}
	}
	if len(list) == 0 {
		return ""
	}
	shown := min(len(list), commentBudget/minCommentShare)
	share := commentBudget/shown - commentAuthorRoom
	var b strings.Builder
	if hidden := len(list) - shown; hidden > 0 {
		fmt.Fprintf(&b, "\n_…%d earlier comments are in the response and the audit trail_", hidden)
	}
	for _, c := range list[len(list)-shown:] {
		text, _ := fit(strings.Join(strings.Fields(c.Text), " "), share, "…")
		if !a.Answered() || c.By.ID != a.By.ID || a.Defaulted || a.TimedOut {
			text += fmt.Sprintf(" — <@%s>", c.By.ID)
		}
		b.WriteString("\n> " + text)
	}
	return b.String()
}

// minCommentShare is the least room one comment gets in the message;
// commentAuthorRoom is what its " — <@U…>" attribution and quote take.
const (
	minCommentShare   = 110
	commentAuthorRoom = 30
)

// controls builds a decision's interactive elements. The current answer (or
// else the default, see aah.Decision.PreselectedDefault) is preselected so
// the control shows what will be sent: Submit records a preselected default
// as the submitter's answer.
func (r *renderer) controls(d aah.Decision, a aah.Answer, answered bool, details bool) *slack.ActionBlock {
	var elems []slack.BlockElement
	current, _ := d.PreselectedDefault()
	answered = answered && a.Answered()
	if answered {
		current = a.Value
	}
	switch d.Type {
	case aah.TypeApproval:
		elems = append(elems, approvalButtons(d, r.rules, r.st.GrantMax)...)
	case aah.TypeChoice:
		sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("Choose…"), ActionSelect, options(d)...)
		if v, ok := current.(string); ok {
			sel.InitialOption = option(d, v)
		}
		elems = append(elems, sel)
	case aah.TypeMultiChoice:
		sel := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plainText("Choose…"), ActionMultiSelect, options(d)...)
		if vs, ok := current.([]string); ok {
			for _, v := range vs {
				sel.InitialOptions = append(sel.InitialOptions, option(d, v))
			}
		}
		if d.Constraints.Max != nil {
			n := int(*d.Constraints.Max)
			sel.MaxSelectedItems = &n
		}
		elems = append(elems, sel)
	case aah.TypeText, aah.TypeNumber:
		label := "Enter text…"
		if d.Type == aah.TypeNumber {
			label = "Enter a number…"
		}
		if answered {
			label = "Change answer…"
		}
		elems = append(elems, slack.NewButtonBlockElement(ActionOpenInput, d.ID, plainText(label)))
	case aah.TypeDate:
		if d.Review != nil && d.Review.DateTime {
			elems = append(elems, dateTimePicker(current))
			break
		}
		dp := slack.NewDatePickerBlockElement(ActionDate)
		dp.Placeholder = plainText("Pick a date")
		if v, ok := current.(string); ok {
			if t, err := aah.ParseDateValue(v); err == nil {
				dp.InitialDate = t.Format(aah.DateOnlyLayout)
			}
		}
		elems = append(elems, dp)
	}
	elems = append(elems, slack.NewButtonBlockElement(ActionComment, d.ID, plainText("Comment")))
	if details {
		elems = append(elems, slack.NewButtonBlockElement(ActionDetails, d.ID, plainText("View details")))
	}
	return slack.NewActionBlock(BlockID(r.st.Version, r.req.Artifact.ID, d.ID), elems...)
}

func options(d aah.Decision) []*slack.OptionBlockObject {
	out := make([]*slack.OptionBlockObject, len(d.Options))
	for i, o := range d.Options {
		out[i] = option(d, o.Value)
	}
	return out
}

// option builds the select option for value. Labels and values were checked
// against Slack's limits at intake; descriptions may be shortened because the
// section above lists them in full.
func option(d aah.Decision, value string) *slack.OptionBlockObject {
	for _, o := range d.Options {
		if o.Value != value {
			continue
		}
		var desc *slack.TextBlockObject
		if o.Description != "" {
			desc = slack.NewTextBlockObject(slack.PlainTextType, plain(o.Description, MaxOptionDesc), true, false)
		}
		return slack.NewOptionBlockObject(o.Value, slack.NewTextBlockObject(slack.PlainTextType, o.Label, true, false), desc)
	}
	return nil
}

// clampSection is the last guard of Slack's section limit: budgets keep a
// section below it, and if they ever do not, the section is cut at a line
// break (never inside an escape sequence or a <…> token) with a marker,
// rather than Slack refusing the whole message.
func clampSection(s string) string {
	if utf8.RuneCountInString(s) <= MaxSectionText {
		return s
	}
	r := []rune(s)[:MaxSectionText-utf8.RuneCountInString(truncatedMarker)-1]
	cut := string(r)
	if i := strings.LastIndex(cut, "\n"); i > 0 {
		cut = cut[:i]
	}
	return cut + "\n" + strings.TrimPrefix(truncatedMarker, "… ")
}
