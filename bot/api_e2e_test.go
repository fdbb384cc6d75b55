package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/slack-go/slack"
)

func TestAgentsMustAuthenticate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, token := range map[string]string{"none": "", "wrong": "not-a-real-token-at-all", "prefix of a real one": tokenPM[:10]} {
		r := h.do(http.MethodPost, "/v1/requests", token, "application/json", example(t))
		if r.Status != http.StatusUnauthorized || !strings.Contains(string(r.Body), "unauthorized") {
			t.Errorf("%s token: %d %s, want 401", name, r.Status, r.Body)
		}
	}
	if r := h.do(http.MethodGet, "/v1/requests", "", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("list without token: %d", r.Status)
	}
	if r := h.post(example(t)); r.Status != http.StatusAccepted {
		t.Errorf("valid token: %d", r.Status)
	}
}

// Only the agent that created a request may read or withdraw it.
func TestOtherAgentsCannotReadOrWithdraw(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.post(example(t))
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		r := h.do(method, "/v1/requests/aah_decision_abc123", tokenOther, "", nil)
		if r.Status != http.StatusForbidden {
			t.Errorf("%s by another agent: %d %s, want 403", method, r.Status, r.Body)
		}
	}
	if got := h.get("aah_decision_abc123"); got["status"] != "pending" {
		t.Errorf("status after a refused withdraw = %v", got["status"])
	}
	if r := h.do(http.MethodGet, "/v1/requests/nope", tokenPM, "", nil); r.Status != http.StatusNotFound {
		t.Errorf("unknown id: %d", r.Status)
	}
	page := h.do(http.MethodGet, "/v1/requests", tokenOther, "", nil).json(t)
	if items := page["items"].([]any); len(items) != 0 {
		t.Errorf("another agent's list shows %d of pm's requests", len(items))
	}
}

func TestIntakeRejectsBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *configT, _ *depsT) { c.IntakeMaxBodyBytes = 64 << 10 })
	tooManyOptions := exampleWith(t, "too-many", func(doc map[string]any) {
		d3 := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)["decisions"].([]any)[2].(map[string]any)
		var opts []any
		for i := range 101 {
			opts = append(opts, map[string]any{"value": fmt.Sprint("v", i), "label": fmt.Sprint("Option ", i)})
		}
		d3["options"] = opts
		d3["default"] = "v1"
	})
	twoProblems := exampleWith(t, "two", func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["deadline"] = "tomorrow"
		data["decisions"].([]any)[1].(map[string]any)["type"] = "vote"
	})
	cases := []struct {
		name        string
		contentType string
		body        []byte
		status      int
		fields      []string
	}{
		{"not JSON media type", "text/plain", example(t), http.StatusUnsupportedMediaType, nil},
		{"no media type", "", example(t), http.StatusUnsupportedMediaType, nil},
		{"body too large", "application/json", []byte(`{"pad":"` + strings.Repeat("x", 70<<10) + `"}`), http.StatusRequestEntityTooLarge, nil},
		{"malformed JSON", "application/json", []byte(`{"aah_version":`), http.StatusBadRequest, []string{""}},
		{"every problem at once", "application/json", twoProblems, http.StatusBadRequest,
			[]string{"content.body.data.deadline", "content.body.data.decisions[1].type"}},
		{"more options than Slack allows", "application/json", tooManyOptions, http.StatusBadRequest,
			[]string{"content.body.data.decisions[2].options"}},
		{"charset parameter is fine", "application/json; charset=utf-8", exampleWith(t, "charset", nil), http.StatusAccepted, nil},
	}
	for _, c := range cases {
		r := h.do(http.MethodPost, "/v1/requests", tokenPM, c.contentType, c.body)
		if r.Status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.Status, r.Body, c.status)
			continue
		}
		if r.Status >= 400 {
			var e struct {
				Error   string `json:"error"`
				Details []struct{ Field, Message string }
			}
			if err := json.Unmarshal(r.Body, &e); err != nil || e.Error == "" {
				t.Errorf("%s: error body %s is not {error, details}", c.name, r.Body)
			}
			got := map[string]bool{}
			for _, d := range e.Details {
				got[d.Field] = true
			}
			for _, f := range c.fields {
				if !got[f] {
					t.Errorf("%s: no detail for field %q in %s", c.name, f, r.Body)
				}
			}
		}
	}
	if page := h.do(http.MethodGet, "/v1/requests", tokenPM, "", nil).json(t); len(page["items"].([]any)) != 1 {
		t.Errorf("rejected requests were stored: %v", page["items"])
	}
}

func TestChannelIsRequiredWithoutDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *configT, _ *depsT) { c.SlackDefaultChannel = "" })
	r := h.post(example(t))
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "extensions.slack.channel") {
		t.Errorf("no channel anywhere: %d %s", r.Status, r.Body)
	}
	if r := h.post(exampleWith(t, "with-channel", setChannel("#general"))); r.Status != http.StatusAccepted {
		t.Errorf("explicit channel: %d %s", r.Status, r.Body)
	}
}

// Withdrawing a posted request updates its message: the controls are gone.
func TestWithdrawUpdatesTheMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	h.post(example(t))
	msgs, err := h.emu.WaitForMessages(ctxTimeout(t, guard), "C0APPROVALS", 1)
	if err != nil {
		t.Fatal(err)
	}
	r := h.do(http.MethodDelete, "/v1/requests/aah_decision_abc123", tokenPM, "", nil)
	if r.Status != http.StatusOK || r.json(t)["status"] != "withdrawn" || r.json(t)["withdrawn_at"] == nil {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if _, err := h.emu.WaitForCalls(ctxTimeout(t, guard), "chat.update", 1); err != nil {
		t.Fatal(err)
	}
	h.waitIdle()
	m, _ := h.emu.Message("C0APPROVALS", msgs[0].TS)
	if m.Edited != 1 || strings.Contains(string(m.Blocks), `"type":"actions"`) || !strings.Contains(string(m.Blocks), "Withdrawn") {
		t.Errorf("message after withdraw (edited %d): %s", m.Edited, slackemu.RenderText(m.Blocks))
	}
	if r := h.do(http.MethodDelete, "/v1/requests/aah_decision_abc123", tokenPM, "", nil); r.Status != http.StatusConflict {
		t.Errorf("second DELETE: %d %s, want 409", r.Status, r.Body)
	}
	if len(h.emu.CallsTo("chat.postMessage")) != 1 {
		t.Errorf("withdraw caused another post")
	}
}

// Withdrawing before the message was posted cancels the post.
func TestWithdrawBeforePostCancelsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.post(example(t))
	if r := h.do(http.MethodDelete, "/v1/requests/aah_decision_abc123", tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.startJobs()
	h.waitIdle()
	if n := len(h.emu.Calls()) - len(h.emu.CallsTo("auth.test")); n != 0 {
		t.Errorf("%d Slack calls for a request withdrawn before posting", n)
	}
	if st := h.get("aah_decision_abc123")["slack"].(map[string]any)["state"]; st != "cancelled" {
		t.Errorf("slack state = %v, want cancelled", st)
	}
}

// A post that reached Slack with its answer lost (a 502 after acting), then
// a withdrawal before the post's retry: the retry is not cancelled with the
// post, so it finds the message, adopts it and the sync shows the request
// withdrawn. Cancelled, the message kept its live buttons, unrecorded.
func TestWithdrawAfterALostPostAnswerAdoptsTheMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.accept(exampleWith(t, "lost-then-withdrawn", setChannel("C0APPROVALS")))
	h.postWithLostAnswer(t, id, "C0APPROVALS")
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	h.startJobs()
	h.waitIdle()
	m := h.emu.Messages("C0APPROVALS")[0]
	rec := h.record(id)
	if !rec.Posted() || m.Edited == 0 || hasControls(m) {
		t.Errorf("request is %s; its message in Slack: recorded %v, edited %d times, live controls %v, text %q; "+
			"want it adopted and updated to show the withdrawal", rec.Status, rec.Posted(), m.Edited, hasControls(m), m.Text)
	}
	if n := len(h.emu.CallsTo("chat.postMessage")); n != 1 {
		t.Errorf("%d chat.postMessage calls, want the one whose answer was lost", n)
	}
}

func TestListPagesThroughAnAgentsRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 7 {
		h.post(exampleWith(t, fmt.Sprintf("list-%d", i), nil))
	}
	h.do(http.MethodDelete, "/v1/requests/list-3", tokenPM, "", nil)
	seen := map[string]bool{}
	next := "/v1/requests?status=pending&limit=4"
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("pagination does not end")
		}
		page := h.do(http.MethodGet, next, tokenPM, "", nil).json(t)
		for _, it := range page["items"].([]any) {
			item := it.(map[string]any)
			if item["status"] != "pending" || seen[item["id"].(string)] {
				t.Errorf("unexpected item %v (seen before: %v)", item["id"], seen[item["id"].(string)])
			}
			seen[item["id"].(string)] = true
		}
		next, _ = page["links"].(map[string]any)["next"].(string)
	}
	if len(seen) != 6 || seen["list-3"] {
		t.Errorf("listed %v, want the 6 pending requests", seen)
	}
	for _, bad := range []string{"?status=done", "?limit=0", "?limit=x", "?cursor=!!"} {
		if r := h.do(http.MethodGet, "/v1/requests"+bad, tokenPM, "", nil); r.Status != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, r.Status)
		}
	}
}

func TestHealthReadinessAndMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if r := h.do(http.MethodGet, "/healthz", "", "", nil); r.Status != http.StatusOK {
		t.Errorf("/healthz: %d %s", r.Status, r.Body)
	}
	// Not ready until auth.test has confirmed the bot token (RunJobs does).
	if r := h.do(http.MethodGet, "/readyz", "", "", nil); r.Status != http.StatusServiceUnavailable ||
		r.json(t)["redis"] != "ok" || !strings.Contains(r.json(t)["slack"].(string), "not confirmed yet") {
		t.Errorf("/readyz before auth.test: %d %s", r.Status, r.Body)
	}
	h.post(example(t))
	// Its post is due from its arrival, to the microsecond: the scrape
	// counts it once the clock is past that millisecond. Its App Home
	// refresh is due a second after the create, so maybe by then too on a
	// slow machine.
	var r response
	for deadline := time.Now().Add(guard); ; {
		r = h.do(http.MethodGet, "/metrics", "", "", nil)
		body := string(r.Body)
		if strings.Contains(body, "approvalbot_outbox_jobs{state=\"due\"} 1\n") ||
			strings.Contains(body, "approvalbot_outbox_jobs{state=\"due\"} 2\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks the due jobs (its post, maybe its App Home refresh):\n%s", body)
		}
	}
	for _, want := range []string{
		`approvalbot_intake_requests_total{outcome="accepted"} 1`,
		`approvalbot_outbox_scrape_ok 1`,
		`approvalbot_open_requests{age="<1h"} 1`, // read from Redis at the scrape
		`approvalbot_open_requests_scrape_ok 1`,
		`approvalbot_decisions_total{outcome="approved"} 0`, // every outcome, from the start
		`approvalbot_store_later_writes_lost_total{reason="failed",write="open_confirm"} 0`,
		`approvalbot_store_later_writes_lost_total{reason="dropped",write="post_deferral"} 0`,
	} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	h.startJobs()
	h.waitSlackReady()
	if r := h.do(http.MethodGet, "/readyz", "", "", nil); r.Status != http.StatusOK || r.json(t)["slack"] != "ok" {
		t.Errorf("/readyz: %d %s", r.Status, r.Body)
	}
}

// gatedLookup holds the first users.lookupByEmail (a post resolving the
// reviewers it mentions, before it counts its attempt) until released.
type gatedLookup struct {
	*slack.Client
	entered, release chan struct{}
	once             sync.Once
}

func (g *gatedLookup) GetUserByEmailContext(ctx context.Context, email string) (*slack.User, error) {
	g.once.Do(func() { close(g.entered); <-g.release })
	return g.Client.GetUserByEmailContext(ctx, email)
}

// A withdrawal that lands while the post job is under way, after it read
// the request open and before it counted its attempt, stops the post: the
// attempt is counted only while the request is open, in one step. The
// message was posted with live buttons, then updated to say withdrawn.
func TestWithdrawDuringThePostsRunPostsNothing(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	gate := &gatedLookup{Client: emuClient(emu), entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarnessOn(t, rdb, prefix, emu, func(_ *configT, d *depsT) { d.Slack = gate })
	id := h.accept(simple(t, "withdrawn-mid-post", []string{"alice@example.com"}, "C0APPROVALS"))
	h.startJobs()
	<-gate.entered // the post job read the request open and is resolving its reviewers
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	close(gate.release)
	h.waitIdle()
	if n := len(h.emu.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("%d chat.postMessage calls for a request withdrawn before its attempt was counted", n)
	}
	if st := h.get(id)["slack"].(map[string]any)["state"]; st != "cancelled" {
		t.Errorf("slack state = %v, want cancelled", st)
	}
}
