package blocks_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// gatedFixture needs legal and marketing to sign off, and two approvers,
// and a reason for every rejection.
func gatedFixture(t *testing.T) *aah.Request {
	raw := strings.Replace(string(wrap(decisionFixtures["approval"])), `"handoff":{"priority":"normal"}`,
		`"handoff":{"priority":"normal"},"extensions":{"slack":{"quorum":2,"require_reason":true,
		"required_roles":[{"role":"legal","members":["U0ALICE"]},{"role":"marketing","members":["U0BOB","S0MKT"]}]}}`, 1)
	return parse(t, []byte(raw))
}

func TestSignoffGolden(t *testing.T) {
	t.Parallel()
	req := gatedFixture(t)
	at := seedNow.Add(time.Hour)
	alice := aah.Signoff{By: aah.Person{ID: "U0ALICE", Name: "Alice"}, Approved: true, Roles: []string{"legal"}, At: at}
	bob := aah.Signoff{By: aah.Person{ID: "U0BOB", Name: "Bob"}, Approved: true, Roles: []string{"marketing"}, At: at.Add(time.Minute)}
	rules := req.Rules(aah.Defaults{})
	one := rules.Settle(aah.Answer{DecisionID: "ship", Signoffs: []aah.Signoff{alice}})
	both := rules.Settle(aah.Answer{DecisionID: "ship", Signoffs: []aah.Signoff{alice, bob}})
	rejected := bob
	rejected.Approved, rejected.Reason = false, "Not before the audit"
	veto := rules.Settle(aah.Answer{DecisionID: "ship", Signoffs: []aah.Signoff{alice, rejected},
		Comments: []aah.Comment{{By: bob.By, At: rejected.At, Text: "Not before the audit"}}})
	cases := map[string]blocks.State{
		"signoff.pending":  {Status: aah.StatusPending, Version: 1, ReceivedAt: seedNow},
		"signoff.partial":  {Status: aah.StatusPartial, Version: 2, ReceivedAt: seedNow, Answers: map[string]aah.Answer{"ship": one}},
		"signoff.approved": {Status: aah.StatusResolved, Version: 3, ReceivedAt: seedNow, Answers: map[string]aah.Answer{"ship": both}, ClosedAt: at.Add(time.Minute)},
		"signoff.rejected": {Status: aah.StatusResolved, Version: 3, ReceivedAt: seedNow, Answers: map[string]aah.Answer{"ship": veto}, ClosedAt: at.Add(time.Minute)},
	}
	for name, st := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := blocks.Render(req, st)
			golden(t, name, map[string]any{"text": msg.Text, "blocks": msg.Blocks})
			checkSlackLimits(t, msg)
		})
	}
	partial, _ := json.Marshal(blocks.Render(req, cases["signoff.partial"]).Blocks)
	for _, want := range []string{"*legal* :white_check_mark: \u003c@U0ALICE\u003e", "*marketing* :hourglass_flowing_sand:", "1 of 2 approvals"} {
		if !strings.Contains(string(partial), jsonText(want)) {
			t.Errorf("partial message lacks %q:\n%s", want, partial)
		}
	}
	if !strings.Contains(string(partial), `"action_id":"reject_reason"`) {
		t.Errorf("require_reason: the Reject button does not open the reason modal:\n%s", partial)
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// Without gated rules an approval shows no progress line.
func TestNoSignoffLineWithoutQuorum(t *testing.T) {
	t.Parallel()
	req := parse(t, wrap(decisionFixtures["approval"]))
	raw, _ := json.Marshal(blocks.Render(req, pending()).Blocks)
	if strings.Contains(string(raw), "approvals") || strings.Contains(string(raw), "reject_reason") {
		t.Errorf("ungated approval shows sign-off controls:\n%s", raw)
	}
	// A workspace default quorum gates it.
	raw, _ = json.Marshal(blocks.Render(req, blocks.State{Status: aah.StatusPending, Version: 1, Defaults: aah.Defaults{Quorum: 3, RequireReason: true}}).Blocks)
	if !strings.Contains(string(raw), "0 of 3 approvals") || !strings.Contains(string(raw), "reject_reason") {
		t.Errorf("workspace defaults not rendered:\n%s", raw)
	}
}

func TestRejectModalGolden(t *testing.T) {
	t.Parallel()
	req := gatedFixture(t)
	for name, d := range map[string]string{"modal_reject": "ship", "modal_reject_all": blocks.RequestScope} {
		view := blocks.RejectModal(req, blocks.ModalRef{RequestID: "req-fixture", DecisionID: d, Channel: "C0APPROVALS"})
		golden(t, name, view)
		compact, _ := json.Marshal(view)
		for _, e := range slackemu.ValidateView(compact) {
			t.Errorf("Slack would reject %s: %v", name, e)
		}
	}
}
