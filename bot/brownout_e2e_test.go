package bot_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// The brownout tests play a Redis that freezes (a slow fork, a failover, a
// partition) with a go-redis hook, and check what agents, reviewers and
// /readyz see. Deadlines are configured small; nothing measures elapsed
// time: a frozen command waits until its caller's context ends, so a test
// that gets its answer has shown that the handler's deadline ended it.

// freezer is a go-redis hook that plays a Redis that stops answering.
// Frozen, a command whose context has a deadline within bound fails at once
// with context.DeadlineExceeded, as it would once that deadline passed
// against a server that does not answer; one with no deadline, or a later
// one, waits until its context ends or the freezer thaws, as it would
// against the frozen server. So a request path that sets its deadline is
// answered at once, whatever the machine's speed, and one that does not
// hangs the test instead of passing it. Its other modes hold only
// transactions (MULTI … EXEC) and write scripts: withholdAnswer lets them reach Redis and
// fails them as frozen commands fail (a write that lands while its caller
// gives up); deliverLate holds them until the caller's deadline has passed
// and then delivers them (a frozen server that gets to them late).
type freezer struct {
	mu    sync.Mutex
	mode  freezeMode
	thaw  chan struct{}
	bound time.Duration // the longest deadline a request path may set
	// pingDeadline is how far ahead the deadline of the last PING was
	// when it arrived (0: it had none).
	pingDeadline atomic.Int64
	late         atomic.Int32 // transactions delivered late
}

type freezeMode int

const (
	thawed freezeMode = iota
	frozen
	withholdAnswer
	deliverLate
)

var errThawed = errors.New("freezer thawed while the command waited")

func freeze(t *testing.T, rdb redis.UniversalClient, bound time.Duration) *freezer {
	if _, ok := rdb.(*redis.ClusterClient); ok {
		// A Cluster client runs WATCH transactions and its own topology
		// reads on its node clients, out of this hook's reach, so it cannot
		// be frozen this way; the deadlines under test do not depend on the
		// deployment, and the single-node run covers them.
		t.Skip("the freezer plays a frozen single node; this run is on a Redis Cluster")
	}
	f := &freezer{thaw: make(chan struct{}), bound: bound}
	rdb.AddHook(f)
	t.Cleanup(func() { f.set(thawed) })
	return f
}

func (f *freezer) set(m freezeMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mode != thawed && m == thawed {
		close(f.thaw)
		f.thaw = make(chan struct{})
	}
	f.mode = m
}

func (f *freezer) state() (freezeMode, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mode, f.thaw
}

// wait is how a command fares against the frozen server: see freezer.
func (f *freezer) wait(ctx context.Context, thaw <-chan struct{}) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= f.bound {
		return context.DeadlineExceeded
	}
	return f.waitOut(ctx, thaw)
}

// waitOut waits until ctx ends or the freezer thaws.
func (f *freezer) waitOut(ctx context.Context, thaw <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-thaw:
		return errThawed
	}
}

func (f *freezer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *freezer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "ping" {
			if dl, ok := ctx.Deadline(); ok {
				f.pingDeadline.Store(int64(time.Until(dl)))
			}
		}
		mode, thaw := f.state()
		switch {
		case mode == frozen:
			err := f.wait(ctx, thaw)
			cmd.SetErr(err)
			return err
		case mode == deliverLate && isWrite(cmd):
			err := f.waitOut(ctx, thaw)
			if ctx.Err() != nil {
				f.late.Add(1)
				_ = next(context.WithoutCancel(ctx), cmd)
			}
			cmd.SetErr(err)
			return err
		case mode == withholdAnswer && isWrite(cmd):
			if err := next(ctx, cmd); err != nil {
				return err
			}
			err := f.wait(ctx, thaw)
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// isWrite reports whether cmd is a request's write script (store's
// applyWrite, whose first key is the request's hash): held like a
// transaction, as it is one.
func isWrite(cmd redis.Cmder) bool {
	args := cmd.Args()
	if n := cmd.Name(); (n != "evalsha" && n != "eval") || len(args) < 4 {
		return false
	}
	key, _ := args[3].(string)
	return strings.Contains(key, ":req:")
}

func (f *freezer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		mode, thaw := f.state()
		// A transaction, or a pipeline carrying a write script (a create
		// goes out with its post's queuing): held as one.
		tx := len(cmds) > 0 && cmds[0].Name() == "multi" || slices.ContainsFunc(cmds, isWrite)
		// Every command of the pipeline fails as the pipeline does, as
		// against a server that never answers.
		fail := func(err error) error {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		switch {
		case mode == frozen:
			return fail(f.wait(ctx, thaw))
		case mode == deliverLate && tx:
			err := f.waitOut(ctx, thaw)
			if ctx.Err() != nil {
				f.late.Add(1)
				_ = next(context.WithoutCancel(ctx), cmds)
			}
			return fail(err)
		case mode == withholdAnswer && tx:
			if err := next(ctx, cmds); err != nil {
				return err
			}
			return fail(f.wait(ctx, thaw))
		}
		return next(ctx, cmds)
	}
}

// brownoutHarness is a harness over a Redis the returned freezer controls,
// with the request deadlines STORE_REQUEST_TIMEOUT storeTimeout and
// REDIS_TIMEOUT redisTimeout (/readyz's ping). They are generous (the work
// before and after the freeze must never miss them on a loaded machine):
// the freezer fails a frozen command at once when its deadline is within
// them, as if it had passed.
func brownoutHarness(t *testing.T, storeTimeout, redisTimeout time.Duration) (*harness, *freezer) {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	f := freeze(t, rdb, max(storeTimeout, redisTimeout))
	h := newHarnessOn(t, rdb, prefix, slackemu.New(slackemu.Options{}), func(c *configT, _ *depsT) {
		c.StoreRequestTimeout, c.RedisTimeout = storeTimeout, redisTimeout
	})
	return h, f
}

// wantUnavailable checks a 503 with Retry-After and a JSON error saying the
// store is unavailable.
func wantUnavailable(t *testing.T, what string, r response) {
	t.Helper()
	retryAfter := r.Header.Get("Retry-After")
	if r.Status != http.StatusServiceUnavailable || retryAfter != "2" {
		t.Errorf("%s with Redis frozen: %d (Retry-After %q) %s; want 503 with Retry-After 2", what, r.Status, retryAfter, r.Body)
		return
	}
	if msg, _ := r.json(t)["error"].(string); !strings.HasPrefix(msg, "store unavailable: ") {
		t.Errorf("%s: error %q does not say the store is unavailable", what, msg)
	}
}

// With Redis frozen, intake, reads, listing and withdrawal answer 503 with
// Retry-After once their deadline passes, never 500 and never 2xx; nothing
// was changed, as the state after the thaw shows.
func TestBrownoutAPIAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	h, f := brownoutHarness(t, 20*time.Second, 200*time.Millisecond)
	id := h.postAndWaitQuiet(exampleWith(t, "brownout-api", nil))

	f.set(frozen)
	r := h.do(http.MethodPost, "/v1/requests", tokenPM, "application/json", exampleWith(t, "brownout-api-new", nil))
	wantUnavailable(t, "POST /v1/requests", r)
	r = h.do(http.MethodGet, "/v1/requests/"+id, tokenPM, "", nil)
	wantUnavailable(t, "GET /v1/requests/{id}", r)
	r = h.do(http.MethodGet, "/v1/requests/"+id+"?wait=30s", tokenPM, "", nil)
	wantUnavailable(t, "GET /v1/requests/{id}?wait=30s", r)
	r = h.do(http.MethodGet, "/v1/requests", tokenPM, "", nil)
	wantUnavailable(t, "GET /v1/requests", r)
	r = h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil)
	wantUnavailable(t, "DELETE /v1/requests/{id}", r)

	f.set(thawed)
	if got := h.get(id)["status"]; got != "pending" {
		t.Errorf("after the thaw the request is %v, want pending (the withdrawal answered 503)", got)
	}
	if r := h.do(http.MethodGet, "/v1/requests/brownout-api-new", tokenPM, "", nil); r.Status != http.StatusNotFound {
		t.Errorf("the intake answered 503 but the request exists: %d %s", r.Status, r.Body)
	}
}

// A write that reached Redis while its answer did not come back in time is
// answered 503 (it cannot be confirmed); the agent's retry with the same
// body then answers 200 with the stored request instead of storing it
// again: intake is idempotent on artifact.id.
func TestBrownoutIntakeRetryOfALandedWriteIsADuplicate(t *testing.T) {
	t.Parallel()
	h, f := brownoutHarness(t, 20*time.Second, 200*time.Millisecond)
	body := exampleWith(t, "brownout-landed", nil)

	f.set(withholdAnswer)
	r := h.do(http.MethodPost, "/v1/requests", tokenPM, "application/json", body)
	wantUnavailable(t, "POST whose write landed", r)

	f.set(thawed)
	r = h.post(body)
	if r.Status != http.StatusOK || r.json(t)["id"] != "brownout-landed" {
		t.Fatalf("retry after the 503: %d %s; want 200 with the request stored by the first attempt", r.Status, r.Body)
	}
	page := h.do(http.MethodGet, "/v1/requests", tokenPM, "", nil).json(t)
	if items, _ := page["items"].([]any); len(items) != 1 {
		t.Errorf("the agent has %d requests, want 1: %s", len(items), page)
	}
}

// /readyz pings Redis under a deadline of REDIS_TIMEOUT (at most 800ms)
// and reports not ready when it passes.
func TestBrownoutReadyzReportsAFrozenRedis(t *testing.T) {
	t.Parallel()
	h, f := brownoutHarness(t, 200*time.Millisecond, 150*time.Millisecond)
	f.set(frozen)
	r := h.do(http.MethodGet, "/readyz", "", "", nil)
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with Redis frozen: %d %s, want 503", r.Status, r.Body)
	}
	if rep := r.json(t); rep["status"] != "unavailable" || !strings.Contains(rep["redis"].(string), "deadline exceeded") {
		t.Errorf("/readyz report: %v", rep)
	}
	if d := time.Duration(f.pingDeadline.Load()); d <= 0 || d > 150*time.Millisecond {
		t.Errorf("the ping's deadline was %s ahead, want at most REDIS_TIMEOUT (150ms)", d)
	}

	// With the default REDIS_TIMEOUT (1s) the ping still answers within a second.
	h2, f2 := brownoutHarness(t, 200*time.Millisecond, 0)
	_ = h2.do(http.MethodGet, "/readyz", "", "", nil)
	if d := time.Duration(f2.pingDeadline.Load()); d <= 0 || d > 800*time.Millisecond {
		t.Errorf("the ping's deadline was %s ahead, want at most 800ms", d)
	}
}

// A click while Redis is frozen is acked (200) within its deadline, the
// reviewer is told it was not recorded and to try again, and after the
// thaw the request is unchanged.
func TestBrownoutClickIsAckedAndNotRecorded(t *testing.T) {
	t.Parallel()
	h, f := brownoutHarness(t, 20*time.Second, 200*time.Millisecond)
	h.startJobs() // it also runs the ephemeral replies: it must outlive the click
	id := h.postAndWait(exampleWith(t, "brownout-click", nil))
	h.waitIdle()
	before, err := h.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	payload := h.clickPayload(alice, id, "d1", button(blocks.ActionApprove, "true"))

	f.set(frozen)
	ok(t, h.sendInteraction(payload))
	ephemeral := waitEphemeral(t, h, alice)
	if !strings.Contains(ephemeral, "not recorded") || !strings.Contains(ephemeral, "try again") {
		t.Errorf("the reviewer was told %q; want that the answer was not recorded and to try again", ephemeral)
	}

	f.set(thawed)
	after, err := h.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Answers) != 0 || after.Version != before.Version || after.Status != before.Status {
		t.Errorf("the refused click changed the request: %+v", after.Answers)
	}
}

// Over Socket Mode too, a click while Redis is frozen is acked, not
// applied, and the reviewer is told to try again: the envelope's
// redelivery check and the answer share one store budget from arrival.
// (Unacked, as before, Slack showed the reviewer an error and delivered
// the envelope again and again.)
func TestBrownoutSocketModeClickIsAckedAndNotRecorded(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t, func(c *configT, _ *depsT) { c.StoreRequestTimeout = 20 * time.Second })
	f := freeze(t, h.rdb, 20*time.Second)
	id := h.postAndWait(simple(t, "sock-brownout", []string{alice.id}, "C0APPROVALS"))
	payload := h.clickPayload(alice, id, "d1", button(blocks.ActionApprove, "true"))

	f.set(frozen)
	h.deliver("interactive", payload) // fails the test unless acked
	ephemeral := waitEphemeral(t, h, alice)
	if !strings.Contains(ephemeral, "not recorded") || !strings.Contains(ephemeral, "try again") {
		t.Errorf("the reviewer was told %q; want that the answer was not recorded and to try again", ephemeral)
	}
	f.set(thawed)
	if rec := h.record(id); len(rec.Answers) != 0 {
		t.Errorf("the click was applied: %+v", rec.Answers)
	}
}

// The click whose transaction a frozen Redis gets to only after the
// deadline (the case that recorded answers behind reviewers' backs): Redis
// itself refuses it, since its write fence has expired, so the answer is
// not recorded, and the reviewer, acked in time, is told it could not be
// confirmed.
func TestBrownoutLateTransactionIsRefusedByRedis(t *testing.T) {
	t.Parallel()
	if redistest.Kind() == "miniredis" {
		t.Skip("the write fence needs a real Redis (an expiring WATCHed key fails EXEC)")
	}
	// The transaction is held until the click's deadline (10s) has passed;
	// the reads before it have 4/5 of it, 8s, however loaded the machine.
	h, f := brownoutHarness(t, 10*time.Second, 200*time.Millisecond)
	h.startJobs()
	id := h.postAndWait(exampleWith(t, "brownout-late", nil))
	h.waitIdle()
	payload := h.clickPayload(alice, id, "d1", button(blocks.ActionApprove, "true"))

	f.set(deliverLate)
	ok(t, h.sendInteraction(payload))
	if f.late.Load() == 0 {
		t.Fatal("no transaction was delivered late: the click never reached its write")
	}
	ephemeral := waitEphemeral(t, h, alice)
	if !strings.Contains(ephemeral, "could not be confirmed") || !strings.Contains(ephemeral, "try again") {
		t.Errorf("the reviewer was told %q; want that it could not be confirmed and to try again", ephemeral)
	}
	f.set(thawed)
	rec, err := h.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Answers) != 0 {
		t.Errorf("the late transaction was applied behind the reviewer's back: %+v", rec.Answers)
	}
}

func waitEphemeral(t *testing.T, h *harness, u slackUser) string {
	t.Helper()
	if err := h.emu.WaitFor(ctxTimeout(t, guard), func(s *slackemu.Snapshot) bool {
		return len(s.Ephemerals("C0APPROVALS", u.id)) > 0
	}); err != nil {
		t.Fatal(err)
	}
	return h.emu.Ephemerals("C0APPROVALS", u.id)[0].Text
}
