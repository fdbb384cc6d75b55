package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// A storm of 429s delays the posts but loses none and doubles none, and every
// retry waits at least the Retry-After Slack asked for.
func TestRateLimitStorm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.emu.InjectRateLimit("chat.postMessage", 4, time.Second)
	h.startJobs()
	for i := range 3 {
		if r := h.post(exampleWith(t, fmt.Sprintf("storm-%d", i), nil)); r.Status != http.StatusAccepted {
			t.Fatalf("POST: %d %s", r.Status, r.Body)
		}
	}
	if _, err := h.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", 3); err != nil {
		t.Fatal(err)
	}
	h.waitIdle()
	ok, limited := postCalls(h.emu)
	if ok != 3 || limited != 4 {
		t.Errorf("posts ok=%d rate-limited=%d, want 3 and 4", ok, limited)
	}
	// After a request's post was answered 429, its next attempt came no
	// sooner than Retry-After. (Another request's post may be on its way
	// already when a 429 comes: the bot cannot call that one back, so the
	// channel-wide order of arrivals depends on the machine's speed.)
	last429 := map[string]time.Time{}
	for _, c := range h.emu.CallsTo("chat.postMessage") {
		id := requestIDOfCall(t, c)
		if prev, ok := last429[id]; ok && c.At.Sub(prev) < 990*time.Millisecond {
			t.Errorf("%s: attempt came %s after its 429 with Retry-After: 1", id, c.At.Sub(prev))
		}
		if c.Status == http.StatusTooManyRequests {
			last429[id] = c.At
		}
	}
	for i := range 3 {
		if st := h.get(fmt.Sprintf("storm-%d", i))["slack"].(map[string]any)["state"]; st != "posted" {
			t.Errorf("storm-%d: slack state %v", i, st)
		}
	}
	if v := metricValue(t, h.reg, "approvalbot_slack_posts_total", map[string]string{"outcome": "rate_limited"}); v != 4 {
		t.Errorf("posts{rate_limited} = %v, want 4", v)
	}
}

// A 429 without Retry-After (a proxy's) is retried after the default hold.
func TestRateLimitWithoutRetryAfter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.emu.InjectRateLimit("chat.postMessage", 2, 0)
	h.startJobs()
	if r := h.post(example(t)); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d", r.Status)
	}
	if _, err := h.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", 1); err != nil {
		t.Fatal(err)
	}
	h.waitIdle()
	if ok, limited := postCalls(h.emu); ok != 1 || limited != 2 {
		t.Errorf("posts ok=%d limited=%d, want 1 and 2", ok, limited)
	}
}

// Posts to one channel are spaced by SLACK_POST_INTERVAL: every post goes
// out in a turn of its own, at its slot, at least the interval after the
// previous post's slot.
//
// The spacing is bounded from where the bot makes it, the turns taken in
// Redis, not measured between arrivals at the emulator: the time a post
// takes to reach Slack depends on the machine. A post is given its turn
// shortly before its slot and calls Slack no earlier than the slot, and the
// slots are at least the interval apart: so the i-th post reaches Slack at
// least (i-j) intervals after the j-th turn was asked for, a bound a slow
// machine can only widen.
func TestPostsArePacedPerChannel(t *testing.T) {
	t.Parallel()
	const interval = 300 * time.Millisecond
	h := newHarness(t, func(c *configT, _ *depsT) { c.SlackPostInterval = interval })
	slots := &paceRecorder{prefix: h.prefix + ":pace:"}
	h.rdb.AddHook(slots)
	h.startJobs()
	for i := range 4 {
		h.post(exampleWith(t, fmt.Sprintf("paced-%d", i), nil))
	}
	if _, err := h.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", 4); err != nil {
		t.Fatal(err)
	}
	h.waitIdle()
	posts := h.emu.CallsTo("chat.postMessage")
	taken := slots.taken()
	if len(posts) != 4 || len(taken) != 4 {
		t.Fatalf("%d posts and %d turns taken, want one turn per post (4)", len(posts), len(taken))
	}
	for i := range posts {
		for j := range i + 1 {
			if min := taken[j].before.Add(time.Duration(i-j) * interval); posts[i].At.Before(min) {
				t.Errorf("post %d reached Slack at %s, before %s: %d intervals after turn %d was asked for",
					i, posts[i].At.Format(time.StampMilli), min.Format(time.StampMilli), i-j, j)
			}
		}
	}
}

// paceRecorder is a go-redis hook that records each post turn the bot
// asks for (store.TakePostTurn: a script call on a key under prefix that
// answers {taken, ms}) and what it answered.
type paceRecorder struct {
	prefix string
	mu     sync.Mutex
	calls  []paceCall
}

// paceCall is one TakePostTurn: Redis ran it between before and after.
type paceCall struct {
	before, after time.Time
	taken         bool
	wait          int64 // ms: until its slot when taken, else until it asks again
}

func (r *paceRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *paceRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (r *paceRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args() // EVALSHA sha 2 key queue-key ...
		key, _ := func() (string, bool) {
			if len(args) < 4 {
				return "", false
			}
			s, ok := args[3].(string)
			return s, ok
		}()
		if name := cmd.Name(); (name != "evalsha" && name != "eval") || !strings.HasPrefix(key, r.prefix) {
			return next(ctx, cmd)
		}
		before := time.Now()
		err := next(ctx, cmd)
		after := time.Now()
		if c, ok := cmd.(*redis.Cmd); ok && err == nil {
			if res, err := c.Int64Slice(); err == nil && len(res) == 3 && res[0] != 2 { // 2: intake queuing the post
				r.mu.Lock()
				r.calls = append(r.calls, paceCall{before: before, after: after, taken: res[0] == 1, wait: res[1]})
				r.mu.Unlock()
			}
		}
		return err
	}
}

// taken lists the calls that took a turn, in the order they were made.
func (r *paceRecorder) taken() []paceCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []paceCall
	for _, c := range r.calls {
		if c.taken {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b paceCall) int { return a.before.Compare(b.before) })
	return out
}

// Permanent Slack errors stop at once and are reported by GET.
func TestPermanentSlackErrorsAreRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	cases := map[string]string{"#no-bot": "not_in_channel", "#does-not-exist": "channel_not_found"}
	for channel := range cases {
		h.post(exampleWith(t, "perm"+channel[1:], setChannel(channel)))
	}
	h.emu.InjectError("chat.postMessage", "invalid_blocks", 1)
	// The injected error hits whichever post comes first; post the third
	// request only after the two channel errors are in.
	if _, err := h.emu.WaitForCalls(ctxTimeout(t, guard), "chat.postMessage", 2); err != nil {
		t.Fatal(err)
	}
	h.waitIdle()
	for channel, code := range cases {
		sl := h.get("perm" + channel[1:])["slack"].(map[string]any)
		if sl["state"] != "failed" || sl["error"] == nil {
			t.Errorf("%s: slack = %v, want failed", channel, sl)
		}
		_ = code
	}
	errs := map[string]bool{}
	for _, c := range h.emu.CallsTo("chat.postMessage") {
		errs[c.Error] = true
	}
	for channel := range cases {
		sl := h.get("perm" + channel[1:])["slack"].(map[string]any)
		if !errs[fmt.Sprint(sl["error"])] {
			t.Errorf("%s: recorded error %v was never answered by Slack (%v)", channel, sl["error"], errs)
		}
	}
	if n := len(h.emu.CallsTo("chat.postMessage")); n != 2 {
		t.Errorf("%d post attempts, want 2: permanent errors must not be retried", n)
	}
}

// Transient failures (HTTP 5xx) are retried with backoff until the post
// lands; the error seen meanwhile is cleared once it does.
func TestTransientFailuresAreRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.emu.InjectHTTPStatus("chat.postMessage", http.StatusServiceUnavailable, 2)
	h.startJobs()
	h.post(example(t))
	if _, err := h.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", 1); err != nil {
		t.Fatal(err)
	}
	// Not waitIdle: a 5xx may hide a message Slack accepted, so a sweep is
	// due one lease later; what is due now is the post and its follow-ups.
	h.waitDrained()
	sl := h.get("aah_decision_abc123")["slack"].(map[string]any)
	if sl["state"] != "posted" || sl["error"] != nil {
		t.Errorf("slack = %v, want posted without error", sl)
	}
	if n := len(h.emu.CallsTo("chat.postMessage")); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

// A process that stored requests and died before posting them loses
// nothing: the next process posts each exactly once.
func TestCrashBetweenStoreAndPost(t *testing.T) {
	t.Parallel()
	crashed := newHarness(t) // its job runner never starts
	for i := range 3 {
		if r := crashed.post(exampleWith(t, fmt.Sprintf("crash-%d", i), nil)); r.Status != http.StatusAccepted {
			t.Fatalf("POST: %d", r.Status)
		}
	}
	crashed.http.Close()

	next := newHarnessOn(t, crashed.rdb, crashed.prefix, crashed.emu)
	next.startJobs()
	if _, err := next.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", 3); err != nil {
		t.Fatal(err)
	}
	next.waitIdle()
	if ok, _ := postCalls(next.emu); ok != 3 {
		t.Errorf("%d posts, want 3", ok)
	}
}

// A process that claimed the post job and died mid-job holds a lease; once
// the lease runs out another process posts the message, once.
//
// The lease runs out on the injected clock, not on the wall clock: the
// crashed worker's lease is a minute and the live runner keeps the
// harness's long JOB_LEASE, so however slow the machine, the live runner
// neither posts before the clock passes the lease nor overruns its own.
func TestCrashWhileHoldingTheJob(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.post(example(t))
	const crashedLease = time.Minute
	var claimed []store.Job
	for shard := range store.Shards {
		jobs, err := h.store.Claim(context.Background(), shard, 10, crashedLease)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.Kind == store.JobPost {
				claimed = append(claimed, j)
				continue
			}
			// The crashed worker held only the post: hand the App Home
			// refresh the store schedules beside it back, so the live
			// runner's work on it shows the runner is running.
			if err := h.store.Retry(context.Background(), j, clk.Now(), false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(claimed) != 1 {
		t.Fatalf("claimed %d post jobs, want one", len(claimed))
	}
	// The "crashed" worker never acks. A live runner must wait out the lease:
	// it drains everything else, and the post stays in flight, unposted.
	h.startJobs()
	h.waitQueue(func(d store.QueueDepth) bool { return d.Due == 0 && d.InFlight == 1 })
	if n := len(h.emu.CallsTo("chat.postMessage")); n != 0 {
		t.Fatalf("%d posts while the crashed worker's lease was still running", n)
	}
	clk.Set(clk.Now().Add(crashedLease + time.Second))
	if _, err := h.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", 1); err != nil {
		t.Fatal(err)
	}
	h.waitIdle()
	if ok, _ := postCalls(h.emu); ok != 1 {
		t.Errorf("%d posts, want 1", ok)
	}
	if err := h.store.Ack(context.Background(), claimed[0]); err == nil {
		t.Error("the crashed worker's stale lease could still ack the job")
	}
}

// Three bot processes draining one Redis post every request exactly once.
func TestSeveralProcessesNeverPostTwice(t *testing.T) {
	t.Parallel()
	first := newHarness(t, func(c *configT, _ *depsT) { c.SlackPostInterval = time.Millisecond })
	procs := []*harness{first}
	for range 2 {
		procs = append(procs, newHarnessOn(t, first.rdb, first.prefix, first.emu,
			func(c *configT, _ *depsT) { c.SlackPostInterval = time.Millisecond }))
	}
	for _, p := range procs {
		p.startJobs()
	}
	const n = 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := procs[i%len(procs)]
			body := exampleWith(t, fmt.Sprintf("multi-%02d", i), setChannel([]string{"#approvals", "#general"}[i%2]))
			if r := p.post(body); r.Status != http.StatusAccepted {
				t.Errorf("POST: %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	for _, ch := range []string{"C0APPROVALS", "C0GENERAL"} {
		if _, err := first.emu.WaitForMessages(ctxTimeout(t, guard), ch, n/2); err != nil {
			t.Fatal(err)
		}
	}
	first.waitIdle()
	perRequest := map[string]int{}
	for _, ch := range []string{"C0APPROVALS", "C0GENERAL"} {
		for _, m := range first.emu.Messages(ch) {
			perRequest[requestIDOf(t, m)]++
		}
	}
	if len(perRequest) != n {
		t.Errorf("%d distinct requests posted, want %d", len(perRequest), n)
	}
	for id, c := range perRequest {
		if c != 1 {
			t.Errorf("%s posted %d times", id, c)
		}
	}
}

// requestIDOfCall is the request a chat.postMessage call was for, from the
// metadata it carried.
func requestIDOfCall(t *testing.T, c slackemu.Call) string {
	t.Helper()
	var meta struct {
		EventPayload struct {
			RequestID string `json:"request_id"`
		} `json:"event_payload"`
	}
	if err := jsonUnmarshal([]byte(c.Params["metadata"]), &meta); err != nil || meta.EventPayload.RequestID == "" {
		t.Fatalf("call at %s carries no request id metadata: %q", c.At, c.Params["metadata"])
	}
	return meta.EventPayload.RequestID
}

func requestIDOf(t *testing.T, m slackemu.Message) string {
	t.Helper()
	var meta struct {
		EventPayload struct {
			RequestID string `json:"request_id"`
		} `json:"event_payload"`
	}
	if err := jsonUnmarshal(m.Metadata, &meta); err != nil || meta.EventPayload.RequestID == "" {
		t.Fatalf("message %s carries no request id metadata: %s", m.TS, m.Metadata)
	}
	return meta.EventPayload.RequestID
}
