package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
)

// slashReply is an ephemeral command reply, as Slack receives it.
type slashReply struct {
	ResponseType    string          `json:"response_type"`
	ReplaceOriginal bool            `json:"replace_original"`
	Text            string          `json:"text"`
	Blocks          json.RawMessage `json:"blocks"`
}

var listedID = regexp.MustCompile("`([A-Za-z0-9_.:-]+)`\\s*$")

// ids lists the requests a listing shows, in order.
func (r slashReply) ids(t testing.TB) []string {
	t.Helper()
	var bs []struct {
		Type string
		Text *struct{ Text string }
	}
	if err := json.Unmarshal(r.Blocks, &bs); err != nil {
		t.Fatalf("reply blocks: %v", err)
	}
	var out []string
	for _, b := range bs {
		if b.Type == "section" && b.Text != nil {
			if m := listedID.FindStringSubmatch(b.Text.Text); m != nil && strings.Contains(b.Text.Text, "\n") {
				out = append(out, m[1])
			}
		}
	}
	return out
}

func (r slashReply) text() string { return slackemu.RenderText(r.Blocks) }

// button finds a button in the reply by action id (and block id, when given).
func (r slashReply) button(t testing.TB, actionID, blockID string) (value, gotBlock string, ok bool) {
	t.Helper()
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	_ = json.Unmarshal(r.Blocks, &bs)
	for _, b := range bs {
		for _, e := range b.Elements {
			if e.ActionID == actionID && (blockID == "" || b.BlockID == blockID) {
				return e.Value, b.BlockID, true
			}
		}
	}
	return "", "", false
}

// slashForm is a slash command body shaped like
// ../shared/slack-payloads/slash_command.docs_weather.body.
func slashForm(u slackUser, command, text, channelID, channelName, responseURL string) []byte {
	v := url.Values{}
	for k, val := range map[string]string{
		"token": "gIkuvaNzQIHg97ATvDxqgjtO", "team_id": "T0LOCAL", "team_domain": "local",
		"channel_id": channelID, "channel_name": channelName, "user_id": u.id,
		"user_name": strings.ToLower(strings.Fields(u.name)[0]), "command": command, "text": text,
		"response_url": responseURL, "trigger_id": fmt.Sprintf("%d.1.trigger", time.Now().UnixNano()),
		"api_app_id": "A0LOCAL",
	} {
		v.Set(k, val)
	}
	return []byte(v.Encode())
}

func (h *harness) sendCommandAt(body []byte, at time.Time, secret string) response {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/slack/commands", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("X-Slack-Signature", signV0(secret, at.Unix(), body))
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Body: b}
}

// slash runs "/approvals <text>" as u in channel C0APPROVALS (#approvals).
func (h *harness) slash(u slackUser, text string) slashReply {
	h.t.Helper()
	return h.slashIn(u, text, "C0APPROVALS", "approvals", "https://hooks.slack.invalid/commands/1")
}

func (h *harness) slashIn(u slackUser, text, channelID, channelName, responseURL string) slashReply {
	h.t.Helper()
	r := h.sendCommandAt(slashForm(u, "/approvals", text, channelID, channelName, responseURL), time.Now(), h.cfg.SlackSigningSecret)
	if r.Status != http.StatusOK {
		h.t.Fatalf("/approvals %s: %d %s", text, r.Status, r.Body)
	}
	var rep slashReply
	if err := json.Unmarshal(r.Body, &rep); err != nil || rep.ResponseType != "ephemeral" {
		h.t.Fatalf("/approvals %s: not an ephemeral reply (%v): %s", text, err, r.Body)
	}
	if probs := slackemu.ValidateBlocks(slackemu.SurfaceMessage, rep.Blocks); len(probs) > 0 {
		h.t.Fatalf("/approvals %s: invalid blocks: %v", text, probs)
	}
	return rep
}

// listed runs a listing and returns the ids on its first page.
func (h *harness) listed(u slackUser, text string) []string {
	h.t.Helper()
	return h.slash(u, text).ids(h.t)
}

// simple is seed 000's example reduced to a request with one approval
// decision, naming reviewers, posted to channel, without timers.
func simple(t testing.TB, id string, reviewers []string, channel string) []byte {
	return exampleWith(t, id, func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = data["decisions"].([]any)[:1]
		delete(data, "escalation")
		delete(data, "deadline")
		delete(doc["handoff"].(map[string]any), "response_deadline")
		sl := map[string]any{"reminders": map[string]any{"every": "1h", "max": 0}}
		if len(reviewers) > 0 {
			sl["reviewers"] = reviewers
		}
		if channel != "" {
			sl["channel"] = channel
		}
		doc["extensions"] = map[string]any{"slack": sl}
	})
}

func (h *harness) accept(body []byte) string {
	h.t.Helper()
	r := h.post(body)
	if r.Status != http.StatusAccepted {
		h.t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	return r.json(h.t)["id"].(string)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestSlashCommandSignatureAndCommandName(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := slashForm(alice, "/approvals", "all", "C0APPROVALS", "approvals", "")
	if r := h.sendCommandAt(body, time.Now(), "not-the-secret"); r.Status != http.StatusUnauthorized {
		t.Errorf("forged signature: %d", r.Status)
	}
	if r := h.sendCommandAt(body, time.Now().Add(-10*time.Minute), h.cfg.SlackSigningSecret); r.Status != http.StatusUnauthorized {
		t.Errorf("stale signature: %d", r.Status)
	}
	r := h.sendCommandAt(slashForm(alice, "/weather", "94070", "C0APPROVALS", "approvals", ""), time.Now(), h.cfg.SlackSigningSecret)
	if r.Status != http.StatusOK || !contains(string(r.Body), "ephemeral") || !contains(string(r.Body), "/approvals") {
		t.Errorf("another command: %d %s", r.Status, r.Body)
	}
}

func TestSlashCommandHelpAndShow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, text := range []string{"help", "frobnicate", "HELP me"} {
		if got := h.slash(alice, text).text(); !contains(got, "/approvals overdue") || !contains(got, "show <id>") {
			t.Errorf("%q: no help text:\n%s", text, got)
		}
	}
	if got := h.slash(alice, "show nope-123").text(); !contains(got, "no request with id") || !contains(got, "nope-123") {
		t.Errorf("unknown id: %s", got)
	}
	if got := h.slash(alice, "show").text(); !contains(got, "Which request") {
		t.Errorf("show without id: %s", got)
	}
	id := h.accept(simple(t, "cmd-show-1", []string{"U0ALICE"}, ""))
	rep := h.slash(alice, "show "+id)
	if !contains(rep.text(), "Approve Marketing Strategy") || !contains(rep.text(), "Approve target audience segments?") {
		t.Errorf("show: %s", rep.text())
	}
	if _, b, ok := rep.button(t, blocks.ActionApprove, h.blockID(id, "d1")); !ok {
		t.Errorf("show has no working Approve (block %q):\n%s", b, rep.Blocks)
	}
}

// mine, channel and all, each with what it must and must not list.
func TestSlashCommandListings(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	forAlice := h.accept(simple(t, "cmd-l-alice", []string{"U0ALICE"}, "C0APPROVALS"))
	forBoth := h.accept(simple(t, "cmd-l-both", []string{"U0BOB", "U0ALICE"}, "#approvals"))
	forBob := h.accept(simple(t, "cmd-l-bob", []string{"U0BOB"}, "C0OTHER"))
	byEmail := h.accept(simple(t, "cmd-l-email", []string{"alice@example.com"}, "C0OTHER"))
	nobody := h.accept(simple(t, "cmd-l-nobody", nil, "C0OTHER"))
	h.waitIdle() // posted: the email resolved and the mention indexed Alice

	// The request naming nobody waits for the workspace's default
	// reviewers (Alice and Bob here, DEFAULT_REVIEWERS), who decide it.
	if got := h.listed(alice, ""); !sameSet(got, []string{forAlice, forBoth, byEmail, nobody}) {
		t.Errorf("alice mine = %v", got)
	}
	if got := h.listed(alice, "mine"); !sameSet(got, []string{forAlice, forBoth, byEmail, nobody}) {
		t.Errorf("alice mine = %v", got)
	}
	if got := h.listed(bob, "mine"); !sameSet(got, []string{forBoth, forBob, nobody}) {
		t.Errorf("bob mine = %v", got)
	}
	if rep := h.slash(mallory, "mine"); len(rep.ids(t)) != 0 || !contains(rep.text(), "Nothing is waiting for you") {
		t.Errorf("mallory mine = %s", rep.text())
	}
	// The channel by id and by name: both were configured that way.
	if got := h.listed(alice, "channel"); !sameSet(got, []string{forAlice, forBoth}) {
		t.Errorf("channel = %v", got)
	}
	if got := h.slashIn(alice, "channel", "C0OTHER", "other", "").ids(t); !sameSet(got, []string{forBob, byEmail, nobody}) {
		t.Errorf("other channel = %v", got)
	}
	if got := h.slashIn(alice, "channel", "C0EMPTY", "empty", "").text(); !contains(got, "No open request") {
		t.Errorf("empty channel: %s", got)
	}
	if got := h.listed(mallory, "all"); !sameSet(got, []string{forAlice, forBoth, forBob, byEmail, nobody}) {
		t.Errorf("all = %v", got)
	}
	// Closed, it leaves the default reviewers' lists with the others.
	if r := h.do(http.MethodDelete, "/v1/requests/"+nobody, tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("withdraw %s: %d %s", nobody, r.Status, r.Body)
	}
	if got := h.listed(bob, "mine"); !sameSet(got, []string{forBoth, forBob}) {
		t.Errorf("bob mine after %s was withdrawn = %v", nobody, got)
	}
	// A listed request shows its agent, what is unanswered and a permalink.
	text := h.slash(alice, "mine").text()
	for _, want := range []string{"Approve Marketing Strategy", "Approve target audience segments?", "Open", "received"} {
		if !contains(text, want) {
			t.Errorf("listing lacks %q:\n%s", want, text)
		}
	}
}

// Overdue: past the deadline (the expire timer has not run yet) or escalated.
func TestSlashCommandOverdue(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	now := clk.Now()
	soon := h.accept(timed(t, "cmd-od-soon", now.Add(time.Hour).Truncate(time.Second), "", "https://agent.invalid/cb"))
	later := h.accept(timed(t, "cmd-od-later", now.Add(72*time.Hour).Truncate(time.Second), "", "https://agent.invalid/cb"))
	if got := h.listed(alice, "overdue"); len(got) != 0 {
		t.Errorf("overdue before any deadline = %v", got)
	}
	clk.Set(now.Add(2 * time.Hour))
	if got := h.listed(alice, "overdue"); !sameSet(got, []string{soon}) {
		t.Errorf("overdue = %v, want only %s (not %s)", got, soon, later)
	}
	if text := h.slash(alice, "overdue").text(); !contains(text, "overdue") {
		t.Errorf("overdue listing does not say so:\n%s", text)
	}
	// The expire timer closes it: it leaves every list.
	h.startJobs()
	h.waitStatus(soon, aah.StatusExpired)
	for _, sub := range []string{"overdue", "all", "channel"} {
		if got := h.listed(alice, sub); slices.Contains(got, soon) {
			t.Errorf("%s still lists the expired request: %v", sub, got)
		}
	}
	if got := h.listed(alice, "all"); !sameSet(got, []string{later}) {
		t.Errorf("all = %v", got)
	}
}

// An escalated request is overdue and its target finds it in "mine".
func TestSlashCommandEscalated(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk))
	h.startJobs()
	now := clk.Now()
	id := h.postAndWait(escalating(t, "cmd-esc", now, []string{"U0ALICE"}, step("1h", "manager@example.com")))
	other := h.postAndWait(escalating(t, "cmd-esc-not", now, []string{"U0ALICE"}, step("5h", "manager@example.com")))
	if got := h.listed(manager, "mine"); len(got) != 0 {
		t.Errorf("manager mine before escalation = %v", got)
	}
	clk.Set(now.Add(time.Hour + time.Second))
	h.waitStatus(id, aah.StatusEscalated)
	if got := h.listed(alice, "overdue"); !sameSet(got, []string{id}) {
		t.Errorf("overdue = %v (not %s)", got, other)
	}
	if got := h.listed(manager, "mine"); !sameSet(got, []string{id}) {
		t.Errorf("manager mine after escalation = %v", got)
	}
	if got := h.listed(alice, "mine"); !sameSet(got, []string{id, other}) {
		t.Errorf("alice mine = %v", got)
	}
	// Withdrawn: gone from every list, including the escalation target's.
	if r := h.do(http.MethodDelete, "/v1/requests/"+id, tokenPM, "", nil); r.Status >= 300 {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	for _, c := range []struct {
		u   slackUser
		sub string
	}{{manager, "mine"}, {alice, "mine"}, {alice, "overdue"}, {alice, "all"}} {
		if got := h.listed(c.u, c.sub); slices.Contains(got, id) {
			t.Errorf("%s %s still lists the withdrawn request: %v", c.u.id, c.sub, got)
		}
	}
}

// Approve from a listing: the click carries the list's block id and is
// recorded; the resolved request leaves every list.
func TestSlashCommandQuickApprove(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(simple(t, "cmd-quick", []string{"U0ALICE"}, ""))
	keep := h.postAndWait(simple(t, "cmd-quick-keep", []string{"U0ALICE"}, ""))
	h.waitIdle()
	rep := h.slash(alice, "mine")
	val, blockID, ok := rep.button(t, blocks.ActionApprove, h.blockID(id, "d1"))
	if !ok {
		t.Fatalf("no quick Approve for %s:\n%s", id, rep.Blocks)
	}
	a := button(blocks.ActionApprove, val)
	a["block_id"] = blockID
	ok2(t, h.sendInteraction(map[string]any{
		"type": "block_actions", "team": map[string]any{"id": "T0LOCAL"},
		"user":         map[string]any{"id": alice.id, "name": "Alice"},
		"container":    map[string]any{"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0APPROVALS", "is_ephemeral": true},
		"channel":      map[string]any{"id": "C0APPROVALS", "name": "approvals"},
		"response_url": "https://hooks.slack.invalid/actions/1",
		"trigger_id":   "1.1.trigger",
		"actions":      []any{a},
	}))
	rec := h.waitStatus(id, aah.StatusResolved)
	if rec.Answers["d1"].Value != true || rec.ResolvedBy.ID != alice.id {
		t.Errorf("answer = %+v by %+v", rec.Answers["d1"], rec.ResolvedBy)
	}
	for _, sub := range []string{"mine", "all", "channel"} {
		if got := h.listed(alice, sub); slices.Contains(got, id) || !slices.Contains(got, keep) {
			t.Errorf("%s after approval = %v", sub, got)
		}
	}
	// A rejection resolves too, and a multi-decision request has no quick buttons.
	rep = h.slash(alice, "mine")
	if _, _, ok := rep.button(t, blocks.ActionReject, h.blockID(keep, "d1")); !ok {
		t.Fatalf("no quick Reject:\n%s", rep.Blocks)
	}
	ok2(t, h.click(alice, keep, "d1", button(blocks.ActionReject, "false")))
	h.waitStatus(keep, aah.StatusResolved)
	if got := h.listed(alice, "all"); len(got) != 0 {
		t.Errorf("all after both resolved = %v", got)
	}
	multi := h.accept(exampleWith(t, "cmd-quick-multi", func(doc map[string]any) {
		doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []string{"U0ALICE"}}}
	}))
	rep = h.slash(alice, "mine")
	if !slices.Contains(rep.ids(t), multi) {
		t.Fatalf("multi-decision request not listed: %v", rep.ids(t))
	}
	if _, _, ok := rep.button(t, blocks.ActionApprove, ""); ok {
		t.Errorf("a multi-decision request got quick buttons:\n%s", rep.Blocks)
	}
}

func ok2(t *testing.T, r response) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("interaction: %d %s", r.Status, r.Body)
	}
}

// responseURL records what approvalbot POSTs to a response_url.
type responseURL struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []slashReply
	more chan struct{}
}

func newResponseURL(t *testing.T) *responseURL {
	r := &responseURL{more: make(chan struct{}, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var rep slashReply
		if err := json.NewDecoder(req.Body).Decode(&rep); err != nil || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("response_url got a bad body (%v)", err)
		}
		r.mu.Lock()
		r.got = append(r.got, rep)
		r.mu.Unlock()
		r.more <- struct{}{}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *responseURL) next(t *testing.T) slashReply {
	t.Helper()
	select {
	case <-r.more:
	case <-time.After(guard):
		t.Fatal("nothing POSTed to response_url")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

// clickNext presses a listing's Next page button.
func (h *harness) clickNext(u slackUser, rep slashReply, respURL string) response {
	h.t.Helper()
	val, blockID, ok := rep.button(h.t, blocks.ActionListPage, "")
	if !ok {
		h.t.Fatalf("no Next page button:\n%s", rep.Blocks)
	}
	a := button(blocks.ActionListPage, val)
	a["block_id"] = blockID
	return h.sendInteraction(map[string]any{
		"type": "block_actions", "team": map[string]any{"id": "T0LOCAL"},
		"user":         map[string]any{"id": u.id, "name": u.name},
		"container":    map[string]any{"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0APPROVALS", "is_ephemeral": true},
		"channel":      map[string]any{"id": "C0APPROVALS", "name": "approvals"},
		"response_url": respURL, "trigger_id": "1.1.trigger",
		"actions": []any{a},
	})
}

// createDirect stores n pending single-approval requests naming U0ALICE,
// concurrently, through the store (not through Slack posting).
func createDirect(t testing.TB, h *harness, prefix string, n int) []string {
	t.Helper()
	tmpl := simple(t, "x", []string{"U0ALICE"}, "")
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%05d", prefix, i)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			doc := bytes.Replace(tmpl, []byte(`"id":"x"`), []byte(`"id":"`+ids[i]+`"`), 1)
			_, _, err := h.store.Create(context.Background(), store.NewRequest{ID: ids[i], Agent: "pm", Document: doc,
				BodyHash: "h-" + ids[i], Channel: "C0APPROVALS", Reviewers: []string{"U0ALICE"}})
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

// 25 open requests: three pages of 10, 10 and 5, no duplicates; Next page
// answers through response_url, replacing the listing.
func TestSlashCommandPaging(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ids := createDirect(t, h, "cmd-page", 25)
	rurl := newResponseURL(t)
	for _, sub := range []string{"all", "mine", "channel"} {
		rep := h.slashIn(alice, sub, "C0APPROVALS", "approvals", rurl.srv.URL)
		var seen []string
		for page := 1; ; page++ {
			got := rep.ids(t)
			if want := []int{10, 10, 5}[min(page, 3)-1]; len(got) != want {
				t.Fatalf("%s page %d: %d requests, want %d", sub, page, len(got), want)
			}
			seen = append(seen, got...)
			if _, _, more := rep.button(t, blocks.ActionListPage, ""); !more {
				if page != 3 {
					t.Fatalf("%s: last page is %d", sub, page)
				}
				break
			}
			ok2(t, h.clickNext(alice, rep, rurl.srv.URL))
			rep = rurl.next(t)
			if !rep.ReplaceOriginal || rep.ResponseType != "ephemeral" {
				t.Errorf("next page is not an ephemeral replacement: %+v", rep)
			}
			if probs := slackemu.ValidateBlocks(slackemu.SurfaceMessage, rep.Blocks); len(probs) > 0 {
				t.Fatalf("invalid blocks: %v", probs)
			}
		}
		if want := agentOrder(t, h); !slices.Equal(seen, want) || !sameSet(seen, ids) { // oldest first, ties by id; no duplicates
			t.Errorf("%s listed %d ids, want the 25 in order:\n got %v\nwant %v", sub, len(seen), seen, want)
		}
	}
}

// 5,000 pending requests: "all" answers its first page synchronously.
func TestSlashCommandThousandsPending(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("creates 5,000 requests")
	}
	h := newHarness(t)
	start := time.Now()
	ids := createDirect(t, h, "cmd-5k", 5000)
	created := time.Since(start)
	start = time.Now()
	rep := h.slash(alice, "all")
	took := time.Since(start)
	order := agentOrder(t, h)
	if len(order) != len(ids) || !sameSet(order, ids) {
		t.Fatalf("the agent's listing has %d requests", len(order))
	}
	if got := rep.ids(t); !slices.Equal(got, order[:10]) {
		t.Errorf("first page = %v, want %v", got, order[:10])
	}
	if _, _, more := rep.button(t, blocks.ActionListPage, ""); !more {
		t.Error("no Next page with 5,000 pending")
	}
	start = time.Now()
	mine := h.slash(alice, "mine")
	tookMine := time.Since(start)
	if got := mine.ids(t); !slices.Equal(got, order[:10]) {
		t.Errorf("mine first page = %v", got)
	}
	t.Logf("5,000 pending: created in %v; /approvals all answered in %v, mine in %v", created, took, tookMine)
}

// agentOrder lists agent pm's pending requests through the intake API's
// store listing (by received time, then id): the order listings must follow.
func agentOrder(t testing.TB, h *harness) []string {
	t.Helper()
	var out []string
	q := store.ListQuery{Agent: "pm", Status: aah.StatusPending, Limit: store.MaxPageSize}
	for {
		page, err := h.store.List(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			out = append(out, r.ID)
		}
		if page.NextCursor == "" {
			return out
		}
		q.Cursor = page.NextCursor
	}
}
