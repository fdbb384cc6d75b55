package bot_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// errCrash stands for a process that died: the call never reached Redis.
var errCrash = errors.New("test: the process died here")

// crashingRecords records nothing: the worker "dies" between Slack
// accepting its message and recording it.
type crashingRecords struct{ *store.Store }

func (crashingRecords) RecordPost(context.Context, string, string, string, int64, time.Time) error {
	return errCrash
}

// gatedSlack holds chat.postMessage until released: a worker stuck in its
// Slack call while its lease runs out.
type gatedSlack struct {
	*slack.Client
	entered chan struct{}
	release chan struct{}
}

func (g gatedSlack) PostMessageContext(ctx context.Context, channel string, opts ...slack.MsgOption) (string, string, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Client.PostMessageContext(ctx, channel, opts...)
}

// newWorker is one worker's post job over h's Redis and emulator.
func (h *harness) newWorker(api slackout.SlackAPI, records slackout.Store, lease time.Duration) jobs.Handler {
	h.t.Helper()
	handlers, err := slackout.Handlers(slackout.Options{Slack: api, Store: records, PostInterval: time.Millisecond, Lease: lease})
	if err != nil {
		h.t.Fatal(err)
	}
	return handlers[store.JobPost]
}

func (h *harness) slackClient() *slack.Client {
	return slack.New(h.emu.Token(), slack.OptionAPIURL(h.emu.APIURL()), slack.OptionHTTPClient(h.emu.Client()))
}

// onlyMessage checks that the channel shows exactly one message for the
// request, the one it recorded.
func (h *harness) onlyMessage(id, channel string) {
	h.t.Helper()
	msgs := h.emu.Messages(channel)
	rec, err := h.store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].TS != rec.Slack.TS || rec.Slack.Channel != channel {
		var tss []string
		for _, m := range msgs {
			tss = append(tss, m.TS)
		}
		h.t.Fatalf("channel shows %v, the request recorded %s %s: want exactly the recorded message", tss, rec.Slack.Channel, rec.Slack.TS)
	}
}

// A worker that dies after Slack accepted its post and before recording
// it: the next attempt finds the message by its metadata and adopts it.
func TestPostCrashAfterSlackAcceptedIsNotRepeated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.accept(example(t))
	job := store.Job{ID: store.JobID(store.JobPost, id), Kind: store.JobPost, RequestID: id, Attempt: 1}
	ctx := ctxTimeout(t, 10*time.Second)
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), crashingRecords{h.store}, time.Second), job); !errors.Is(err, errCrash) {
		t.Fatalf("first worker: %v, want the crash", err)
	}
	job.Attempt = 2
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), h.store, time.Second), job); err != nil {
		t.Fatalf("second worker: %v", err)
	}
	if ok, _ := postCalls(h.emu); ok != 1 {
		t.Errorf("%d chat.postMessage calls, want 1", ok)
	}
	h.onlyMessage(id, "C0APPROVALS")
}

// raceTwoWorkers runs a post whose first worker is stuck in its Slack call
// until a second worker (the lease ran out) posted and recorded its own;
// then the first one's call completes. first records through firstRecords.
func raceTwoWorkers(t *testing.T, h *harness, firstRecords slackout.Store) (id string, firstErr error) {
	t.Helper()
	id = h.accept(example(t))
	job := store.Job{ID: store.JobID(store.JobPost, id), Kind: store.JobPost, RequestID: id, Attempt: 1}
	ctx := ctxTimeout(t, 10*time.Second)
	gate := gatedSlack{Client: h.slackClient(), entered: make(chan struct{}), release: make(chan struct{})}
	firstDone := make(chan error, 1)
	go func() { firstDone <- handlePaced(ctx, h.newWorker(gate, firstRecords, time.Nanosecond), job) }()
	<-gate.entered // the first worker is inside chat.postMessage
	// The second worker may find the channel's pace slot (1 ms) still held
	// by the first; like the runner, it tries again when told to.
	second := h.newWorker(h.slackClient(), h.store, time.Nanosecond)
	job.Attempt = 2
	if err := handlePaced(ctx, second, job); err != nil {
		t.Fatalf("second worker: %v", err)
	}
	close(gate.release)
	return id, <-firstDone
}

// handlePaced runs job on w as the runner would: a free retry (the
// channel's pace slot is still held by an earlier post, or the post is run
// within the millisecond it arrived in: its settle counts from its arrival
// to the microsecond, and these workers pace at 1 ms, with no lead) waits as
// told and runs again, with the attempt number unchanged; any other result
// is returned. A first worker run with Handle alone failed so, now and then.
func handlePaced(ctx context.Context, w jobs.Handler, job store.Job) error {
	for {
		err := w.Handle(ctx, job)
		var retry *jobs.RetryError
		if !errors.As(err, &retry) || !retry.Free {
			return err
		}
		select {
		case <-time.After(retry.After):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Two workers post at once (the first outlived its lease inside the Slack
// call): the store keeps the first ts recorded, and the other worker
// deletes its own copy.
func TestPostLeaseOverrunLoserDeletesItsCopy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id, firstErr := raceTwoWorkers(t, h, h.store)
	if firstErr != nil {
		t.Fatalf("first worker: %v", firstErr)
	}
	if ok, _ := postCalls(h.emu); ok != 2 {
		t.Errorf("%d chat.postMessage calls, want both workers' 2", ok)
	}
	if n := len(h.emu.CallsTo("chat.delete")); n != 1 {
		t.Errorf("%d chat.delete calls, want 1", n)
	}
	h.onlyMessage(id, "C0APPROVALS")
}

// The same race, but the losing worker dies before it can delete its
// copy: the sweep scheduled with the record deletes it.
func TestPostLeaseOverrunCrashedLoserIsSwept(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id, firstErr := raceTwoWorkers(t, h, crashingRecords{h.store})
	if !errors.Is(firstErr, errCrash) {
		t.Fatalf("first worker: %v, want the crash", firstErr)
	}
	if n := len(h.emu.Messages("C0APPROVALS")); n != 2 {
		t.Fatalf("%d messages before the sweep, want the 2 of the race", n)
	}
	h.startJobs() // runs the sweep, due at once (lease 1ns)
	if err := h.emu.WaitFor(ctxTimeout(t, 10*time.Second), func(sn *slackemu.Snapshot) bool {
		return len(sn.Messages("C0APPROVALS")) == 1
	}); err != nil {
		t.Fatalf("duplicate not swept: %v", err)
	}
	h.waitIdle()
	h.onlyMessage(id, "C0APPROVALS")
}

// When Slack fails the lookup transiently, nothing is posted (the job is
// retried); when it refuses it for good (the app lacks the history
// scope), the post goes out rather than the request staying unseen.
func TestPostLookupFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.accept(example(t))
	job := store.Job{ID: store.JobID(store.JobPost, id), Kind: store.JobPost, RequestID: id, Attempt: 1}
	ctx := ctxTimeout(t, 10*time.Second)
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), crashingRecords{h.store}, time.Second), job); !errors.Is(err, errCrash) {
		t.Fatalf("first worker: %v, want the crash", err)
	}
	// The first worker's post holds the channel's pace slot: the next
	// workers wait for it as the runner would (handlePaced).
	h.emu.InjectHTTPStatus("conversations.history", http.StatusServiceUnavailable, 1)
	job.Attempt = 2
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), h.store, time.Second), job); err == nil {
		t.Fatal("a failed lookup was not retried")
	}
	if ok, _ := postCalls(h.emu); ok != 1 {
		t.Fatalf("%d posts after a failed lookup, want still 1", ok)
	}
	h.emu.InjectError("conversations.history", "missing_scope", 1)
	job.Attempt = 3
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), h.store, time.Second), job); err != nil {
		t.Fatalf("worker without the history scope: %v", err)
	}
	if ok, _ := postCalls(h.emu); ok != 2 {
		t.Fatalf("%d posts when the lookup is refused for good, want 2 (sent unchecked)", ok)
	}
	if rec, _ := h.store.Get(ctx, id); !rec.Posted() {
		t.Error("the unchecked post was not recorded")
	}
}

// A post Slack refused outright (429, or a code saying why it was not
// sent) sent nothing: the retry counts as a first attempt again, so it
// neither searches the channel's history nor leaves a sweep behind. Slack's
// own failures (internal_error) and a 5xx may hide an accepted message and
// still lead to both.
func TestRefusedPostNeedsNoLookupOrSweep(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		inject    func(emu *slackemu.Server)
		wantCheck bool
	}{
		"429":            {inject: func(emu *slackemu.Server) { emu.InjectRateLimit("chat.postMessage", 1, time.Millisecond) }},
		"ratelimited":    {inject: func(emu *slackemu.Server) { emu.InjectError("chat.postMessage", "ratelimited", 1) }},
		"internal_error": {inject: func(emu *slackemu.Server) { emu.InjectError("chat.postMessage", "internal_error", 1) }, wantCheck: true},
		"503":            {inject: func(emu *slackemu.Server) { emu.InjectHTTPStatus("chat.postMessage", http.StatusServiceUnavailable, 1) }, wantCheck: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			c.inject(h.emu)
			h.startJobs()
			id := h.postAndWait(exampleWith(t, "refused", setChannel("C0APPROVALS")))
			h.waitDrained()
			if n := len(h.emu.CallsTo("chat.postMessage")); n != 2 {
				t.Fatalf("%d post calls, want the refused one and its retry", n)
			}
			looked := len(h.emu.CallsTo("conversations.history")) > 0
			swept := h.jobScheduled(store.JobSweep + ":" + id)
			if looked != c.wantCheck || swept != c.wantCheck {
				t.Errorf("history looked up: %v, sweep scheduled: %v; want both %v", looked, swept, c.wantCheck)
			}
			h.onlyMessage(id, "C0APPROVALS")
		})
	}
}

// jobScheduled reports whether job id is waiting in the outbox.
func (h *harness) jobScheduled(id string) bool {
	h.t.Helper()
	for shard := range store.Shards {
		key := h.prefix + ":{s" + twoDigits(shard) + "}:jobs:due"
		if _, err := h.rdb.ZScore(context.Background(), key, id).Result(); err == nil {
			return true
		}
	}
	return false
}

// acceptedThenFailedSlack posts the message and then answers ok:false
// internal_error, as Slack may ("it's possible some aspect of the operation
// succeeded").
type acceptedThenFailedSlack struct{ *slack.Client }

func (s acceptedThenFailedSlack) PostMessageContext(ctx context.Context, channel string, opts ...slack.MsgOption) (string, string, error) {
	if _, _, err := s.Client.PostMessageContext(ctx, channel, opts...); err != nil {
		return "", "", err
	}
	return "", "", slack.SlackErrorResponse{Err: "internal_error"}
}

// A post Slack accepted although it answered internal_error is found by the
// retry, not sent again.
func TestInternalErrorAfterAcceptedPostIsNotRepeated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.accept(exampleWith(t, "accepted-failed", setChannel("C0APPROVALS")))
	job := store.Job{ID: store.JobID(store.JobPost, id), Kind: store.JobPost, RequestID: id, Attempt: 1}
	ctx := ctxTimeout(t, guard)
	_ = handlePaced(ctx, h.newWorker(acceptedThenFailedSlack{h.slackClient()}, h.store, time.Minute), job)
	job.Attempt = 2
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), h.store, time.Minute), job); err != nil {
		t.Fatalf("retry: %v", err)
	}
	h.onlyMessage(id, "C0APPROVALS")
}

// postWithLostAnswer runs request id's post job once, Slack posting its
// message to channel and losing the answer (a 502 after acting): the
// message is in the channel, the request does not record it.
func (h *harness) postWithLostAnswer(t *testing.T, id, channel string) {
	t.Helper()
	job := store.Job{ID: store.JobID(store.JobPost, id), Kind: store.JobPost, RequestID: id, Attempt: 1}
	h.emu.InjectFailAfterEffect("chat.postMessage", http.StatusBadGateway, 1)
	if err := h.newWorker(h.slackClient(), h.store, time.Minute).Handle(ctxTimeout(t, guard), job); err == nil {
		t.Fatal("first attempt: no error, want Slack's lost answer")
	}
	if msgs := h.emu.Messages(channel); len(msgs) != 1 || h.record(id).Posted() {
		t.Fatalf("after the lost answer: %d messages, recorded %v; want 1, unrecorded", len(msgs), h.record(id).Posted())
	}
}

// Slack posts the message and its answer is lost (a 502 after acting); the
// reviewer, who sees the message, resolves the request from it before the
// post's retry. The retry finds the request closed: it must still adopt the
// message, so that its sync shows the request resolved, rather than leave
// it unrecorded, showing the request open with live buttons, for good.
// (Found by the fault suite, internal/faults.)
func TestLostPostAnswerThenResolvedIsAdoptedAndUpdated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.accept(exampleWith(t, "lost-then-resolved", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = data["decisions"].([]any)[:1]
		setChannel("C0APPROVALS")(doc)
	}))
	h.postWithLostAnswer(t, id, "C0APPROVALS")
	ok(t, h.sendInteraction(map[string]any{"type": "block_actions",
		"user": map[string]any{"id": alice.id, "name": "alice"}, "channel": map[string]any{"id": "C0APPROVALS"},
		"actions": []any{action{"action_id": blocks.ActionApprove, "block_id": blocks.BlockID(1, id, "d1"), "type": "button", "value": "true"}}}))
	if st := h.record(id).Status; st.Open() {
		t.Fatalf("after the click the request is %s, want it resolved", st)
	}
	h.startJobs()
	h.waitIdle()
	h.onlyMessage(id, "C0APPROVALS")
	if ok, _ := postCalls(h.emu); ok != 0 {
		t.Errorf("%d successful chat.postMessage calls after the lost one, want none (the message is adopted)", ok)
	}
	if m := h.emu.Messages("C0APPROVALS")[0]; !strings.HasPrefix(m.Text, "Resolved") || m.Edited == 0 {
		t.Errorf("the message shows %q (edited %d times), want it updated to the resolution", m.Text, m.Edited)
	}
}

// slowLookupSlack answers conversations.history only once the attempt's
// deadline has passed: the lookup found the message, but used up the time
// (a slow Slack, a loaded process).
type slowLookupSlack struct{ *slack.Client }

func (s slowLookupSlack) GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error) {
	resp, err := s.Client.GetConversationHistoryContext(context.WithoutCancel(ctx), params)
	<-ctx.Done()
	return resp, err
}

// A retry whose lookup finds the earlier attempt's message records it even
// when the lookup used up the attempt's deadline, as a sent message is
// recorded: otherwise every retry repeats the lookup and fails the same way,
// until the job gives up with the message in Slack, unrecorded. (Found by
// the fault suite's posting scenario on a loaded machine: 125 attempts failed
// so and one recovery took 1m46s.)
func TestAdoptedPostIsRecordedAfterASlowLookup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.accept(exampleWith(t, "slow-lookup", setChannel("C0APPROVALS")))
	job := store.Job{ID: store.JobID(store.JobPost, id), Kind: store.JobPost, RequestID: id, Attempt: 1}
	_ = h.newWorker(acceptedThenFailedSlack{h.slackClient()}, h.store, time.Minute).Handle(ctxTimeout(t, guard), job)
	if h.record(id).Posted() || len(h.emu.Messages("C0APPROVALS")) != 1 {
		t.Fatal("the first attempt should have left its message in Slack, unrecorded")
	}
	job.Attempt = 2
	ctx, cancel := context.WithTimeout(ctxTimeout(t, guard), 2*time.Second)
	defer cancel()
	err := handlePaced(ctx, h.newWorker(slowLookupSlack{h.slackClient()}, h.store, time.Minute), job)
	if !h.record(id).Posted() {
		t.Fatalf("the retry found the message but did not record it (%v)", err)
	}
	h.onlyMessage(id, "C0APPROVALS")
}

// A sweep whose history lookup used up the attempt's time still completes:
// it reads what the store knows first, rather than failing on that read
// afterwards and repeating the lookup. (Found by the fault suite's posting
// scenario on a saturated machine: hundreds of sweep attempts failed so and
// recovery took minutes.)
func TestSweepAfterASlowLookupCompletes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.accept(exampleWith(t, "slow-sweep", setChannel("C0APPROVALS")))
	job := store.Job{ID: store.JobID(store.JobPost, id), Kind: store.JobPost, RequestID: id, Attempt: 1}
	ctx := ctxTimeout(t, guard)
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), crashingRecords{h.store}, time.Minute), job); !errors.Is(err, errCrash) {
		t.Fatalf("first worker: %v, want the crash", err)
	}
	job.Attempt = 2
	if err := handlePaced(ctx, h.newWorker(h.slackClient(), h.store, time.Minute), job); err != nil {
		t.Fatalf("second worker: %v", err)
	}
	if !h.jobScheduled(store.JobSweep + ":" + id) {
		t.Fatal("two attempts, the message adopted: a sweep should be scheduled")
	}
	handlers, err := slackout.Handlers(slackout.Options{Slack: slowLookupSlack{h.slackClient()}, Store: h.store, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sweepCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	sweep := store.Job{ID: store.JobID(store.JobSweep, id), Kind: store.JobSweep, RequestID: id, Attempt: 1}
	if err := handlers[store.JobSweep].Handle(sweepCtx, sweep); err != nil {
		t.Fatalf("sweep after a lookup that used up its time: %v, want it done", err)
	}
	h.onlyMessage(id, "C0APPROVALS")
}
