package aah_test

import (
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// Escalation targets of every form escalation resolves are accepted; a
// request stored before the check, with a target of another form, still
// reads (its escalation step fails and says why when it runs).
func TestEscalationTargetForms(t *testing.T) {
	t.Parallel()
	esc := dataPath + ".escalation.to"
	for _, to := range []string{"U0LEAD", "W0LEAD", "lead@example.com", "S0LEADS", "C0LEADS", "G0LEADS", "#leads", " U0LEAD "} {
		mustParse(t, mutated(t, set(esc, to)), aah.ParseOptions{Now: seedNow})
	}
	for _, to := range []string{"role:finance", "foo", "#", "#Leads Team", "U0lower", "human:U0LEAD"} {
		if aah.ValidEscalationTarget(to) {
			t.Errorf("ValidEscalationTarget(%q) = true", to)
		}
	}
	stored := mutated(t, set(esc, "role:finance"))
	if req := mustParse(t, stored, aah.ParseOptions{Now: seedNow, Stored: true}); req.Data.Escalation[0].To != "role:finance" {
		t.Errorf("stored escalation = %+v", req.Data.Escalation)
	}
}

// When data.deadline and handoff.response_deadline are both set, the
// earlier one governs, whichever field holds it.
func TestEffectiveDeadlineIsTheEarlier(t *testing.T) {
	t.Parallel()
	early, late := "2026-02-17T09:00:00Z", "2026-02-18T17:00:00Z"
	earlyT, _ := time.Parse(time.RFC3339, early)
	lateT, _ := time.Parse(time.RFC3339, late)
	for _, c := range []struct {
		name  string
		edits []edit
		want  time.Time
	}{
		{"data earlier", []edit{set(dataPath+".deadline", early), set("handoff.response_deadline", late)}, earlyT},
		{"handoff earlier", []edit{set(dataPath+".deadline", late), set("handoff.response_deadline", early)}, earlyT},
		{"only data", []edit{set(dataPath+".deadline", late), del("handoff.response_deadline")}, lateT},
		{"only handoff", []edit{del(dataPath + ".deadline"), set("handoff.response_deadline", late)}, lateT},
		{"neither", []edit{del(dataPath + ".deadline"), del("handoff.response_deadline")}, time.Time{}},
	} {
		req := mustParse(t, mutated(t, c.edits...), aah.ParseOptions{Now: seedNow})
		if got := req.EffectiveDeadline(); !got.Equal(c.want) {
			t.Errorf("%s: EffectiveDeadline = %v, want %v", c.name, got, c.want)
		}
	}
}

// handoff.expects_response: false means no callback, even with a
// response_url.
func TestCallbackURLHonoursExpectsResponse(t *testing.T) {
	t.Parallel()
	const u = "https://agent.example.com/decisions"
	for _, c := range []struct {
		name    string
		expects any
		want    string
	}{{"absent", nil, u}, {"true", true, u}, {"false", false, ""}} {
		edits := []edit{set("handoff.response_url", u)}
		if c.expects == nil {
			edits = append(edits, del("handoff.expects_response"))
		} else {
			edits = append(edits, set("handoff.expects_response", c.expects))
		}
		if got := mustParse(t, mutated(t, edits...), aah.ParseOptions{Now: seedNow}).CallbackURL(); got != c.want {
			t.Errorf("expects_response %s: CallbackURL = %q, want %q", c.name, got, c.want)
		}
	}
}
