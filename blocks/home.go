package blocks

import (
	"fmt"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// HomeCallbackID is the callback id of approvalbot's App Home tab.
const HomeCallbackID = "ab_home"

// MaxHomeWaiting and MaxHomeAnswered bound the Home tab's two lists: three
// blocks per waiting request and two per answered one keep the view well
// under MaxHomeBlocks.
const (
	MaxHomeWaiting  = 20
	MaxHomeAnswered = 10
	MaxHomeBlocks   = 100
)

// Home is a user's App Home tab.
type Home struct {
	// Waiting are the open requests the user may decide, oldest first; More
	// says there are others beyond them.
	Waiting []ListItem
	More    bool
	// Answered are requests the user answered lately, newest first.
	Answered []ListItem
	// Command is the slash command that lists everything ("/approvals").
	Command string
	Now     time.Time
}

// HomeView renders the Home tab: a header, the requests waiting for the
// user with the same quick Approve / Reject buttons as a listing (they carry
// the request message's block ids, so the usual interaction handling records
// them), and the requests the user answered lately.
func HomeView(h Home) slack.HomeTabViewRequest {
	out := []slack.Block{
		slack.NewHeaderBlock(plainText("Decision requests")),
		slack.NewContextBlock("", mrkdwn("Updated "+slackDate(h.Now))),
		section("*:inbox_tray: Waiting for you*"),
		slack.NewContextBlock("", mrkdwn(homeWaitingScope(h.Command))),
	}
	waiting := h.Waiting[:min(len(h.Waiting), MaxHomeWaiting)]
	if len(waiting) == 0 {
		out = append(out, section("Nothing is waiting for you. :tada:"))
	}
	for _, it := range waiting {
		out = append(out, slack.NewDividerBlock(), section(listText(it, h.Now)))
		if quick := quickButtons(it); quick != nil {
			out = append(out, quick)
		}
	}
	if h.More || len(h.Waiting) > MaxHomeWaiting {
		more := "More requests are waiting for you"
		if h.Command != "" {
			more += "; run `" + escape(h.Command) + " mine` to page through them all"
		}
		out = append(out, slack.NewContextBlock("", mrkdwn(more+".")))
	}
	out = append(out, slack.NewDividerBlock(), section("*:white_check_mark: Recently answered by you*"))
	answered := h.Answered[:min(len(h.Answered), MaxHomeAnswered)]
	if len(answered) == 0 {
		out = append(out, section("You have not answered a request lately."))
	}
	for _, it := range answered {
		out = append(out, section(answeredText(it)))
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: out}, CallbackID: HomeCallbackID}
}

// homeWaitingScope says which requests "Waiting for you" lists.
func homeWaitingScope(command string) string {
	scope := "Requests that name you (or a group or role of yours), were escalated to you, or name nobody " +
		"when you are one of the workspace's default reviewers."
	if command != "" {
		scope += " `" + escape(command) + " all` lists every open request."
	}
	return scope
}

var statusEmoji = map[aah.Status]string{
	aah.StatusPending:   ":hourglass_flowing_sand:",
	aah.StatusPartial:   ":hourglass_flowing_sand:",
	aah.StatusEscalated: ":rotating_light:",
	aah.StatusResolved:  ":white_check_mark:",
	aah.StatusExpired:   ":alarm_clock:",
	aah.StatusWithdrawn: ":leftwards_arrow_with_hook:",
}

func answeredText(it ListItem) string {
	title, _ := fit(it.Request.Artifact.Title, 200, "…")
	link := "`" + escape(it.ID) + "`"
	if it.Permalink != "" {
		link = "<" + it.Permalink + "|Open> · " + link
	}
	outcome := statusEmoji[it.Status] + " " + escape(string(it.Status))
	if it.Directive != nil && !it.Status.Open() {
		outcome = directiveEmoji(it.Directive.Verb) + " " + directivePhrase(*it.Directive)
	}
	if it.Status == aah.StatusEscalated {
		p := aah.AnswerProgressOf(it.Request, it.Answers)
		outcome += fmt.Sprintf(" · %d of %d answered", p.Answered, p.Total)
	} else if it.Escalated {
		outcome += " (escalated)"
	}
	return strings.Join([]string{"*" + title + "*", fmt.Sprintf("%s · %s", outcome, link)}, "\n")
}
