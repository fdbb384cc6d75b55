package handlers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// failedGrant approves, then fails to create the grant.
type failedGrant struct{}

func (failedGrant) Grant(context.Context, string, string, aah.Person, time.Duration, string) (approval.Outcome, store.Grant, error) {
	return approval.Outcome{Changed: true, Resolved: true, Record: store.Record{ID: "req-1", Status: aah.StatusResolved}},
		store.Grant{}, errors.New("approved req-1, but the standing approval could not be created: boom")
}
func (failedGrant) RevokeGrant(context.Context, string, aah.Person) (store.Grant, error) {
	return store.Grant{}, nil
}
func (failedGrant) Grants(context.Context, string) ([]store.Grant, error) { return nil, nil }
func (failedGrant) GrantMax() time.Duration                               { return time.Hour }

// ephemerals records the ephemeral messages sent.
type ephemerals struct {
	noSlack
	mu    sync.Mutex
	texts []string
}

func (e *ephemerals) PostEphemeralContext(_ context.Context, _, _ string, opts ...slack.MsgOption) (string, error) {
	_, vals, _ := slack.UnsafeApplyMsgOptions("", "", "", opts...)
	e.mu.Lock()
	e.texts = append(e.texts, vals.Get("text"))
	e.mu.Unlock()
	return "", nil
}

// "Approve similar…" whose grant fails once the approval is recorded closes
// the modal and says the decision was approved: submitting again would find
// the request resolved.
func TestGrantFailingAfterTheApprovalInSlack(t *testing.T) {
	t.Parallel()
	async := NewAsync(1, 8)
	sl := &ephemerals{}
	s, err := New(Options{SigningSecret: "secret", Decisions: noDecisions{}, Requests: noRequests{}, Slack: sl,
		Grants: failedGrant{}, Async: async})
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]map[string]slack.BlockAction{
		blocks.BlockDuration: {blocks.ActionDuration: {SelectedOption: slack.OptionBlockObject{Value: "1h0m0s"}}},
	}
	errs := s.grantSubmission(context.Background(), blocks.ModalRef{RequestID: "req-1", DecisionID: "scale", Channel: "C1"},
		aah.Person{ID: "U0ALICE"}, values)
	async.Close() // the ephemeral is sent
	if errs != nil {
		t.Errorf("the modal stays open with %+v; want it closed", errs)
	}
	if len(sl.texts) != 1 || !strings.Contains(sl.texts[0], "Approved, but the standing approval could not be created") {
		t.Errorf("told %q", sl.texts)
	}
}
