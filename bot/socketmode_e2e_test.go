package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/slack-go/slack"
)

// newSocketHarness is a bot in Socket Mode only (no signing secret, so no
// HTTP Slack endpoints), connected to the emulator's Socket Mode server,
// with its job runner started.
func newSocketHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	t.Cleanup(func() { _ = emu.Close() })
	h := newHarnessOn(t, rdb, prefix, emu, append([]harnessOption{func(c *configT, d *depsT) {
		c.SlackSigningSecret, c.SlackAppToken = "", emu.AppToken()
		d.SocketMode = slack.New(emu.Token(), slack.OptionAppLevelToken(emu.AppToken()),
			slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
	}}, opts...)...)
	h.startJobs()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = h.svc.RunSocketMode(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() }) // before the job runner stops
	if err := emu.WaitSocketConnected(ctxTimeout(t, guard)); err != nil {
		t.Fatal("the bot never connected over Socket Mode:", err)
	}
	return h
}

// deliver sends one envelope and returns it with its ack. How soon the ack
// comes depends on the machine, so it is logged, not asserted: the ack
// latency is measured by BenchmarkInteractionAck, and what keeps acks
// short (slow answers go through response_url, work after the ack) is
// tested in handlers.
func (h *harness) deliver(typ string, payload any) slackemu.SocketEnvelope {
	h.t.Helper()
	env, err := h.emu.Deliver(ctxTimeout(h.t, guard), typ, payload)
	if err != nil {
		h.t.Fatalf("%s envelope: %v", typ, err)
	}
	h.t.Logf("%s envelope acked after %v", typ, env.Latency())
	return env
}

// socketSlash runs "/approvals <text>" as u over Socket Mode and returns the
// reply its ack carries.
func (h *harness) socketSlash(u slackUser, text string) slashReply {
	h.t.Helper()
	env := h.deliver("slash_commands", slack.SlashCommand{Command: "/approvals", Text: text, UserID: u.id,
		UserName: strings.ToLower(strings.Fields(u.name)[0]), TeamID: "T0LOCAL", ChannelID: "C0APPROVALS",
		ChannelName: "approvals", ResponseURL: "https://hooks.slack.invalid/commands/1", APIAppID: "A0LOCAL"})
	var rep slashReply
	if err := json.Unmarshal(env.Ack, &rep); err != nil || rep.ResponseType != "ephemeral" {
		h.t.Fatalf("/approvals %s over Socket Mode: not an ephemeral reply (%v): %s", text, err, env.Ack)
	}
	return rep
}

func editJSON(t testing.TB, body []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	out, _ := json.Marshal(doc)
	return out
}

// The whole path over Socket Mode: a listing in the ack, a click recorded
// and acked, the signed decision response delivered.
func TestSocketModeApproveRoundTrip(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t)
	rcv := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(editJSON(t, simple(t, "sock-approve", []string{alice.id}, "C0APPROVALS"), withResponseURL(rcv.srv.URL)))
	other := h.postAndWait(simple(t, "sock-other", []string{bob.id}, "C0APPROVALS"))

	if got := h.socketSlash(alice, "all").ids(t); !sameSet(got, []string{id, other}) {
		t.Errorf("/approvals all over Socket Mode lists %v, want %s and %s", got, id, other)
	}
	if got := h.socketSlash(alice, "").ids(t); !sameSet(got, []string{id}) {
		t.Errorf("/approvals (mine) lists %v, want %s", got, id)
	}

	env := h.deliver("interactive", h.clickPayload(alice, id, "d1", button(blocks.ActionApprove, "true")))
	if env.Ack != nil {
		t.Errorf("a click's ack carries %s, want nothing", env.Ack)
	}
	rec, err := h.store.Get(ctxTimeout(t, guard), id)
	if err != nil || rec.Status != aah.StatusResolved || rec.Answers["d1"].By.ID != alice.id {
		t.Fatalf("after the click over Socket Mode: %v %+v %v", rec.Status, rec.Answers, err)
	}
	d := rcv.wait(t, guard)
	if !d.signatureOK || !strings.Contains(string(d.body), `"approved":true`) || !strings.Contains(string(d.body), id) {
		t.Errorf("decision response: signature %v, %s", d.signatureOK, d.body)
	}
	// Without a signing secret the HTTP Slack endpoints are not served.
	if r := h.sendInteraction(h.clickPayload(alice, other, "d1", button(blocks.ActionApprove, "true"))); r.Status != http.StatusNotFound {
		t.Errorf("POST /slack/interactions without a signing secret: %d, want 404", r.Status)
	}
	if got := metricValue(t, h.reg, "approvalbot_slack_socket_connected", nil); got != 1 {
		t.Errorf("approvalbot_slack_socket_connected = %v, want 1", got)
	}
	if r := h.do(http.MethodGet, "/readyz", "", "", nil); r.Status != http.StatusOK || r.json(t)["slack_socket"] != "connected" {
		t.Errorf("/readyz: %d %s", r.Status, r.Body)
	}
}

// Slack delivers an interaction envelope again, with the same envelope_id,
// when it got no ack in time. On a request still open, where a second
// recording would show, the click counts once.
func TestSocketModeRedeliveredClickRecordedOnce(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t)
	id := h.postAndWait(editJSON(t, simple(t, "sock-redeliver", []string{alice.id}, "C0APPROVALS"), func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = append(data["decisions"].([]any),
			map[string]any{"id": "d2", "type": "approval", "prompt": "Approve the budget?", "required": true})
	}))
	first := h.deliver("interactive", h.clickPayload(alice, id, "d1", button(blocks.ActionApprove, "true")))
	rec := h.record(id)
	if rec.Status != aah.StatusPartial || rec.Answers["d1"].By.ID != alice.id {
		t.Fatalf("after the first delivery: %v %+v, want d1 answered by Alice and the request open", rec.Status, rec.Answers)
	}

	// Our ack was lost: Slack sends the very same envelope again.
	ctx := ctxTimeout(t, guard)
	if _, err := h.emu.SendEnvelope(ctx, slackemu.Envelope{ID: first.ID, Type: first.Type, Payload: first.Payload}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.emu.WaitAck(ctx, first.ID); err != nil {
		t.Fatal("the redelivered envelope was not acked:", err)
	}
	again := h.record(id)
	if again.Version != rec.Version || again.Status != aah.StatusPartial || !reflect.DeepEqual(again.Answers["d1"], rec.Answers["d1"]) {
		t.Errorf("the redelivery changed the request: version %d -> %d, %v, d1 %+v -> %+v",
			rec.Version, again.Version, again.Status, rec.Answers["d1"], again.Answers["d1"])
	}
	if n := countEvents(auditEvents(t, h, id), "answered"); n != 1 {
		t.Errorf("the audit records %d answers, want 1", n)
	}
	acked := 0
	for _, e := range h.emu.SocketEnvelopes() {
		if e.ID == first.ID && e.Acked {
			acked++
		}
	}
	if acked != 2 {
		t.Errorf("%d deliveries of envelope %s acked, want both", acked, first.ID)
	}
}

// App Home over Socket Mode, and Slack's redelivery of an event envelope.
func TestSocketModeHomeOpenedOnce(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t)
	id := h.accept(simple(t, "sock-home", []string{alice.id}, "C0APPROVALS"))
	h.waitIdle()

	first := h.deliver("events_api", json.RawMessage(homeOpened(alice, "Ev0SOCKHOME1")))
	if first.Ack != nil || first.AcceptsResponsePayload {
		t.Errorf("event ack %s (accepts payload %v), want an empty ack", first.Ack, first.AcceptsResponsePayload)
	}
	h.waitHome(alice, "listed her request", func(ht homeTab) bool { return len(ht.waiting) == 1 && ht.waiting[0] == id })

	// Slack delivers the same envelope again (say our ack was lost): acked,
	// not processed twice.
	if _, err := h.emu.SendEnvelope(ctxTimeout(t, guard), slackemu.Envelope{ID: first.ID, Type: "events_api",
		Payload: first.Payload, RetryAttempt: 1, RetryReason: "timeout"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.emu.WaitAck(ctxTimeout(t, guard), first.ID); err != nil {
		t.Fatal(err)
	}
	// A later, distinct event is published; by then a duplicate would have been too.
	h.deliver("events_api", json.RawMessage(homeOpened(bob, "Ev0SOCKHOME2")))
	if perUser := h.publishesPerUser(2); perUser[alice.id] != 1 || perUser[bob.id] != 1 {
		t.Errorf("views.publish per user = %v, want one each", perUser)
	}
}

// A modal submitted over Socket Mode is validated like over HTTP: a bad
// number keeps it open with response_action errors in the ack.
func TestSocketModeViewSubmissionErrors(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t)
	id := h.postAndWait(exampleWith(t, "sock-budget", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = []any{map[string]any{"id": "budget", "type": "number", "prompt": "Budget in k$?",
			"required": true, "constraints": map[string]any{"min": 1, "max": 100}}}
	}))
	ref := blocks.ModalRef{RequestID: id, DecisionID: "budget", Channel: "C0APPROVALS"}
	env := h.deliver("interactive", submitPayload(alice, blocks.ModalInput, ref,
		map[string]map[string]any{"value": {"value": textInput("lots")}}))
	var ack struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(env.Ack, &ack); err != nil || ack.ResponseAction != "errors" || ack.Errors["value"] != "Enter a number." {
		t.Errorf("ack of a bad number = %s (%v), want response_action errors on value", env.Ack, err)
	}
	if rec, _ := h.store.Get(context.Background(), id); len(rec.Answers) != 0 {
		t.Errorf("a bad number was recorded: %+v", rec.Answers)
	}
	env = h.deliver("interactive", submitPayload(alice, blocks.ModalInput, ref,
		map[string]map[string]any{"value": {"value": textInput("42")}}))
	if env.Ack != nil {
		t.Errorf("ack of a good number = %s, want empty (the modal closes)", env.Ack)
	}
	if rec, _ := h.store.Get(context.Background(), id); rec.Status != aah.StatusResolved || rec.Answers["budget"].Value != 42.0 {
		t.Errorf("after a good number: %v %+v", rec.Status, rec.Answers)
	}
}

// Slack recycles Socket Mode connections; the bot reconnects, reports it,
// and keeps answering.
func TestSocketModeReconnects(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t)
	h.emu.DisconnectSockets("refresh_requested")
	deadline := time.Now().Add(guard)
	for total, open := h.emu.SocketConnects(); total < 2 || open != 1; total, open = h.emu.SocketConnects() {
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection: %d connections, %d open", total, open)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.socketSlash(alice, "help"); !strings.Contains(got.text(), "lists decision requests") {
		t.Errorf("help after reconnecting: %s", got.text())
	}
	if got := metricValue(t, h.reg, "approvalbot_slack_socket_connects_total", nil); got != 2 {
		t.Errorf("approvalbot_slack_socket_connects_total = %v, want 2", got)
	}
}

// Slack drops a Socket Mode ack of 20 KB or more, so a reply that large is
// acked empty and sent through the command's response_url instead.
func TestSocketModeLargeReplyGoesThroughResponseURL(t *testing.T) {
	t.Parallel()
	h := newSocketHarness(t)
	id := h.postAndWait(exampleWith(t, "sock-large", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		var decisions []any
		for d := range 8 {
			var opts []any
			for o := range 20 {
				label := strings.Repeat("x", 60) + fmt.Sprintf(" option %02d-%02d", d, o)
				opts = append(opts, map[string]any{"value": fmt.Sprintf("v%02d", o), "label": label})
			}
			decisions = append(decisions, map[string]any{"id": fmt.Sprintf("c%d", d), "type": "choice",
				"prompt": fmt.Sprintf("Pick %d", d), "options": opts, "required": false})
		}
		data["decisions"] = decisions
	}))
	got := make(chan slashReply, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep slashReply
		_ = json.NewDecoder(r.Body).Decode(&rep)
		got <- rep
	}))
	t.Cleanup(hook.Close)
	env := h.deliver("slash_commands", slack.SlashCommand{Command: "/approvals", Text: "show " + id, UserID: alice.id,
		ChannelID: "C0APPROVALS", ChannelName: "approvals", ResponseURL: hook.URL})
	if env.Ack != nil {
		t.Errorf("a %s reply was acked with a payload of %d bytes, want an empty ack", id, len(env.Ack))
	}
	select {
	case rep := <-got:
		raw, _ := json.Marshal(rep)
		if rep.ResponseType != "ephemeral" || len(raw) < 20*1024 || !strings.Contains(rep.text(), "option 07-19") {
			t.Errorf("response_url got %d bytes: %s", len(raw), rep.text())
		}
	case <-time.After(guard):
		t.Fatal("nothing was POSTed to response_url")
	}
}
