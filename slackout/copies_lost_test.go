package slackout

import (
	"testing"

	"github.com/approvalbot/approvalbot/store"
)

// copyDestination finds where each kind of copy went, as the reminder and
// escalation jobs chose it.
func TestCopyDestination(t *testing.T) {
	posted := store.Record{Slack: store.SlackState{Channel: "C0APPROVALS", TS: "1700000000.000100"}}
	for _, tc := range []struct {
		effect string
		rec    store.Record
		want   destination
		ok     bool
	}{
		{"remind:1:U0ALICE", posted, destination{user: "U0ALICE"}, true},
		{"remind:2:" + store.ReminderThread, posted, destination{channel: "C0APPROVALS", threadTS: "1700000000.000100"}, true},
		{"remind:2:" + store.ReminderThread, store.Record{}, destination{}, false}, // no thread to reply in
		{"escalate:0:U0MANAGER", posted, destination{user: "U0MANAGER"}, true},
		{"escalate:1:C0ESCALATIONS", posted, destination{channel: "C0ESCALATIONS"}, true},
		{"escalate:1:#ops", posted, destination{channel: "#ops"}, true},
		{"remind:1:#ops", posted, destination{}, false}, // reminders go to users or the thread only
		{"remind:1", posted, destination{}, false},
		{"sync:x", posted, destination{}, false},
	} {
		got, ok := copyDestination(tc.rec, tc.effect)
		if got != tc.want || ok != tc.ok {
			t.Errorf("copyDestination(%q) = %+v, %v; want %+v, %v", tc.effect, got, ok, tc.want, tc.ok)
		}
	}
}
