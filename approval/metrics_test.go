package approval

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

// testClock is a clock a test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// sample reads the series of a metric in reg that labels select (nil: the
// only one), as a scrape does: a counter's value, a histogram's sample count
// and sum. (Through Gather rather than prometheus/testutil, which would add
// a module.)
func sample(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (value float64, count uint64, sum float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue(), m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		}
	}
	return 0, 0, 0
}

// retryingStore decides every update once on the record as read and throws
// that run away, as a store does whose transaction lost a race, before the
// run that commits.
type retryingStore struct{ *fakeStore }

func (s retryingStore) Update(ctx context.Context, id string, decide func(store.Record) (*store.Change, error)) (store.Record, error) {
	if rec, err := s.Get(ctx, id); err == nil {
		_, _ = decide(rec)
	}
	return s.fakeStore.Update(ctx, id, decide)
}

// Each transition is measured once, by the update that committed it:
// the first reviewer answer (not a comment, not a default), and each close
// by outcome, with the time since receipt. Repeats, refused clicks, a
// deadline or a withdrawal after the close, and decide runs that did not
// commit measure nothing.
func TestDecisionMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	clk := &testClock{}
	received := t0.Add(-time.Hour) // pending's ReceivedAt
	core := func(rec store.Record) (*Core, *fakeStore) {
		st := newFakeStore(rec)
		return New(retryingStore{st}, Options{Now: clk.Now, Directory: fakeDirectory{}, Policy: Policy{}, Metrics: m}), st
	}
	must := func(_ Outcome, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Approved: a comment first (no answer yet), the approval 90 minutes
	// after receipt resolves it; a double click is refused as closed.
	clk.Set(t0)
	approved, _ := core(pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), "")))
	must(approved.Comment(ctx, "req-1", "ship", alice, "looking"))
	clk.Set(received.Add(90 * time.Minute))
	must(approved.Answer(ctx, "req-1", alice, map[string]any{"ship": true}))
	if _, err := approved.Answer(ctx, "req-1", alice, map[string]any{"ship": true}); err == nil {
		t.Error("a click on a resolved request was accepted")
	}
	must(approved.Deadline(ctx, "req-1"))
	if _, err := approved.Withdraw(ctx, "req-1"); !errors.Is(err, store.ErrNotOpen) {
		t.Errorf("withdrawing a resolved request: %v", err)
	}

	// Rejected with a reason, 2 hours after receipt.
	clk.Set(received.Add(2 * time.Hour))
	rejected, _ := core(pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), "")))
	must(rejected.Reject(ctx, "req-1", []string{"ship"}, alice, "not yet"))

	// Partial: two decisions, the first answer at 10 minutes, the second
	// at 20 (not a first answer), submitted at 30.
	partial, _ := core(pending(requestDoc(t, []any{shipDecision, budgetDecision}, reviewers(nil, alice, bob), "")))
	clk.Set(received.Add(10 * time.Minute))
	must(partial.Answer(ctx, "req-1", bob, map[string]any{"ship": true}))
	clk.Set(received.Add(20 * time.Minute))
	must(partial.Answer(ctx, "req-1", alice, map[string]any{"budget": false}))
	clk.Set(received.Add(30 * time.Minute))
	must(partial.Submit(ctx, "req-1", alice))

	// Expired at its deadline, 3 hours after receipt, never answered; the
	// timer firing again changes nothing.
	expired, _ := core(pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), "")))
	clk.Set(received.Add(3 * time.Hour))
	must(expired.Deadline(ctx, "req-1"))
	must(expired.Deadline(ctx, "req-1"))

	// Withdrawn after 4 hours; twice.
	withdrawn, _ := core(pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), "")))
	clk.Set(received.Add(4 * time.Hour))
	if _, err := withdrawn.Withdraw(ctx, "req-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := withdrawn.Withdraw(ctx, "req-1"); !errors.Is(err, store.ErrNotOpen) {
		t.Errorf("second withdrawal: %v", err)
	}

	// A deadline that approves: the system's answer is no reviewer's.
	timedOut, _ := core(pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice), "approve")))
	clk.Set(received.Add(5 * time.Hour))
	must(timedOut.Deadline(ctx, "req-1"))

	for outcome, want := range map[string]float64{OutcomeApproved: 2, OutcomeRejected: 1, OutcomePartial: 1,
		OutcomeExpired: 1, OutcomeWithdrawn: 1} {
		if got := value(sample(t, reg, "approvalbot_decisions_total", map[string]string{"outcome": outcome})); got != want {
			t.Errorf("decisions_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
	for outcome, want := range map[string]struct {
		n   uint64
		sum time.Duration
	}{
		OutcomeApproved:  {2, 90*time.Minute + 5*time.Hour},
		OutcomeRejected:  {1, 2 * time.Hour},
		OutcomePartial:   {1, 30 * time.Minute},
		OutcomeExpired:   {1, 3 * time.Hour},
		OutcomeWithdrawn: {1, 4 * time.Hour},
	} {
		_, n, sum := sample(t, reg, "approvalbot_decision_time_to_resolution_seconds", map[string]string{"outcome": outcome})
		if n != want.n || sum != want.sum.Seconds() {
			t.Errorf("time_to_resolution{outcome=%q}: %d samples, sum %v; want %d, %v", outcome, n, sum, want.n, want.sum.Seconds())
		}
	}
	// First answers: approved at 90 min, rejected at 2 h, partial at 10 min.
	_, n, sum := sample(t, reg, "approvalbot_decision_time_to_first_answer_seconds", nil)
	if want := (90*time.Minute + 2*time.Hour + 10*time.Minute).Seconds(); n != 3 || sum != want {
		t.Errorf("time_to_first_answer: %d samples, sum %v; want 3, %v", n, sum, want)
	}
}

func value(v float64, _ uint64, _ float64) float64 { return v }
