package approval

import (
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Timers are a new request's timed jobs, scheduled with it at intake: the
// deadline's action (expire.go), each escalation step (escalate.go, counted
// from artifact.created_at, or from now when the agent sent none), and the
// first reminder (remind.go; each reminder schedules the next). kinds are
// the timer job kinds the job runner handles (store.JobExpire, JobEscalate,
// JobRemind): only those are scheduled. A deadline before an escalation
// step is allowed: the request closes first, and closing cancels every
// timer it has (the store does it in the closing transaction).
func Timers(req *aah.Request, now time.Time, defaultPlan aah.ReminderPlan, kinds map[string]bool) []store.JobAt {
	var out []store.JobAt
	id := req.Artifact.ID
	if dl := req.EffectiveDeadline(); !dl.IsZero() && kinds[store.JobExpire] {
		out = append(out, store.JobAt{ID: store.JobID(store.JobExpire, id), At: dl})
	}
	created := req.Artifact.CreatedAt
	if created.IsZero() {
		created = now
	}
	for i, step := range req.Data.Escalation {
		if !kinds[store.JobEscalate] {
			break
		}
		out = append(out, store.JobAt{ID: store.TimerID(store.JobEscalate, id, i), At: created.Add(step.After)})
	}
	if plan := ReminderPlan(req, defaultPlan); plan.Max > 0 && plan.Every > 0 && kinds[store.JobRemind] {
		out = append(out, store.JobAt{ID: store.TimerID(store.JobRemind, id, 1), At: now.Add(plan.Every)})
	}
	return out
}

// ReminderPlan is the request's reminder schedule: its own
// (extensions.slack.reminders) when it sets one, else the workspace's.
func ReminderPlan(req *aah.Request, defaultPlan aah.ReminderPlan) aah.ReminderPlan {
	if req.Slack.Reminders != nil {
		return *req.Slack.Reminders
	}
	return defaultPlan
}

// nextReminder is when reminder n+1 is due: on the request's schedule
// (received + (n+1)·every), or one interval from now when that has passed
// (the bot was down), so reminders never come in a burst.
func nextReminder(received time.Time, every time.Duration, n int, now time.Time) time.Time {
	at := received.Add(time.Duration(n+1) * every)
	if !at.After(now) {
		at = now.Add(every)
	}
	return at
}

// GetsReminders reports whether a request in this state gets reminders:
// escalated requests are in other hands, closed ones need nothing.
func GetsReminders(s aah.Status) bool { return s == aah.StatusPending || s == aah.StatusPartial }
