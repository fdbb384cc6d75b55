package bot_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// What local mode relies on its store for (channel pacing, event
// de-duplication, Home-opened marks) is tested on both stores the bot runs
// on: real Redis, and the embedded store of local mode (localmode.OpenRedis
// without REDIS_URL), built the same way by redistest.Embedded. The
// embedded store's keys expire on the wall clock here, as real Redis's do.

// storeBackends names the stores newHarnessOnStore builds on.
var storeBackends = []string{"redis", "embedded"}

// newHarnessOnStore is newHarness on the named store.
func newHarnessOnStore(t *testing.T, backend string, opts ...harnessOption) *harness {
	t.Helper()
	if backend == "embedded" {
		rdb, prefix := redistest.Embedded(t, nil)
		return newHarnessOn(t, rdb, prefix, slackemu.New(slackemu.Options{}), opts...)
	}
	return newHarness(t, opts...)
}

// Every request to one channel is posted, one pacing interval after the
// other. On the embedded store only the first ever was: its pacing key
// never expired, so the others stayed queued ("paced") forever.
func TestEveryRequestToOneChannelIsPosted(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			h := newHarnessOnStore(t, backend) // SLACK_POST_INTERVAL 50ms
			h.startJobs()
			const n = 4
			for i := range n {
				h.accept(exampleWith(t, fmt.Sprintf("one-channel-%d", i), nil))
			}
			if _, err := h.emu.WaitForMessages(ctxTimeout(t, 60*time.Second), "C0APPROVALS", n); err != nil {
				ok, _ := postCalls(h.emu)
				t.Fatalf("%d of %d requests to one channel posted: %v", ok, n, err)
			}
			h.waitIdle() // the posts are recorded after Slack answers them
			for i := range n {
				if sl := h.get(fmt.Sprintf("one-channel-%d", i))["slack"].(map[string]any); sl["state"] != "posted" {
					t.Errorf("one-channel-%d: slack = %v, want posted", i, sl)
				}
			}
		})
	}
}

// Slack's retries of an event are dropped on both stores.
func TestEventRetriesAreDeduplicatedOnEitherStore(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			h := newHarnessOnStore(t, backend)
			h.openHome(alice, "Ev0LSDUP1", nil)
			h.openHome(alice, "Ev0LSDUP1", map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
			// A later, distinct event is published; by then a duplicate would have been too.
			h.openHome(bob, "Ev0LSDUP2", nil)
			if perUser := h.publishesPerUser(2); perUser[alice.id] != 1 || perUser[bob.id] != 1 {
				t.Errorf("views.publish per user = %v, want one each", perUser)
			}
		})
	}
}

// The Home tab of someone who opened it (a mark with a TTL) follows new
// requests for them, and nobody else's is published, on both stores.
func TestHomeTabFollowsNewRequestsOnEitherStore(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			h := newHarnessOnStore(t, backend)
			h.startJobs()
			h.openEmptyHome(alice, "Ev0LSHOME1")
			created := h.publishMark()
			id := h.accept(simple(t, "ls-home", []string{alice.id, morgan.id}, "C0APPROVALS"))
			h.waitPublished(alice, created, "listed the new request", func(ht homeTab) bool { return slices.Equal(ht.waiting, []string{id}) })
			if n := h.publishedSince(created)[morgan.id]; n != 0 {
				t.Errorf("Morgan's Home tab was published %d times though he never opened it", n)
			}
		})
	}
}
