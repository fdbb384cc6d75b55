package bot_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/slack-go/slack"
)

// withSlack replaces the service's Slack client.
func withSlack(api dmSlack) harnessOption {
	return func(_ *configT, d *depsT) { d.Slack = api }
}

// dmSlack intercepts chat.postMessage to DMs (channel ids "D…"); every
// other call goes to the emulator.
type dmSlack struct {
	*slack.Client
	intercept func(ctx context.Context, post func() (string, string, error)) (string, string, error)
}

func (d dmSlack) PostMessageContext(ctx context.Context, channel string, opts ...slack.MsgOption) (string, string, error) {
	post := func() (string, string, error) { return d.Client.PostMessageContext(ctx, channel, opts...) }
	if strings.HasPrefix(channel, "D") {
		return d.intercept(ctx, post)
	}
	return post()
}

// losingFirstDMAnswer is a Slack client whose first DM Slack accepts but
// whose answer is lost (as when the worker dies right after the call);
// lost records that it happened.
func losingFirstDMAnswer(emu *slackemu.Server, lost *atomic.Bool) dmSlack {
	return dmSlack{Client: emuClient(emu), intercept: func(_ context.Context, post func() (string, string, error)) (string, string, error) {
		ch, ts, err := post()
		if err == nil && lost.CompareAndSwap(false, true) {
			return "", "", errors.New("connection reset after Slack accepted the message")
		}
		return ch, ts, err
	}}
}

// clockedHarness is a harness whose emulator stamps messages on clk, as
// Slack's clock runs with ours.
func clockedHarness(t *testing.T, clk *fakeClock, opts ...harnessOption) *harness {
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{Now: clk.Now})
	return newHarnessOn(t, rdb, prefix, emu, append([]harnessOption{withClock(clk)}, opts...)...)
}

func emuClient(emu *slackemu.Server) *slack.Client {
	return slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
}

// holdingFirstDM is a Slack client whose first DM waits inside its
// chat.postMessage, before Slack has it, until release is closed (entered
// is closed as it starts waiting); then sent decides what the caller is
// told of it (post() is the call as usual). Other calls go straight on.
func holdingFirstDM(emu *slackemu.Server, sent func(post func() (string, string, error)) (string, string, error)) (api dmSlack, entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var gated atomic.Bool
	api = dmSlack{Client: emuClient(emu), intercept: func(_ context.Context, post func() (string, string, error)) (string, string, error) {
		if gated.CompareAndSwap(false, true) {
			close(entered)
			<-release
			return sent(post)
		}
		return post()
	}}
	return api, entered, release
}

// A reminder DM that Slack accepted but whose answer was lost (as when the
// worker dies right after the call) is found again by the retry, not sent
// twice.
func TestReminderDMAcceptedButUnrecordedIsNotRepeated(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	var lost atomic.Bool
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{Now: clk.Now})
	api := losingFirstDMAnswer(emu, &lost)
	h := newHarnessOn(t, rdb, prefix, emu, withClock(clk), withSlack(api))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(remindable(t, "remind-lost", "Lost answer", now, []string{"U0ALICE"}, "1h", 1))
	clk.Set(h.record(id).ReceivedAt.Add(time.Hour + time.Second))
	h.waitReminded(t, id, 1)
	// Two attempts were started, so a sweep follows one lease later: let it
	// run too, and still find one reminder.
	clk.Set(clk.Now().Add(time.Minute + time.Second))
	h.waitDrained()
	if !lost.Load() {
		t.Fatal("the first reminder's answer was never lost")
	}
	if n := remindersTo(emu, "U0ALICE", "Lost answer"); n != 1 {
		t.Errorf("%d reminders in Alice's DM, want 1", n)
	}
	sent := 0
	for _, c := range emu.CallsTo("chat.postMessage") {
		if strings.HasPrefix(c.Params["channel"], "D") && c.Error == "" {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("%d DMs accepted by Slack, want 1", sent)
	}
}

// Two processes send one escalation copy at once (the first is stuck in
// its Slack call past its lease): one copy stays, the other is deleted.
func TestEscalationCopyLeaseOverrunLeavesOne(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	lease := func(c *configT, _ *depsT) { c.JobLease = time.Minute }
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{Now: clk.Now})
	stuck, entered, release := holdingFirstDM(emu, func(post func() (string, string, error)) (string, string, error) { return post() })
	first := newHarnessOn(t, rdb, prefix, emu, withClock(clk), withSlack(stuck), lease)
	first.startJobs()
	now := clk.Now()
	id := first.postAndWait(escalating(t, "esc-race", now, []string{"U0ALICE"}, step("1h", "U0MANAGER")))
	clk.Set(now.Add(time.Hour + time.Second))
	<-entered // the first process is inside chat.postMessage to the manager

	clk.Set(clk.Now().Add(time.Minute + time.Second)) // its lease runs out
	second := newHarnessOn(t, rdb, prefix, emu, withClock(clk), lease)
	second.startJobs()
	eventually(t, "the second process's copy", func() bool {
		return len(escalationCopies(emu, "U0MANAGER")) == 1 && len(second.record(id).EscalationSent[0]) == 1
	})
	close(release)
	if err := emu.WaitFor(ctxTimeout(t, 10*time.Second), func(sn *slackemu.Snapshot) bool {
		return sn.CountCalls("chat.delete") == 1
	}); err != nil {
		t.Fatalf("the losing copy was not deleted: %v", err)
	}
	// The attempts overlapped, so a sweep is due one lease later: run it,
	// and the recorded copy must still be the one left.
	clk.Set(clk.Now().Add(time.Minute + time.Second))
	second.waitDrained()
	if n := len(escalationCopies(emu, "U0MANAGER")); n != 1 {
		t.Errorf("the manager has %d copies, want 1", n)
	}
}

// hasControls reports whether a message shows buttons or menus.
func hasControls(m slackemu.Message) bool {
	return strings.Contains(string(m.Blocks), `"type":"actions"`) || strings.Contains(string(m.Blocks), `"accessory"`)
}

// Once a request closes, its escalation copies lose their controls and
// show the outcome, and its reminder DMs say it no longer waits.
func TestCopiesUpdatedWhenTheRequestCloses(t *testing.T) {
	t.Parallel()
	t.Run("escalation copy, resolved", func(t *testing.T) {
		t.Parallel()
		clk := newFakeClock()
		h := clockedHarness(t, clk)
		h.startJobs()
		now := clk.Now()
		id := h.postAndWait(escalating(t, "esc-close", now, []string{"U0ALICE"}, step("1h", "U0MANAGER")))
		clk.Set(now.Add(time.Hour + time.Second))
		eventually(t, "the manager's copy", func() bool { return len(escalationCopies(h.emu, "U0MANAGER")) == 1 })
		dm := escalationCopies(h.emu, "U0MANAGER")[0]
		if !hasControls(dm) {
			t.Fatalf("the open copy has no controls: %s", dm.Blocks)
		}
		ok(t, h.clickIn(manager, dm.Channel, dm.TS, id, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
		ok(t, h.clickIn(manager, dm.Channel, dm.TS, id, "d3", staticSelect("immediate")))
		ok(t, h.clickIn(manager, dm.Channel, dm.TS, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
		h.waitStatus(id, aah.StatusResolved)
		h.waitIdle()
		got, _ := h.emu.Message(dm.Channel, dm.TS)
		if hasControls(got) || got.Edited != 1 {
			t.Errorf("the copy after the request resolved (edited %d times): %s", got.Edited, got.Blocks)
		}
	})
	t.Run("reminder DM, withdrawn", func(t *testing.T) {
		t.Parallel()
		clk := newFakeClock()
		h := clockedHarness(t, clk)
		h.startJobs()
		id := h.postAndWait(remindable(t, "remind-close", "Withdrawn one", clk.Now(), []string{"U0ALICE"}, "1h", 2))
		clk.Set(h.record(id).ReceivedAt.Add(time.Hour + time.Second))
		h.waitReminded(t, id, 1)
		if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
			t.Fatalf("DELETE: %d %s", r.Status, r.Body)
		}
		h.waitIdle()
		msgs := h.emu.Messages("U0ALICE")
		if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "no longer waits") || !strings.Contains(msgs[0].Text, "withdrawn") {
			t.Errorf("Alice's DMs after the withdrawal: %+v", msgs)
		}
	})
}

// A reminder DM that Slack accepted with its answer lost, on a request
// that then closes before the reminder's retry: closing cancels that
// retry, so the copies job finds the DM and updates it, instead of leaving
// it unrecorded, showing the request waiting, for good.
func TestReminderDMLostThenClosedIsAdoptedAndUpdated(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	var lost atomic.Bool
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{Now: clk.Now})
	api := losingFirstDMAnswer(emu, &lost)
	h := newHarnessOn(t, rdb, prefix, emu, withClock(clk), withSlack(api))
	h.startJobs()
	id := h.postAndWait(remindable(t, "remind-lost-closed", "Lost then closed", clk.Now(), []string{"U0ALICE"}, "1h", 1))
	clk.Set(h.record(id).ReceivedAt.Add(time.Hour + time.Second))
	eventually(t, "the reminder's lost answer", lost.Load)
	h.waitDrained() // the reminder's retry waits on the harness clock
	if n := remindersTo(emu, "U0ALICE", "Lost then closed"); n != 1 || h.record(id).RemindersDone != 0 {
		t.Fatalf("%d reminders in Alice's DM, %d recorded; want the one sent, unrecorded", n, h.record(id).RemindersDone)
	}
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.waitDrained()
	clk.Set(clk.Now().Add(2 * time.Minute)) // and the sweep one lease after the copy is recorded
	h.waitDrained()
	msgs := emu.Messages("U0ALICE")
	if len(msgs) != 1 {
		t.Fatalf("%d messages in Alice's DM, want the one reminder", len(msgs))
	}
	if m := msgs[0]; !strings.Contains(m.Text, "no longer waits for a decision") || m.Edited == 0 {
		t.Errorf("the reminder shows %q (edited %d times), want it updated to say the request was withdrawn", m.Text, m.Edited)
	}
}

// jobPending reports whether job id of request reqID is due or in flight.
func (h *harness) jobPending(reqID, id string) bool {
	h.t.Helper()
	slot := h.prefix + ":{s" + twoDigits(store.ShardOf(reqID)) + "}:jobs:"
	for _, set := range []string{"due", "inflight"} {
		if _, err := h.rdb.ZScore(context.Background(), slot+set, id).Result(); err == nil {
			return true
		}
	}
	return false
}

// An escalation DM still inside its chat.postMessage when the request
// closes: the close's copies job runs at once, looks for the copy before
// Slack has it and finds nothing. Slack then accepts the DM but its answer
// is lost, and the escalation job's retry, finding the request closed,
// does nothing. The copies job looks again one lease after the close, when
// every attempt's call has ended, and adopts and updates the copy, which
// would otherwise keep its live controls for good.
func TestCopyLandingAfterTheCloseIsFoundAndUpdated(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{Now: clk.Now})
	// The call is slow (Slack has not applied it yet), then its answer is lost.
	api, entered, release := holdingFirstDM(emu, func(post func() (string, string, error)) (string, string, error) {
		if _, _, err := post(); err != nil {
			return "", "", err
		}
		return "", "", errors.New("connection reset after Slack accepted the message")
	})
	h := newHarnessOn(t, rdb, prefix, emu, withClock(clk), withSlack(api))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(escalating(t, "esc-close-midcall", now, []string{"U0ALICE"}, step("1h", "U0MANAGER")))
	clk.Set(now.Add(time.Hour + time.Second))
	<-entered // the escalation job is inside chat.postMessage to the manager

	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	copiesJob := store.JobID(store.JobCopies, id)
	eventually(t, "the copies job scheduled by the close to look", func() bool {
		return len(emu.CallsTo("conversations.history")) > 0
	})
	close(release) // Slack applies the DM; its answer is lost
	eventually(t, "the manager's copy", func() bool { return len(escalationCopies(emu, "U0MANAGER")) == 1 })
	// The escalation job's retry, the copies job's second look a lease
	// after the close, a sweep.
	for range 3 {
		clk.Set(clk.Now().Add(2 * time.Minute))
		h.waitDrained()
	}
	dm := escalationCopies(emu, "U0MANAGER")[0]
	if hasControls(dm) || dm.Edited == 0 {
		t.Errorf("request %s is %s, but the manager's escalation DM still shows it open with live controls "+
			"(edited %d times, history lookups: %d)", id, h.record(id).Status, dm.Edited, len(emu.CallsTo("conversations.history")))
	}
	if h.jobPending(id, copiesJob) {
		t.Errorf("the copies job is still scheduled after its second look")
	}
	if n := len(escalationCopies(emu, "U0MANAGER")); n != 1 {
		t.Errorf("%d escalation copies to the manager, want 1", n)
	}
}
