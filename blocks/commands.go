package blocks

import (
	"fmt"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// ActionListPage is the "Next page" button of a slash command listing; its
// value is the listing and the cursor of the next page ("all <cursor>").
const ActionListPage = "list_page"

// ListControlsBlockID is the block id of a listing's own controls. It is not
// one of a request's block ids (ParseBlockID rejects it).
const ListControlsBlockID = "ab_list"

// MaxListItems is the most requests one listing message shows: each takes at
// most three blocks, which keeps a page well under MaxMessageBlocks.
const MaxListItems = 10

// ListItem is one open request in a listing.
type ListItem struct {
	ID         string
	Version    int64 // record version; part of the quick buttons' block id
	Agent      string
	Request    *aah.Request
	Status     aah.Status
	ReceivedAt time.Time
	Answers    map[string]aah.Answer
	Permalink  string
	// Directive is the defer, change_plan or abort that closed the request.
	Directive *aah.Directive
	// Defaults are the workspace's sign-off rules (a required reason turns
	// the quick Reject into the reason modal).
	Defaults aah.Defaults
	// Escalated says the request was escalated; EscalatedTo names whom, in
	// Slack syntax (see State.EscalatedTo). An escalated request's status
	// stays escalated however many answers follow: the listing shows how
	// many there are next to it.
	Escalated   bool
	EscalatedTo []string
}

// Listing is a slash command reply listing requests.
type Listing struct {
	Heading string
	Items   []ListItem // at most MaxListItems are shown
	Now     time.Time
	// Next is the value of the "Next page" button; empty on the last page.
	Next string
	// Empty is what the reply says when there are no items.
	Empty string
}

// List renders a listing: per request its title, requesting agent, age,
// deadline, what is still unanswered and a permalink, plus quick Approve /
// Reject buttons for a request whose only decision is an approval. The
// buttons carry the request message's block and action ids, so the usual
// interaction handling records them.
func List(l Listing) Message {
	out := []slack.Block{section("*" + escape(l.Heading) + "*")}
	if len(l.Items) == 0 {
		out = append(out, section(escape(l.Empty)))
		return Message{Text: l.Heading + ": " + l.Empty, Blocks: out}
	}
	items := l.Items[:min(len(l.Items), MaxListItems)]
	for _, it := range items {
		out = append(out, slack.NewDividerBlock(), section(listText(it, l.Now)))
		if quick := quickButtons(it); quick != nil {
			out = append(out, quick)
		}
	}
	if l.Next != "" {
		next := slack.NewButtonBlockElement(ActionListPage, l.Next, plainText("Next page"))
		out = append(out, slack.NewDividerBlock(), slack.NewActionBlock(ListControlsBlockID, next))
	}
	return Message{Text: fmt.Sprintf("%s: %s", l.Heading, plural(len(items), "request")), Blocks: out}
}

func listText(it ListItem, now time.Time) string {
	req := it.Request
	title, _ := fit(req.Artifact.Title, 200, "…")
	lines := []string{"*" + title + "*"}
	who := it.Agent
	if req.Source.AgentName != "" {
		who = req.Source.AgentName
	} else if req.Source.AgentID != "" {
		who = req.Source.AgentID
	}
	meta := []string{fmt.Sprintf(":robot_face: %s", plain(escape(who), 200)),
		"received " + age(now.Sub(it.ReceivedAt)) + " ago"}
	if dl := req.EffectiveDeadline(); !dl.IsZero() {
		due := "due " + slackDate(dl)
		if !now.Before(dl) {
			due += " *(overdue)*"
		}
		meta = append(meta, due)
	}
	if it.Escalated || it.Status == aah.StatusEscalated {
		meta = append(meta, escalatedText(it))
	}
	lines = append(lines, strings.Join(meta, " · "))
	var open []string
	for _, d := range req.Data.Decisions {
		if !it.Answers[d.ID].Answered() {
			p, _ := fit(d.Prompt, 150, "…")
			open = append(open, p)
		}
	}
	if len(open) > 0 {
		if len(open) > 5 {
			open = append(open[:5], fmt.Sprintf("and %d more", len(open)-5))
		}
		lines = append(lines, ":hourglass_flowing_sand: Unanswered: "+strings.Join(open, "; "))
	} else {
		lines = append(lines, ":white_check_mark: Everything is answered; waiting for submit")
	}
	link := "`" + escape(it.ID) + "`"
	if it.Permalink != "" {
		link = "<" + it.Permalink + "|Open> · " + link
	}
	return strings.Join(append(lines, link), "\n")
}

// escalatedText says a request was escalated, to whom (the first three)
// and how many of its decisions are answered: its status does not tell.
func escalatedText(it ListItem) string {
	s := ":rotating_light: escalated"
	if to := it.EscalatedTo; len(to) > 0 {
		if len(to) > 3 {
			to = append(to[:3:3], fmt.Sprintf("%d more", len(to)-3))
		}
		s += " to " + strings.Join(to, ", ")
	}
	p := aah.AnswerProgressOf(it.Request, it.Answers)
	return s + fmt.Sprintf(" · %d of %d answered", p.Answered, p.Total)
}

// quickButtons are Approve / Reject for a request with a single approval decision.
func quickButtons(it ListItem) slack.Block {
	ds := it.Request.Data.Decisions
	if len(ds) != 1 || ds[0].Type != aah.TypeApproval || !it.Status.Open() {
		return nil
	}
	d := ds[0]
	var buttons []slack.BlockElement
	if d.Accepts(aah.VerbApprove) {
		buttons = append(buttons, approveButton(d))
	}
	if d.Accepts(aah.VerbReject) {
		buttons = append(buttons, rejectButton(d, it.Request.Rules(it.Defaults)))
	}
	if len(buttons) == 0 {
		return nil
	}
	return slack.NewActionBlock(BlockID(it.Version, it.ID, d.ID), buttons...)
}

// age prints how long ago something happened, coarsely: "5m", "3h", "2d".
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "<1m"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// Notice is a short ephemeral reply (help, errors).
func Notice(text string) Message {
	return Message{Text: text, Blocks: []slack.Block{section(text)}}
}
