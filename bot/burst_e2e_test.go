package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// A burst into one channel, with Slack refusing (429) any post sooner than
// the pacing interval after the previous one: every request is posted
// exactly once, in the order it was accepted, and waiting costs each post a
// small, fixed number of runs (it is told when its turn comes), not a retry
// at every poll. On real Redis and on the embedded store of local mode.
//
// Nothing here is timed: a slow machine only makes the burst take longer.
func TestBurstIntoOneChannelKeepsArrivalOrder(t *testing.T) {
	t.Parallel()
	backends := map[string]func(testing.TB) (redis.UniversalClient, string){
		"redis":    redistest.Client,
		"embedded": func(tb testing.TB) (redis.UniversalClient, string) { return redistest.Embedded(tb, nil) },
	}
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const n, interval = 40, 50 * time.Millisecond
			rdb, prefix := backend(t)
			emu := slackemu.New(slackemu.Options{EnforcePacing: true, PacingInterval: interval})
			t.Cleanup(func() { _ = emu.Close() })
			h := newHarnessOn(t, rdb, prefix, emu, func(c *configT, _ *depsT) {
				c.SlackPostInterval = interval
				c.WorkerConcurrency = 8
			})
			turns := &paceRecorder{prefix: h.prefix + ":pace:"}
			h.rdb.AddHook(turns)
			h.startJobs()
			start := time.Now()
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("burst-%02d", i)
				if r := h.post(exampleWith(t, ids[i], nil)); r.Status != http.StatusAccepted {
					t.Fatalf("POST %s: %d", ids[i], r.Status)
				}
			}
			if _, err := h.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", n); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			h.waitIdle()

			ok, refused := postCalls(h.emu)
			if ok != n {
				t.Errorf("%d posts accepted by Slack, want %d: one per request", ok, n)
			}
			var last string
			seen := map[string]bool{}
			for _, id := range ids {
				rec, err := h.store.Get(context.Background(), id)
				if err != nil || !rec.Posted() {
					t.Fatalf("%s: not posted (%v)", id, err)
				}
				if seen[rec.Slack.TS] {
					t.Errorf("%s: recorded the message of another request (%s)", id, rec.Slack.TS)
				}
				seen[rec.Slack.TS] = true
				if rec.Slack.TS < last { // fixed-width "seconds.micros"
					t.Errorf("%s was posted (%s) before the request accepted ahead of it (%s)", id, rec.Slack.TS, last)
				}
				last = rec.Slack.TS
			}
			// Each post takes its turn once (twice after a 429: it gives the
			// turn back), and is told to wait a few times at most: once when
			// it queues, again when the posts ahead of it left later than
			// foreseen (the machine is slow); and once more per 429 (the hold
			// moves the whole queue on). Besides, the post at the head asks
			// again while the post holding the turn is still in its call, at
			// most once per lead (12.5 ms here) of the burst: on a machine
			// so loaded that each call takes hundreds of ms, that is most of
			// the asks (454 for 40 posts in 8 s once, in CI). Blind retries at
			// every poll were tens per post.
			taken, told := 0, 0
			turns.mu.Lock()
			for _, c := range turns.calls {
				if c.taken {
					taken++
				} else {
					told++
				}
			}
			turns.mu.Unlock()
			if taken > n+refused {
				t.Errorf("%d turns taken for %d posts and %d refusals", taken, n, refused)
			}
			headAsks := int(took / min(interval/4, 25*time.Millisecond)) // slackout.PostPacing's lead
			if limit := (5+refused)*n + headAsks; told > limit {
				t.Errorf("posts were told to wait %d times: more than %d (%d posts, %d refusals, %v)", told, limit, n, refused, took)
			}
			t.Logf("%d posts, %d refused (429), %d turns taken, told to wait %d times in %v", ok, refused, taken, told, took)
		})
	}
}
