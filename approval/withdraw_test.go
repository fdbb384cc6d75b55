package approval

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Withdrawal closes an open request for its agent: a post no attempt began
// is cancelled (one that began may have reached Slack: its retry adopts the
// message), timers are dropped; a closed request is ErrNotOpen.
func TestWithdraw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		posted          bool
		attempts        int
		wantCancelsPost bool
	}{
		{"never posted", false, 0, true},
		{"an attempt began, not recorded", false, 1, false},
		{"posted", true, 1, false},
	} {
		rec := pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), ""))
		rec.Timers = []string{"expire:req-1", "remind:req-1:1"}
		rec.Slack.Attempts = tc.attempts
		if tc.posted {
			rec.Slack.TS = "1.2"
		}
		c, st := newCore(rec, Policy{})
		got, err := c.Withdraw(ctx, "req-1")
		if err != nil || got.Status != aah.StatusWithdrawn || !got.WithdrawnAt.Equal(t0) || got.Version != 2 || got.Timers != nil {
			t.Fatalf("%s: %+v %v", tc.name, got, err)
		}
		if cancelsPost := slices.Contains(st.cancelled, store.JobID(store.JobPost, "req-1")); cancelsPost != tc.wantCancelsPost {
			t.Errorf("%s: cancelled %v", tc.name, st.cancelled)
		}
		if e := st.events("withdrawn"); len(e) != 1 || e[0].Actor != "agent:pm" {
			t.Errorf("audit %+v", e)
		}
		again, err := c.Withdraw(ctx, "req-1")
		if !errors.Is(err, store.ErrNotOpen) || again.Status != aah.StatusWithdrawn || again.Version != 2 {
			t.Errorf("second withdrawal: %+v %v", again, err)
		}
	}
	c, _ := newCore(pending(requestDoc(t, []any{shipDecision}, nil, "")), Policy{})
	if _, err := c.Withdraw(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown request: %v", err)
	}
}
