package approval_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/approval"
)

// On real Redis, every way a request can close races every other: a
// directive, a modify, a rejection with a picked reason, a plain approval,
// the deadline and the agent's withdrawal. Each request closes exactly
// once (one closing audit entry, one response, which validates), and what
// closed it is the one action that was not refused.
func TestVerbsRaceEveryClose(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t, false, nil)
	review := scale("ship").
		withReview("responses", []any{"approve", "reject", "modify", "defer", "change_plan", "escalate", "abort"}).
		withReview("editable", map[string]any{"replicas": map[string]any{"type": "integer", "minimum": 1, "maximum": 10}}).
		withReview("reject_reasons", []any{"Too expensive"})
	closers := []struct {
		name string
		run  func(id string) (bool, error) // whether it closed the request
	}{
		{"defer", func(id string) (bool, error) {
			out, err := f.core.Direct(f.ctx, id, galice, aah.VerbDefer, "smaller batch")
			return out.Resolved, err
		}},
		{"abort", func(id string) (bool, error) {
			out, err := f.core.Direct(f.ctx, id, gbob, aah.VerbAbort, "stop")
			return out.Resolved, err
		}},
		{"modify", func(id string) (bool, error) {
			out, err := f.core.Modify(f.ctx, id, "ship", gbob, map[string]any{"replicas": 3}, "")
			return out.Resolved, err
		}},
		{"reject", func(id string) (bool, error) {
			out, err := f.core.RejectWith(f.ctx, id, nil, galice, approval.Rejection{Picked: "Too expensive"})
			return out.Resolved, err
		}},
		{"approve", func(id string) (bool, error) {
			out, err := f.core.Answer(f.ctx, id, gbob, map[string]any{"ship": true})
			return out.Resolved, err
		}},
		{"deadline", func(id string) (bool, error) {
			out, err := f.core.Deadline(f.ctx, id)
			return out.Changed, err
		}},
		{"withdraw", func(id string) (bool, error) {
			rec, err := f.core.Withdraw(f.ctx, id)
			return err == nil && rec.Status == aah.StatusWithdrawn, nil
		}},
	}
	const rounds = 12
	for round := range rounds {
		id := fmt.Sprintf("race-%d", round)
		f.submit(t, f.core, id, "deployer", nil, review)
		var wg sync.WaitGroup
		won := make([]bool, len(closers))
		for i, c := range closers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := c.run(id)
				var r *approval.Refusal
				if err != nil && !(errors.As(err, &r) && r.Rule == approval.RuleClosed) {
					t.Errorf("%s %s: %v", id, c.name, err)
				}
				won[i] = ok && err == nil
			}()
		}
		wg.Wait()
		var winners []string
		for i, w := range won {
			if w {
				winners = append(winners, closers[i].name)
			}
		}
		rec, err := f.st.Get(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		closes := 0
		for _, e := range events(f.audit(t, id)) {
			if slices.Contains([]string{"resolved", "expired", "withdrawn"}, e) {
				closes++
			}
		}
		if len(winners) != 1 || closes != 1 || rec.Status.Open() {
			t.Errorf("%s: winners %v, closing audit entries %d, status %s; want exactly one close", id, winners, closes, rec.Status)
			continue
		}
		if rec.Status == aah.StatusWithdrawn {
			continue // a withdrawn request has no response
		}
		if err := schema.ValidateResponse(rec.Response); err != nil {
			t.Errorf("%s closed by %s: %v", id, winners[0], err)
		}
		if directive := winners[0] == "defer" || winners[0] == "abort"; directive != (rec.Directive != nil) {
			t.Errorf("%s closed by %s, directive %+v", id, winners[0], rec.Directive)
		}
	}
}
