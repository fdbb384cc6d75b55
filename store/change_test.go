package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// The store is the core's storage.
var _ approval.Storage = (*store.Store)(nil)

// Change.Apply does to a record what Update writes to Redis: for each
// typed field (and the answers, status, version, timers and reviewers it
// touches), the record read back after the update is the record Apply
// returns, on both backends. The core's tests rely on it (approval's fake
// store applies changes with it).
func TestChangeApplyMatchesRedis(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			at := f.clk.Now() // the deliver job is due at once
			alice := aah.Person{ID: "U0ALICE", Name: "alice"}
			steps := []struct {
				name string
				ch   func() *store.Change
			}{
				{"answer", func() *store.Change {
					return &store.Change{Answers: []aah.Answer{{DecisionID: "d1", Value: true, By: alice, At: at}},
						Status: aah.StatusPartial, Bump: true}
				}},
				{"timers and reviewers", func() *store.Change {
					return &store.Change{Timers: []store.JobAt{{ID: "remind:r-apply:2", At: at}}, AddReviewers: []string{"U0BOB", "U0BOB"}, Quiet: true}
				}},
				{"escalated to users", func() *store.Change {
					return &store.Change{Status: aah.StatusEscalated, Bump: true, AddReviewers: []string{"U1", "U2"},
						Escalation: &store.Escalation{Step: 0, To: []string{"U1", "U2"}, At: at}}
				}},
				{"escalated to a channel", func() *store.Change {
					return &store.Change{Escalation: &store.Escalation{Step: 1, To: []string{"U2"}, Channels: []string{"#ops"}, At: at.Add(time.Hour)}}
				}},
				{"a step failed", func() *store.Change {
					return &store.Change{Escalation: &store.Escalation{Step: 2, Problem: "step 2 (x): no"}}
				}},
				{"another step failed", func() *store.Change {
					return &store.Change{Escalation: &store.Escalation{Step: 3, Problem: "step 3 (y): no"}}
				}},
				{"a step recorded again", func() *store.Change {
					return &store.Change{Escalation: &store.Escalation{Step: 0}}
				}},
				{"reminder reached", func() *store.Change {
					return &store.Change{Reached: &store.Reach{Kind: store.JobRemind, N: 1, To: "U1"}}
				}},
				{"reminder reached another", func() *store.Change {
					return &store.Change{Reached: &store.Reach{Kind: store.JobRemind, N: 1, To: store.ReminderThread}}
				}},
				{"reminder reached twice", func() *store.Change {
					return &store.Change{Reached: &store.Reach{Kind: store.JobRemind, N: 1, To: "U1"}}
				}},
				{"escalation copy reached", func() *store.Change {
					return &store.Change{Reached: &store.Reach{Kind: store.JobEscalate, N: 0, To: "U2"}}
				}},
				{"escalated by hand", func() *store.Change {
					return &store.Change{Status: aah.StatusEscalated, Bump: true, AddReviewers: []string{"U3"},
						Escalation:   &store.Escalation{Step: store.ManualStep(0), Manual: true, To: []string{"U3"}},
						Reassignment: &aah.Reassignment{By: alice, To: "U3", At: at, Note: "you own billing"}}
				}},
				{"escalated by hand to a channel", func() *store.Change {
					return &store.Change{Escalation: &store.Escalation{Step: store.ManualStep(1), Manual: true, Channels: []string{"C0OPS"}},
						Reassignment: &aah.Reassignment{By: alice, To: "C0OPS", At: at}}
				}},
				{"hand-made escalation copy reached", func() *store.Change {
					return &store.Change{Reached: &store.Reach{Kind: store.JobEscalate, N: store.ManualStep(1), To: "C0OPS"}}
				}},
				{"reminders done", func() *store.Change { return &store.Change{RemindersDone: 2} }},
				{"resolved with a delivery", func() *store.Change {
					return &store.Change{Status: aah.StatusResolved, Bump: true,
						Resolution: &store.Resolution{Response: []byte(`{"r":1}`), At: at, By: alice, Deliver: true, WebhookID: "msg_1"}}
				}},
			}
			f.mustCreate(t, newReq("r-apply", "agent"))
			for _, step := range steps {
				before := f.mustGet(t, "r-apply")
				want := step.ch().Apply(before)
				got, err := f.s.Update(f.ctx, "r-apply", func(store.Record) (*store.Change, error) { return step.ch(), nil })
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				want.UpdatedAt = got.UpdatedAt // the store's clock, not Apply's
				sameRecord(t, step.name, got, want)
			}
			rec := f.mustGet(t, "r-apply")
			if rec.Timers != nil || rec.Delivery.State != store.DeliveryPending || !slices.Equal(rec.EscalatedSteps, []int{0, 1, 2, 3}) {
				t.Errorf("after resolving: timers %v, delivery %+v, steps %v", rec.Timers, rec.Delivery, rec.EscalatedSteps)
			}
			if !rec.EscalatedAt.Equal(at.Truncate(time.Millisecond)) || !rec.Escalated() {
				t.Errorf("escalated at %v (%v), want the first escalation's %v", rec.EscalatedAt, rec.Escalated(), at)
			}
			if len(rec.Reassignments) != 2 || rec.Reassignments[0].Note != "you own billing" || rec.Reassignments[1].To != "C0OPS" ||
				!slices.Equal(rec.EscalationSent[store.ManualStep(1)], []string{"C0OPS"}) || !slices.Contains(rec.EscalatedTo, "U3") {
				t.Errorf("hand-made escalations: %+v, sent %v, to %v", rec.Reassignments, rec.EscalationSent, rec.EscalatedTo)
			}
			if !slices.ContainsFunc(f.claimAll(t), func(j store.Job) bool { return j.ID == store.JobID(store.JobDeliver, "r-apply") }) {
				t.Error("resolving with a delivery scheduled no deliver job")
			}

			for _, tc := range []struct {
				name string
				ch   func() *store.Change
			}{
				{"withdrawn", func() *store.Change {
					return &store.Change{Status: aah.StatusWithdrawn, Bump: true, WithdrawnAt: at}
				}},
				{"deferred by a reviewer", func() *store.Change {
					return &store.Change{Status: aah.StatusResolved, Bump: true,
						Directive:  &aah.Directive{Verb: aah.VerbDefer, Text: "try a smaller batch", By: alice, At: at},
						Resolution: &store.Resolution{Response: []byte(`{"r":3}`), At: at, By: alice}}
				}},
				{"expired, nothing to deliver, by the system", func() *store.Change {
					return &store.Change{Status: aah.StatusExpired, Bump: true,
						Resolution: &store.Resolution{Response: []byte(`{"r":2}`), At: at, WebhookID: "unused"}}
				}},
			} {
				id := "r-" + tc.name[:7]
				before := f.mustCreate(t, newReq(id, "agent"))
				want := tc.ch().Apply(before)
				got, err := f.s.Update(f.ctx, id, func(store.Record) (*store.Change, error) { return tc.ch(), nil })
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				want.UpdatedAt = got.UpdatedAt
				sameRecord(t, tc.name, got, want)
			}
		})
	}
}
