package blocks_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
)

// The requester's DM for each way a request closes: golden files, and
// every one passes the emulator's Block Kit validator.
func TestRequesterNoticeGolden(t *testing.T) {
	t.Parallel()
	link := "https://example.slack.com/archives/C0APPROVALS/p1700000000000100"
	summary := "Approved: Ship v2.3 to production? Rejected: Migrate the database tonight? (too risky)."
	cases := map[string]blocks.Outcome{
		"notice.resolved": {Title: "Release v2.3", Status: aah.StatusResolved, ResolvedBy: aah.Person{ID: "U0ALICE"},
			Summary: summary, Permalink: link},
		"notice.resolved_by_agent": {Title: "Release v2.3", Status: aah.StatusResolved,
			ResolvedBy: aah.Person{ID: "U0ALICE", Agent: "deploy-gate", Via: aah.ViaAPI}, Summary: summary, Permalink: link},
		"notice.resolved_at_deadline": {Title: "Release v2.3", Status: aah.StatusResolved, OnDeadline: aah.DeadlineReject,
			Summary: "Rejected: Ship v2.3 to production? (timed out).", Permalink: link},
		"notice.expired": {Title: "Release v2.3", Status: aah.StatusExpired, OnDeadline: aah.DeadlineExpire,
			Summary: "Expired before it was resolved. Ship v2.3 to production?: no answer.", Permalink: link},
		"notice.withdrawn":         {Title: "Release v2.3", Status: aah.StatusWithdrawn, Permalink: link},
		"notice.withdrawn_no_link": {Title: "Release <!channel> & co", Status: aah.StatusWithdrawn},
		"notice.deferred": {Title: "Release v2.3", Status: aah.StatusResolved, ResolvedBy: aah.Person{ID: "U0BOB"},
			Summary: "Deferred by Bob: ship the hotfix first", Permalink: link,
			Directive: &aah.Directive{Verb: aah.VerbDefer, Text: "ship the hotfix first", By: aah.Person{ID: "U0BOB"}}},
	}
	for name, n := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := blocks.RequesterNotice(n)
			golden(t, name, map[string]any{"text": msg.Text, "blocks": msg.Blocks})
			checkSlackLimits(t, msg)
			raw, _ := json.Marshal(msg)
			if strings.Contains(string(raw), `"type":"actions"`) {
				t.Errorf("a notice has controls: %s", raw)
			}
			if strings.Contains(string(raw), "<!channel>") {
				t.Errorf("agent text not escaped: %s", raw)
			}
		})
	}
}

// A summary as long as the response allows still fits one section.
func TestRequesterNoticeLongSummaryFits(t *testing.T) {
	t.Parallel()
	msg := blocks.RequesterNotice(blocks.Outcome{Title: strings.Repeat("T", 400), Status: aah.StatusResolved,
		ResolvedBy: aah.Person{ID: "U0BOB"}, Summary: strings.Repeat("a&b ", 1500), Permalink: "https://x.slack.com/p1"})
	checkSlackLimits(t, msg)
}
