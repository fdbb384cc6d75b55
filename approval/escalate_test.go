package approval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// escalatingDoc is a request with one approval decision, reviewed by
// alice, whose escalation steps go to the targets.
func escalatingDoc(t *testing.T, targets ...string) store.Record {
	t.Helper()
	raw := requestDoc(t, []any{shipDecision}, reviewers(nil, alice), "")
	var steps []any
	for i, to := range targets {
		steps = append(steps, map[string]any{"after": []string{"1h", "2h", "3h"}[i], "to": to})
	}
	rec := pending(patchData(t, raw, "escalation", steps))
	return rec
}

// Escalation: the request becomes escalated, the target may answer it and
// is filed under it; each step applies once; a closed request is left alone.
func TestEscalate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := newCore(escalatingDoc(t, "U0MORGAN", "#ops"), Policy{})

	if _, err := c.Answer(ctx, "req-1", morgan, map[string]any{"ship": true}); refusedBy(t, err) != RuleReviewer {
		t.Fatalf("before escalation morgan may not decide: %v", err)
	}
	out, err := c.Escalate(ctx, "req-1", 0, Target{Users: []string{"U0MORGAN"}})
	if err != nil || !out.Changed {
		t.Fatalf("escalate: %+v %v", out, err)
	}
	got := out.Record
	if got.Status != aah.StatusEscalated || !slices.Equal(got.EscalatedTo, []string{"U0MORGAN"}) ||
		!slices.Equal(got.EscalatedSteps, []int{0}) || !slices.Contains(got.IndexedReviewers, "U0MORGAN") || got.Version != 2 {
		t.Errorf("after step 0: %+v", got)
	}
	esc := st.events("escalated")
	if len(esc) != 1 || esc[0].Data["step"] != 0 || esc[0].Data["to"] != "U0MORGAN" || !slices.Equal(esc[0].Data["targets"].([]string), []string{"U0MORGAN"}) {
		t.Errorf("audit %+v", esc)
	}
	if again, err := c.Escalate(ctx, "req-1", 0, Target{Users: []string{"U0MORGAN"}}); err != nil || again.Changed || again.Record.Version != 2 {
		t.Errorf("step 0 again: %+v %v", again, err)
	}
	out, err = c.Escalate(ctx, "req-1", 1, Target{Channel: "#ops"})
	if err != nil || !slices.Equal(out.Record.EscalatedChannels, []string{"#ops"}) || !slices.Equal(out.Record.EscalatedSteps, []int{0, 1}) {
		t.Fatalf("step 1: %+v %v", out.Record, err)
	}
	if out, err := c.Escalate(ctx, "req-1", 5, Target{Users: []string{"U0X"}}); err != nil || out.Changed {
		t.Errorf("a step the request does not have: %+v %v", out, err)
	}
	// The escalation target now decides, like a reviewer.
	out, err = c.Answer(ctx, "req-1", morgan, map[string]any{"ship": true})
	if err != nil || out.Record.Status != aah.StatusResolved {
		t.Fatalf("morgan's answer: %+v %v", out, err)
	}
	if later, err := c.EscalationFailed(ctx, "req-1", 2, "too late"); err != nil || later.Changed {
		t.Errorf("a closed request escalates no further: %+v %v", later, err)
	}
}

// A target that cannot be resolved is recorded once per step, and leaves
// the request with its reviewers.
func TestEscalationFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, st := newCore(escalatingDoc(t, "nobody@example.com", "S0NOGROUP"), Policy{})
	for k, reason := range []string{"no Slack user has this email (users_not_found)", "the user group could not be read (no_such_subteam)"} {
		out, err := c.EscalationFailed(ctx, "req-1", k, reason)
		if err != nil || !out.Changed {
			t.Fatalf("step %d: %+v %v", k, out, err)
		}
	}
	if out, _ := c.EscalationFailed(ctx, "req-1", 0, "again"); out.Changed {
		t.Errorf("a step failed twice")
	}
	rec, _ := st.Get(ctx, "req-1")
	want := "step 0 (nobody@example.com): no Slack user has this email (users_not_found); step 1 (S0NOGROUP): the user group could not be read (no_such_subteam)"
	if rec.Status != aah.StatusPending || rec.EscalationError != want || !slices.Equal(rec.EscalatedSteps, []int{0, 1}) || len(rec.EscalatedTo) != 0 {
		t.Errorf("after the failures: status %s, error %q, steps %v", rec.Status, rec.EscalationError, rec.EscalatedSteps)
	}
	if n := len(st.events("escalation_failed")); n != 2 {
		t.Errorf("%d escalation_failed entries, want 2", n)
	}
}

// Targets resolve by aah's forms, through the directory authorization uses.
func TestResolveTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		to     string
		want   Target
		reason string
	}{
		{"U0BOB", Target{Users: []string{"U0BOB"}}, ""},
		{" C0GENERAL ", Target{Channel: "C0GENERAL"}, ""},
		{"G123", Target{Channel: "G123"}, ""},
		{"#ops", Target{Channel: "#ops"}, ""},
		{"S0LEADS", Target{Users: []string{"U0MORGAN", "U0ALICE"}}, ""},
		{"S0EMPTY", Target{}, "the user group has no members"},
		{"Alice@Example.com", Target{Users: []string{"U0ALICE"}}, ""},
		{"ghost@example.com", Target{}, "no Slack user has this email (users_not_found)"},
		{"#Not A Channel", Target{}, "not a Slack user id, email, user group or channel"},
		{"some-role", Target{}, "not a Slack user id, email, user group or channel"},
	} {
		got, reason, err := ResolveTarget(ctx, fakeDirectory{}, tc.to)
		if err != nil || reason != tc.reason || !slices.Equal(got.Users, tc.want.Users) || got.Channel != tc.want.Channel {
			t.Errorf("ResolveTarget(%q) = %+v, %q, %v; want %+v, %q", tc.to, got, reason, err, tc.want, tc.reason)
		}
	}
	if _, _, err := ResolveTarget(ctx, failingDirectory{}, "S0LEADS"); !errors.Is(err, errLookup) {
		t.Errorf("a failed lookup: %v", err)
	}
	for to, want := range map[string]string{"S0X": "the user group could not be read (no_such_subteam)",
		"a@example.com": "the email could not be looked up (no_such_subteam)"} {
		if got := LookupReason(to, "no_such_subteam"); got != want {
			t.Errorf("LookupReason(%q) = %q", to, got)
		}
	}
	if got := LookupReason("a@example.com", "user_not_found"); !strings.Contains(got, "no Slack user has this email") {
		t.Errorf("LookupReason of an unknown user: %q", got)
	}
}

var errLookup = errors.New("slack down")

type failingDirectory struct{}

func (failingDirectory) UserIDByEmail(context.Context, string) (string, error) { return "", errLookup }
func (failingDirectory) GroupMembers(context.Context, string) ([]string, error) {
	return nil, errLookup
}
