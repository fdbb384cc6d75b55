// Package blocks renders decision requests as Slack Block Kit messages. It is
// pure: a request plus its current state in, blocks out; no I/O, no clock.
package blocks

import (
	"fmt"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// State is everything about a request that changes after intake.
type State struct {
	Status  aah.Status
	Version int64 // record version; part of every block_id
	// Agent is the authenticated agent identity, shown when the request's
	// source names nobody else.
	ReceivedAt time.Time
	// Mentions are the reviewers to mention, already resolved to Slack
	// mention syntax ("<@U123>") or, when unresolvable, plain text.
	Mentions []string
	// Answers holds the recorded answer of each decision, by decision id.
	Answers map[string]aah.Answer
	// ClosedAt is when the request left the open states.
	ClosedAt time.Time
	// ResolvedBy is who resolved the request (the outcome names them).
	ResolvedBy aah.Person
	// EscalatedTo names whom an escalated request was escalated to, in Slack
	// syntax ("<@U123>", "<#C123>") or as plain text ("#general").
	EscalatedTo []string
	// Defaults are the workspace's sign-off rules, which the request's
	// extensions.slack overrides (quorum progress, reasons for rejecting).
	Defaults aah.Defaults
	// Directive is the defer, change_plan or abort that closed the request.
	Directive *aah.Directive
	// Reassignments are the escalations reviewers made by hand, oldest first.
	Reassignments []aah.Reassignment
	// FollowUpOf is the earlier request this one follows up
	// (handoff.parent_artifact_ids naming a stored request of the same
	// agent); nil when none.
	FollowUpOf *FollowUp
	// GrantMax is the longest standing approval a reviewer may grant
	// (STANDING_APPROVAL_MAX); 0 offers none ("Approve similar…" hidden).
	GrantMax time.Duration
}

// FollowUp is the earlier request a follow-up points to.
type FollowUp struct {
	ID        string
	Title     string
	Permalink string         // its message; "" when never posted
	Directive *aah.Directive // how it ended, when a reviewer deferred or re-planned it
}

// Message is a rendered message: notification text plus blocks.
type Message struct {
	Text   string
	Blocks []slack.Block
}

// Render builds the message for a request in a given state. Open requests
// carry interactive controls; closed ones show the outcome and none.
func Render(req *aah.Request, st State) Message {
	r := renderer{req: req, st: st, rules: req.Rules(st.Defaults)}
	return Message{Text: r.fallbackText(), Blocks: r.blocks()}
}

type renderer struct {
	req       *aah.Request
	st        State
	rules     aah.Rules // the request's sign-off rules over st.Defaults
	truncated bool
}

func (r *renderer) open() bool { return r.st.Status.Open() || r.st.Status == "" }

func (r *renderer) blocks() []slack.Block {
	out := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, plain(r.req.Artifact.Title, MaxHeaderText), true, false)),
		slack.NewContextBlock("", mrkdwn(r.sourceLine())),
	}
	if f := r.st.FollowUpOf; f != nil {
		out = append(out, slack.NewContextBlock("", mrkdwn(followUpLine(*f))))
	}
	if banner := r.statusBanner(); banner != "" {
		out = append(out, section(banner))
	}
	if len(r.st.Reassignments) > 0 {
		out = append(out, slack.NewContextBlock("", mrkdwn(reassignmentText(r.st.Reassignments))))
	}
	if c := r.req.Data.Context; c != "" {
		text, cut := fit(c, MaxSectionText, truncatedMarker)
		r.truncated = r.truncated || cut
		out = append(out, section(text))
	}
	if len(r.st.Mentions) > 0 && r.open() {
		out = append(out, section(fmt.Sprintf(":busts_in_silhouette: *Reviewers:* %s", strings.Join(r.st.Mentions, ", "))))
	}
	if len(r.req.Data.Blocking) > 0 {
		out = append(out, section(r.blockingText()))
	}
	if line := r.timingLine(); line != "" {
		out = append(out, slack.NewContextBlock("", mrkdwn(line)))
	}
	out = append(out, slack.NewDividerBlock())
	for i, d := range r.req.Data.Decisions {
		out = append(out, r.decisionBlocks(i, d)...)
	}
	out = append(out, slack.NewDividerBlock())
	if r.open() {
		if footer := r.requestActions(); footer != nil {
			out = append(out, footer)
		}
	}
	out = append(out, slack.NewContextBlock("", mrkdwn(r.progressLine())))
	return out
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func section(s string) *slack.SectionBlock { return slack.NewSectionBlock(mrkdwn(s), nil, nil) }

func (r *renderer) sourceLine() string {
	src := r.req.Source
	who := src.AgentID
	if src.AgentName != "" {
		who = src.AgentName
	}
	parts := []string{fmt.Sprintf(":robot_face: Requested by *%s*", plain(escape(who), 200))}
	if src.TaskID != "" {
		parts = append(parts, fmt.Sprintf("task `%s`", plain(escape(src.TaskID), 200)))
	}
	if p := r.req.Handoff.Priority; p != "" {
		parts = append(parts, priorityLabel(p))
	}
	if created := r.createdAt(); !created.IsZero() {
		parts = append(parts, slackDate(created))
	}
	return strings.Join(parts, " · ")
}

func (r *renderer) createdAt() time.Time {
	if !r.req.Artifact.CreatedAt.IsZero() {
		return r.req.Artifact.CreatedAt
	}
	return r.st.ReceivedAt
}

func priorityLabel(p string) string {
	switch p {
	case "low":
		return ":white_circle: Low priority"
	case "normal", "medium":
		return ":large_yellow_circle: " + strings.ToUpper(p[:1]) + p[1:] + " priority"
	case "high":
		return ":large_orange_circle: *High priority*"
	case "urgent":
		return ":red_circle: *Urgent*"
	case "critical":
		return ":rotating_light: *Critical*"
	}
	// Any other text the agent chose, shortened: it shares a context line.
	label, _ := fit(p, 100, "…")
	return label + " priority"
}

func (r *renderer) statusBanner() string {
	at := ""
	if !r.st.ClosedAt.IsZero() {
		at = " " + slackDate(r.st.ClosedAt)
	}
	if r.st.Directive != nil && !r.open() {
		return directiveBanner(*r.st.Directive)
	}
	switch r.st.Status {
	case aah.StatusWithdrawn:
		return ":no_entry_sign: *Withdrawn* by the requesting agent" + at + ". Nothing here can be answered any more."
	case aah.StatusExpired:
		return ":hourglass: *Expired*" + at + ": the deadline passed before the request was resolved."
	case aah.StatusResolved:
		if r.st.ResolvedBy.ID != "" {
			return fmt.Sprintf(":white_check_mark: *Resolved* by <@%s>%s. The agent has been sent the decisions below.", r.st.ResolvedBy.ID, at)
		}
		if r.hasTimedOut() {
			return fmt.Sprintf(":hourglass: *Resolved at the deadline*%s by its on_deadline action (%s): "+
				"answers marked timed out were given by nobody.", at, r.req.OnDeadline)
		}
		return ":white_check_mark: *Resolved*" + at + "."
	case aah.StatusEscalated:
		if len(r.st.EscalatedTo) > 0 {
			return fmt.Sprintf(":arrow_heading_up: *Escalated* to %s: still waiting for a decision.", strings.Join(r.st.EscalatedTo, ", "))
		}
		return ":arrow_heading_up: *Escalated*: still waiting for a decision."
	}
	return ""
}

func (r *renderer) blockingText() string {
	var b strings.Builder
	b.WriteString(":construction: *Blocking:*")
	for i, item := range r.req.Data.Blocking {
		ref := item.TaskID
		if ref == "" {
			ref = item.ArtifactID
		}
		line := "\n• " + escape(item.Description)
		if ref != "" {
			line = fmt.Sprintf("\n• `%s` %s", escape(ref), escape(item.Description))
		}
		more := fmt.Sprintf("\n• …and %d more", len(r.req.Data.Blocking)-i)
		if b.Len()+len(line)+len(more) > MaxSectionText {
			b.WriteString(more)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func (r *renderer) timingLine() string {
	var parts []string
	if dl := r.req.EffectiveDeadline(); !dl.IsZero() {
		parts = append(parts, ":alarm_clock: Due "+slackDate(dl))
	}
	for _, step := range r.req.Data.Escalation {
		parts = append(parts, fmt.Sprintf(":arrow_heading_up: Escalates to %s after %s", TargetMention(step.To), humanDuration(step.After)))
	}
	return strings.Join(parts, " · ")
}

// requestActions are the request-wide controls: batch approve/reject when
// there are several approval decisions (rendering hint 5), Submit when the
// request has several decisions (a single decision resolves on its answer),
// and the menu of request-level verbs the request accepts.
func (r *renderer) requestActions() *slack.ActionBlock {
	var elems []slack.BlockElement
	approvals := 0
	// Batch buttons only where every approval decision accepts the verb
	// (extensions.decisions responses): the core refuses the others.
	allApprove, allReject := true, true
	for _, d := range r.req.Data.Decisions {
		if d.Type == aah.TypeApproval {
			approvals++
			allApprove = allApprove && d.Accepts(aah.VerbApprove)
			allReject = allReject && d.Accepts(aah.VerbReject)
		}
	}
	if approvals >= 2 && allApprove {
		all := slack.NewButtonBlockElement(ActionApproveAll, RequestScope, plainText(fmt.Sprintf("Approve all %d", approvals)))
		all.Confirm = approveAllConfirm(r.req, approvals)
		elems = append(elems, all)
	}
	if approvals >= 2 && allReject {
		none := slack.NewButtonBlockElement(ActionRejectAll, RequestScope, plainText(fmt.Sprintf("Reject all %d", approvals)))
		none.Confirm = confirm("Reject all?", fmt.Sprintf("This rejects all %d approval decisions. Other decisions are not changed.", approvals), "Reject all")
		if r.rules.RequireReason {
			// The reason modal asks for confirmation itself.
			none = slack.NewButtonBlockElement(ActionRejectAllReason, RequestScope, plainText(fmt.Sprintf("Reject all %d", approvals)))
		}
		elems = append(elems, none)
	}
	if len(r.req.Data.Decisions) > 1 {
		submit := slack.NewButtonBlockElement(ActionSubmit, RequestScope, plainText("Submit decisions"))
		submit.Style = slack.StylePrimary
		submit.Confirm = confirm("Submit?", "This sends every answer to the agent, including the defaults shown selected. Other unanswered optional decisions take their defaults.", "Submit")
		withComment := slack.NewButtonBlockElement(ActionSubmitComment, RequestScope, plainText("Submit with comment…"))
		elems = append(elems, submit, withComment)
	}
	if menu := verbsMenu(r.req); menu != nil {
		elems = append(elems, menu)
	}
	if len(elems) == 0 {
		return nil
	}
	return slack.NewActionBlock(BlockID(r.st.Version, r.req.Artifact.ID, RequestScope), elems...)
}

func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, plain(s, MaxButtonText), true, false)
}

func confirm(title, text, ok string) *slack.ConfirmationBlockObject {
	return slack.NewConfirmationBlockObject(
		slack.NewTextBlockObject(slack.PlainTextType, title, false, false),
		slack.NewTextBlockObject(slack.PlainTextType, text, false, false),
		slack.NewTextBlockObject(slack.PlainTextType, ok, false, false),
		slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false))
}

// progressLine counts the decisions people answered; values nobody gave (a
// default taken, an on_deadline action) are counted apart.
func (r *renderer) progressLine() string {
	total, required, answered, defaulted, timedOut := len(r.req.Data.Decisions), 0, 0, 0, 0
	for _, d := range r.req.Data.Decisions {
		if d.Required {
			required++
		}
		a, ok := r.st.Answers[d.ID]
		switch {
		case !ok || !a.Answered():
		case a.Defaulted:
			defaulted++
		case a.TimedOut:
			timedOut++
		default:
			answered++
		}
	}
	line := fmt.Sprintf(":bar_chart: %d of %d answered (%d required)", answered, total, required)
	if defaulted > 0 {
		line += fmt.Sprintf(" · %d took the default", defaulted)
	}
	if timedOut > 0 {
		line += fmt.Sprintf(" · %d timed out", timedOut)
	}
	if verbs := requestVerbs(r.req); r.open() && len(verbs) > 0 {
		// An overflow menu shows only "⋯": say what it holds.
		names := make([]string, len(verbs))
		for i, v := range verbs {
			names[i] = strings.ReplaceAll(string(v), "_", " ")
		}
		line += " · ⋯ to " + strings.Join(names, ", ")
	}
	return line + fmt.Sprintf(" · ID `%s`", r.req.Artifact.ID)
}

func (r *renderer) fallbackText() string {
	title := r.req.Artifact.Title
	who := r.req.Source.AgentID
	if r.st.Directive != nil && !r.open() {
		return plain(directiveFallback(title, *r.st.Directive), MaxFallbackText)
	}
	var s string
	switch r.st.Status {
	case aah.StatusWithdrawn:
		s = "Withdrawn: " + title
	case aah.StatusExpired:
		s = "Expired: " + title
	case aah.StatusResolved:
		s = "Resolved: " + title
	default:
		s = fmt.Sprintf("Decision needed: %s (from %s, %d decisions)", title, who, len(r.req.Data.Decisions))
	}
	return plain(escape(s), MaxFallbackText)
}

// hasTimedOut reports whether an on_deadline action gave any answer.
func (r *renderer) hasTimedOut() bool {
	for _, a := range r.st.Answers {
		if a.TimedOut {
			return true
		}
	}
	return false
}
