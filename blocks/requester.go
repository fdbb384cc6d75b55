package blocks

import (
	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// Outcome is what the requester of a closed request is told (RequesterNotice).
type Outcome struct {
	Title  string
	Status aah.Status // resolved, expired or withdrawn
	// ResolvedBy is who resolved it; zero for the system (the deadline's
	// timeout action).
	ResolvedBy aah.Person
	// OnDeadline is the request's timeout action, told when the deadline
	// closed it.
	OnDeadline aah.DeadlineAction
	// Summary is the response's data.summary: the decisions' final values.
	Summary string
	// Permalink links to the request's message ("" when it has none).
	Permalink string
	// Directive is the defer, change_plan or abort that closed it.
	Directive *aah.Directive
}

// maxNoticeSummary bounds the summary shown (the response's summary is
// bounded already; this keeps the section well under Slack's 3,000).
const maxNoticeSummary = 2500

// RequesterNotice renders the DM telling a requester how their request
// ended: who resolved it, that it expired and what its timeout action did,
// or that the agent withdrew it; the decisions' final values; and a link to
// the request's message. It has no controls.
func RequesterNotice(n Outcome) Message {
	title := escape(plain(n.Title, 200))
	linked := "*" + title + "*"
	if n.Permalink != "" {
		linked = "*<" + n.Permalink + "|" + title + ">*"
	}
	var emoji, head, text string
	switch {
	case n.Directive != nil:
		emoji = directiveEmoji(n.Directive.Verb)
		reason, _ := fit(oneLine(n.Directive.Text), directiveBudget, "…")
		head = DirectiveOutcome(*n.Directive) + ": " + reason
	case n.Status == aah.StatusResolved:
		emoji = ":white_check_mark:"
		if n.ResolvedBy.ID == "" && n.ResolvedBy.Agent == "" {
			head = "was resolved at its deadline by its timeout action (" + deadlineWords(n.OnDeadline) + ")."
		} else {
			head = "was resolved by " + resolver(n.ResolvedBy) + "."
		}
	case n.Status == aah.StatusExpired:
		emoji = ":hourglass:"
		head = "expired: nobody decided it before its deadline, and its timeout action (" +
			deadlineWords(n.OnDeadline) + ") left it undecided."
	case n.Status == aah.StatusWithdrawn:
		emoji = ":leftwards_arrow_with_hook:"
		head = "was withdrawn by the agent before anyone decided it."
	default:
		emoji = ":information_source:"
		head = "is closed (" + escape(string(n.Status)) + ")."
	}
	text = "Your request " + title + " " + head
	out := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType,
		emoji+" Your request "+linked+" "+head, false, false), nil, nil)}
	if n.Summary != "" && n.Status != aah.StatusWithdrawn {
		summary, _ := fit(n.Summary, maxNoticeSummary, "…")
		out = append(out, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType,
			"*Outcome:* "+summary, false, false), nil, nil))
	}
	if n.Permalink != "" {
		out = append(out, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType,
			"<"+n.Permalink+"|Open the request in Slack>", false, false)))
	}
	return Message{Text: text, Blocks: out}
}

// resolver names who resolved a request: the Slack user, and the agent
// that acted with their authority.
func resolver(p aah.Person) string {
	who := "<@" + p.ID + ">"
	if p.ID == "" {
		who = "an agent"
	}
	if p.Agent != "" {
		who += " (through agent `" + escape(plain(p.Agent, 100)) + "`)"
	} else if p.Via == aah.ViaAPI {
		who += " (through the decision API)"
	}
	return who
}

// deadlineWords says what a timeout action does.
func deadlineWords(a aah.DeadlineAction) string {
	switch a {
	case aah.DeadlineApplyDefaults:
		return "apply the defaults"
	case aah.DeadlineApprove:
		return "approve"
	case aah.DeadlineReject:
		return "reject"
	case aah.DeadlineExpire, "":
		return "expire"
	}
	return escape(string(a))
}
