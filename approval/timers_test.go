package approval

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Which timers a new request gets: the deadline's, one per escalation
// step from artifact.created_at, and the first reminder, by the request's
// plan or the workspace's; only the kinds the runner handles.
func TestTimers(t *testing.T) {
	t.Parallel()
	all := map[string]bool{store.JobExpire: true, store.JobEscalate: true, store.JobRemind: true}
	hourly := aah.ReminderPlan{Every: time.Hour, Max: 3}
	created := time.Date(2027, 2, 16, 9, 0, 0, 0, time.UTC)
	deadline := time.Date(2027, 2, 17, 17, 0, 0, 0, time.UTC)
	parse := func(slack map[string]any, escalation []any) *aah.Request {
		raw := requestDoc(t, []any{shipDecision}, slack, "")
		if escalation != nil {
			raw = patchData(t, raw, "escalation", escalation)
		}
		req, err := aah.Parse(raw, aah.ParseOptions{Stored: true})
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	steps := []any{map[string]any{"after": "1h", "to": "U0BOB"}, map[string]any{"after": "2h", "to": "#ops"}}
	for _, tc := range []struct {
		name  string
		req   *aah.Request
		plan  aah.ReminderPlan
		kinds map[string]bool
		want  []store.JobAt
	}{
		{"everything", parse(nil, steps), hourly, all, []store.JobAt{
			{ID: "expire:req-1", At: deadline},
			{ID: "escalate:req-1:0", At: created.Add(time.Hour)}, {ID: "escalate:req-1:1", At: created.Add(2 * time.Hour)},
			{ID: "remind:req-1:1", At: t0.Add(time.Hour)}}},
		{"no reminders configured", parse(nil, nil), aah.ReminderPlan{}, all, []store.JobAt{{ID: "expire:req-1", At: deadline}}},
		{"the request's own plan wins", parse(map[string]any{"reminders": map[string]any{"every": "30m", "max": 1}}, nil), hourly, all,
			[]store.JobAt{{ID: "expire:req-1", At: deadline}, {ID: "remind:req-1:1", At: t0.Add(30 * time.Minute)}}},
		{"the request turns reminders off", parse(map[string]any{"reminders": map[string]any{"every": "1h", "max": 0}}, nil), hourly, all,
			[]store.JobAt{{ID: "expire:req-1", At: deadline}}},
		{"only the kinds the runner handles", parse(nil, steps), hourly, map[string]bool{store.JobRemind: true},
			[]store.JobAt{{ID: "remind:req-1:1", At: t0.Add(time.Hour)}}},
	} {
		if got := Timers(tc.req, t0, tc.plan, tc.kinds); !slices.EqualFunc(got, tc.want, func(a, b store.JobAt) bool { return a.ID == b.ID && a.At.Equal(b.At) }) {
			t.Errorf("%s: timers %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestNextReminder(t *testing.T) {
	t.Parallel()
	start := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := nextReminder(start, time.Hour, 1, start.Add(time.Hour+time.Second)); !got.Equal(start.Add(2 * time.Hour)) {
		t.Errorf("on schedule: %v", got)
	}
	late := start.Add(5 * time.Hour)
	if got := nextReminder(start, time.Hour, 1, late); !got.Equal(late.Add(time.Hour)) {
		t.Errorf("after downtime: %v, want one interval from now", got)
	}
}

// Reminder bookkeeping: each recipient is recorded once; a completed
// reminder is audited with them and schedules the next while the plan has
// more; running it again changes nothing.
func TestReminderBookkeeping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := newCore(pending(requestDoc(t, []any{shipDecision}, reviewers(nil, alice, bob), "")), Policy{})
	plan := aah.ReminderPlan{Every: time.Hour, Max: 2}
	for _, to := range []string{"U0ALICE", "U0ALICE", "U0BOB"} {
		if err := c.Reached(ctx, "req-1", store.Reach{Kind: store.JobRemind, N: 1, To: to}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reached(ctx, "req-1", store.Reach{Kind: store.JobEscalate, N: 0, To: "U0MORGAN"},
		&store.AuditEvent{Event: "escalation_failed", Actor: "system"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Reminded(ctx, "req-1", 1, plan); err != nil {
		t.Fatal(err)
	}
	if err := c.Reminded(ctx, "req-1", 1, plan); err != nil {
		t.Fatal(err)
	}
	rec, _ := st.Get(ctx, "req-1")
	if !slices.Equal(rec.Reminded[1], []string{"U0ALICE", "U0BOB"}) || !slices.Equal(rec.EscalationSent[0], []string{"U0MORGAN"}) || rec.RemindersDone != 1 {
		t.Errorf("reminded %v, escalation sent %v, done %d", rec.Reminded, rec.EscalationSent, rec.RemindersDone)
	}
	if e := st.events("reminded"); len(e) != 1 || !slices.Equal(e[0].Data["recipients"].([]string), []string{"U0ALICE", "U0BOB"}) {
		t.Errorf("reminded audit %+v", e)
	}
	if !slices.Equal(rec.Timers, []string{"remind:req-1:2"}) || len(st.events("escalation_failed")) != 1 {
		t.Errorf("timers %v, audit %+v", rec.Timers, st.audit)
	}
	// The last reminder of the plan schedules none.
	if err := c.Reminded(ctx, "req-1", 2, plan); err != nil {
		t.Fatal(err)
	}
	if rec, _ := st.Get(ctx, "req-1"); len(rec.Timers) != 1 || rec.RemindersDone != 2 {
		t.Errorf("after the last reminder: timers %v, done %d", rec.Timers, rec.RemindersDone)
	}
	if !GetsReminders(aah.StatusPartial) || GetsReminders(aah.StatusEscalated) || GetsReminders(aah.StatusResolved) {
		t.Error("GetsReminders")
	}
}
