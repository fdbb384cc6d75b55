package approval

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Withdrawal closes an open request for its agent: a message never posted
// is cancelled, timers are dropped; a closed request is ErrNotOpen.
func TestWithdraw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, posted := range []bool{false, true} {
		rec := pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), ""))
		rec.Timers = []string{"expire:req-1", "remind:req-1:1"}
		if posted {
			rec.Slack.TS = "1.2"
		}
		c, st := newCore(rec, Policy{})
		got, err := c.Withdraw(ctx, "req-1")
		if err != nil || got.Status != aah.StatusWithdrawn || !got.WithdrawnAt.Equal(t0) || got.Version != 2 || got.Timers != nil {
			t.Fatalf("posted %v: %+v %v", posted, got, err)
		}
		if cancelsPost := slices.Contains(st.cancelled, store.JobID(store.JobPost, "req-1")); cancelsPost == posted {
			t.Errorf("posted %v: cancelled %v", posted, st.cancelled)
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
