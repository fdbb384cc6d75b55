package approval

import (
	"context"
	"slices"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Reached records that one recipient of a reminder or an escalation step
// was handled (sent a copy, or refused by Slack for good: then ev audits
// why), so a retried job skips them. Nothing is written when they are
// recorded already.
func (c *Core) Reached(ctx context.Context, id string, r store.Reach, ev *store.AuditEvent) error {
	_, err := c.update(ctx, id, func(rec store.Record) (*store.Change, error) {
		list := rec.Reminded[r.N]
		if r.Kind == store.JobEscalate {
			list = rec.EscalationSent[r.N]
		}
		if slices.Contains(list, r.To) {
			return nil, nil
		}
		ch := &store.Change{Reached: &r}
		if ev != nil {
			ch.Audit = []store.AuditEvent{*ev}
		}
		return ch, nil
	})
	return err
}

// Reminded completes reminder n of a request: it is audited with the
// recipients it reached, and reminder n+1 is scheduled while the plan has
// more and the request still gets reminders (GetsReminders). A reminder
// completed already changes nothing, so a repeated run is harmless.
func (c *Core) Reminded(ctx context.Context, id string, n int, plan aah.ReminderPlan) error {
	_, err := c.update(ctx, id, func(rec store.Record) (*store.Change, error) {
		if rec.RemindersDone >= n {
			return nil, nil
		}
		recipients := rec.Reminded[n]
		if recipients == nil {
			recipients = []string{}
		}
		ch := &store.Change{
			RemindersDone: n,
			Audit: []store.AuditEvent{{Event: "reminded", Actor: "system",
				Data: map[string]any{"n": n, "recipients": recipients}}},
		}
		if n < plan.Max && plan.Every > 0 && GetsReminders(rec.Status) {
			ch.Timers = []store.JobAt{{ID: store.TimerID(store.JobRemind, id, n+1), At: nextReminder(rec.ReceivedAt, plan.Every, n, c.now())}}
		}
		return ch, nil
	})
	return err
}

// Audit records an event about a request that changes nothing else (a
// reminder the job runner gave up on).
func (c *Core) Audit(ctx context.Context, id string, ev store.AuditEvent) error {
	_, err := c.update(ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Audit: []store.AuditEvent{ev}}, nil
	})
	return err
}
