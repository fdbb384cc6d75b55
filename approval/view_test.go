package approval

import (
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// The view names escalation targets as Slack shows them: users and channel
// ids as links, channel names as text; a closed request's closing time.
func TestView(t *testing.T) {
	t.Parallel()
	rec := store.Record{ID: "r1", Agent: "pm", Status: aah.StatusEscalated, Version: 3,
		EscalatedTo: []string{"U1"}, EscalatedChannels: []string{"C0GENERAL", "#ops"}}
	st := View(rec, aah.Defaults{Quorum: 2, OverrideAgents: []string{"other"}})
	if want := []string{"<@U1>", "<#C0GENERAL>", "#ops"}; !slices.Equal(st.EscalatedTo, want) {
		t.Errorf("escalated to %v, want %v", st.EscalatedTo, want)
	}
	if st.Version != 3 || st.Defaults.Quorum != 2 || !st.ClosedAt.IsZero() {
		t.Errorf("view %+v", st)
	}
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	rec.Status, rec.WithdrawnAt = aah.StatusWithdrawn, at
	if st := View(rec, aah.Defaults{}); !st.ClosedAt.Equal(at) {
		t.Errorf("closed at %v", st.ClosedAt)
	}
}
