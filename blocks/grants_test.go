package blocks_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

var grantFixture = aah.GrantRef{ID: "grant_1", ActionKey: "scale_service", Agent: "deployer",
	By: aah.Person{ID: "U0ALICE", Name: "Alice"}, GrantedAt: seedNow, ExpiresAt: seedNow.Add(time.Hour), FromRequest: "req-fixture"}

// The modal offers the durations up to the maximum (the maximum itself
// when it is none of the usual ones), preset to an hour or less.
func TestGrantModal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max     time.Duration
		offered []time.Duration
	}{
		{time.Hour, []time.Duration{15 * time.Minute, time.Hour}},
		{24 * time.Hour, []time.Duration{15 * time.Minute, time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour}},
		{10 * time.Minute, []time.Duration{10 * time.Minute}},
		{90 * time.Minute, []time.Duration{15 * time.Minute, time.Hour, 90 * time.Minute}},
		{0, nil},
	} {
		if got := blocks.GrantDurations(tc.max); !slices.Equal(got, tc.offered) {
			t.Errorf("GrantDurations(%v) = %v; want %v", tc.max, got, tc.offered)
		}
	}
	req := parse(t, wrap(decisionFixtures["approval"]))
	view := blocks.GrantModal(req, req.Data.Decisions[0], "deployer", "scale_service", 24*time.Hour,
		blocks.ModalRef{RequestID: "req-fixture", DecisionID: "ship", Channel: "C0APPROVALS"})
	golden(t, "modal_grant", view)
	compact, _ := json.Marshal(view)
	for _, e := range slackemu.ValidateView(compact) {
		t.Errorf("Slack would reject the grant modal: %v", e)
	}
	if !strings.Contains(string(compact), `"initial_option":{"text":{"type":"plain_text","text":"1 hour"`) {
		t.Errorf("the modal is not preset to an hour: %s", compact)
	}
}

// The notice posted instead of a request a grant resolved: title, agent,
// action key, granter, expiry, and a Revoke button carrying the grant id.
func TestGrantNotice(t *testing.T) {
	t.Parallel()
	msg := blocks.GrantNotice("Scale api to 6 replicas", "deployer", []aah.GrantRef{grantFixture})
	golden(t, "notice.grant", msg)
	checkSlackLimits(t, msg)
	raw, _ := json.Marshal(msg)
	raw = []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(raw)))
	for _, want := range []string{"Scale api to 6 replicas", "deployer", "scale_service", "<@U0ALICE>",
		fmt.Sprintf("<!date^%d^", grantFixture.ExpiresAt.Unix()), `"action_id":"revoke_grant"`, `"value":"grant_1"`, `"block_id":"ab_grants"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("notice lacks %q: %s", want, raw)
		}
	}
	if _, _, _, ok := blocks.ParseBlockID(blocks.GrantsBlockID); ok {
		t.Error("GrantsBlockID parses as a request's block id")
	}
}

func TestGrantList(t *testing.T) {
	t.Parallel()
	other := grantFixture
	other.ID, other.ActionKey, other.Agent, other.By = "grant_2", "send_report", "reporter", aah.Person{ID: "U0BOB"}
	msg := blocks.GrantList([]aah.GrantRef{grantFixture, other}, map[string]string{"grant_1": "deploy day <3"})
	golden(t, "list.grants", msg)
	checkSlackLimits(t, msg)
	empty := blocks.GrantList(nil, nil)
	golden(t, "list.grants_empty", empty)
	many := make([]aah.GrantRef, blocks.MaxGrantsListed+5)
	for i := range many {
		many[i] = grantFixture
		many[i].ID = fmt.Sprintf("grant_%d", i)
	}
	big := blocks.GrantList(many, nil)
	checkSlackLimits(t, big)
	if raw, _ := json.Marshal(big); !strings.Contains(string(raw), "and 5 more") {
		t.Errorf("a long list does not say how many it left out")
	}
}
