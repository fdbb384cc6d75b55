package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/client"
	"github.com/approvalbot/approvalbot/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress collects the progress notifications a client session receives.
type progress struct {
	mu   sync.Mutex
	msgs []string
	ch   chan string
}

func newProgress() *progress { return &progress{ch: make(chan string, 64)} }

func (p *progress) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.msgs = append(p.msgs, req.Params.Message)
	p.mu.Unlock()
	p.ch <- req.Params.Message
}

func (p *progress) next(t *testing.T, ctx context.Context) string {
	t.Helper()
	select {
	case m := <-p.ch:
		return m
	case <-ctx.Done():
		t.Fatal("no progress notification")
		return ""
	}
}

// stdioSession runs the stdio server (ForClient, as approvalbot mcp does)
// over in-memory transports and connects the SDK's client to it.
func stdioSession(t *testing.T, ctx context.Context, c *client.Client, p *progress) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	srv := mcpserver.ForClient(c, nil)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return connect(t, ctx, ct, p)
}

func connect(t *testing.T, ctx context.Context, tr mcp.Transport, p *progress) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if p != nil {
		opts.ProgressNotificationHandler = p.handler
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// httpSession connects the SDK's streamable HTTP client to /mcp with token.
func httpSession(t *testing.T, ctx context.Context, b *testBot, token string, p *progress) *mcp.ClientSession {
	t.Helper()
	return connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: b.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, p)
}

// call calls a tool and decodes its structured result.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams) (*mcp.CallToolResult, mcpserver.DecisionOutput) {
	t.Helper()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	var out mcpserver.DecisionOutput
	if !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: structured content %s: %v", params.Name, b, err)
		}
	}
	return res, out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// twoApprovals is request_decision's short form with two required approvals.
func twoApprovals(id string) map[string]any {
	return map[string]any{"id": id, "title": "Release v2", "context": "Both steps need a yes.",
		"deadline": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"decisions": []map[string]any{
			{"id": "migrate", "type": "approval", "prompt": "Run the migration?", "required": true},
			{"id": "ship", "type": "approval", "prompt": "Ship v2?", "required": true}},
		"extensions": map[string]any{"decisions": map[string]any{"ship": map[string]any{"responses": []string{"approve", "reject", "escalate"}}}}}
}

// waitWhileReviewersAnswer calls request_decision (waiting) on cs while
// Alice and Bob answer through the decision API, one answer after each
// progress notification, and checks the notifications and the result.
func waitWhileReviewersAnswer(t *testing.T, ctx context.Context, b *testBot, cs *mcp.ClientSession, p *progress, id string) {
	params := &mcp.CallToolParams{Name: "request_decision", Arguments: twoApprovals(id)}
	params.SetProgressToken("tok-" + id)
	type answer struct {
		res *mcp.CallToolResult
		out mcpserver.DecisionOutput
	}
	done := make(chan answer, 1)
	go func() {
		res, out := call(t, ctx, cs, params)
		done <- answer{res, out}
	}()
	b.waitStored(ctx, id)
	b.decide(id, "answers", aliceToken, `{"answers": {"migrate": true}, "comment": "schema reviewed"}`)
	if m := p.next(t, ctx); !strings.Contains(m, "input:received: Alice Reviewer answered migrate") {
		t.Errorf("first progress notification %q, want Alice's answer to migrate, by her name (api.md)", m)
	}
	select {
	case a := <-done:
		t.Fatalf("request_decision returned before the request closed: %s", text(a.res))
	default:
	}
	b.decide(id, "escalate", aliceToken, `{"to": "manager@example.com", "note": "ship needs a manager"}`)
	if m := p.next(t, ctx); !strings.HasPrefix(m, "escalated") {
		t.Errorf("progress notification %q, want the escalation", m)
	}
	b.decide(id, "answers", bobToken, `{"answers": {"ship": true}}`)
	if m := p.next(t, ctx); !strings.Contains(m, "ship") {
		t.Errorf("second progress notification %q, want the answer to ship", m)
	}
	b.decide(id, "submit", bobToken, `{}`) // with several decisions, Submit resolves
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		t.Fatal("request_decision never returned")
	}
	if a.res.IsError {
		t.Fatalf("request_decision: %s", text(a.res))
	}
	if a.out.ID != id || a.out.Status != "resolved" || a.out.Open || a.out.OverallStatus != "all_approved" || len(a.out.Answers) != 2 {
		t.Errorf("result %+v, want %s resolved all_approved with 2 answers", a.out, id)
	}
	if a.out.Response["artifact"] == nil {
		t.Errorf("result has no decision response: %+v", a.out)
	}
	txt := text(a.res)
	for _, want := range []string{id, "resolved", "all_approved", "- migrate: approved", `comment "schema reviewed"`, "- ship: approved"} {
		if !strings.Contains(txt, want) {
			t.Errorf("summary %q lacks %q", txt, want)
		}
	}
}

func TestStdioRequestDecisionWaitsWithProgress(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	p := newProgress()
	cs := stdioSession(t, ctx, b.client(), p)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "get_decision,request_decision,withdraw_decision" {
		t.Errorf("tools %v", names)
	}
	waitWhileReviewersAnswer(t, ctx, b, cs, p, "mcp-stdio-wait")
}

func TestHTTPRequestDecisionWaitsWithProgress(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	p := newProgress()
	waitWhileReviewersAnswer(t, ctx, b, httpSession(t, ctx, b, agentToken, p), p, "mcp-http-wait")
}

func TestHTTPNeedsTheIntakeToken(t *testing.T) {
	b := startBot(t)
	for _, auth := range []string{"", "Bearer not-a-token-0123456789"} {
		req, _ := http.NewRequest(http.MethodPost, b.url+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: %d (WWW-Authenticate %q), want 401 with a Bearer challenge", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// Stateless: no session stream to GET, no session to DELETE.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, b.url+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+agentToken)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /mcp: %d, want 405", method, resp.StatusCode)
		}
	}
	// The SDK's client without a token cannot connect.
	tr := &mcp.StreamableClientTransport{Endpoint: b.url + "/mcp"}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil).Connect(testCtx(t), tr, nil); err == nil {
		t.Error("connected to /mcp without a token")
	}
}

// Over HTTP: submit without waiting, read, withdraw; another agent's token
// sees none of it; a wait bounded by timeout_seconds returns the open request.
func TestHTTPNoWaitGetWithdraw(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	cs := httpSession(t, ctx, b, agentToken, nil)

	args := twoApprovals("mcp-nowait")
	args["wait"] = false
	res, out := call(t, ctx, cs, &mcp.CallToolParams{Name: "request_decision", Arguments: args})
	if res.IsError || out.ID != "mcp-nowait" || out.Status != "pending" || !out.Open {
		t.Fatalf("request_decision wait=false: %+v %s", out, text(res))
	}
	if v, err := b.client().Get(ctx, "mcp-nowait"); err != nil || v.Agent != "agent" {
		t.Fatalf("the request is not the token's agent's: %+v %v", v, err)
	}

	b.decide("mcp-nowait", "answers", aliceToken, `{"answers": {"migrate": false}, "comment": "not today"}`)
	res, out = call(t, ctx, cs, &mcp.CallToolParams{Name: "get_decision", Arguments: map[string]any{"id": "mcp-nowait"}})
	if res.IsError || !out.Open || len(out.Answers) != 2 || !strings.Contains(text(res), "- migrate: rejected") ||
		!strings.Contains(text(res), "- ship: not answered") {
		t.Errorf("get_decision while open: %+v %s", out, text(res))
	}

	// get_decision waiting, bounded: the request stays open.
	res, out = call(t, ctx, cs, &mcp.CallToolParams{Name: "get_decision",
		Arguments: map[string]any{"id": "mcp-nowait", "wait": true, "timeout_seconds": 0.3}})
	if res.IsError || !out.Open || out.Waiting != "timeout" {
		t.Errorf("get_decision wait with timeout: %+v %s", out, text(res))
	}

	// Another agent's token: refused, as on /v1.
	other := httpSession(t, ctx, b, otherToken, nil)
	res, _ = call(t, ctx, other, &mcp.CallToolParams{Name: "get_decision", Arguments: map[string]any{"id": "mcp-nowait"}})
	if !res.IsError || !strings.Contains(text(res), "403") {
		t.Errorf("another agent's get_decision: %s", text(res))
	}

	// The limits are the token's agent's: "other" may have one open request.
	for i, want := range []string{"", "429"} {
		args := twoApprovals("mcp-other-" + string(rune('a'+i)))
		args["wait"] = false
		res, _ = call(t, ctx, other, &mcp.CallToolParams{Name: "request_decision", Arguments: args})
		if res.IsError != (want != "") || !strings.Contains(text(res), want) || want != "" && !strings.Contains(text(res), "open_cap") {
			t.Errorf("other's request %d: %s", i+1, text(res))
		}
	}

	res, out = call(t, ctx, cs, &mcp.CallToolParams{Name: "withdraw_decision", Arguments: map[string]any{"id": "mcp-nowait"}})
	if res.IsError || out.Status != "withdrawn" || out.Open || !strings.Contains(text(res), "withdrawn") {
		t.Errorf("withdraw_decision: %+v %s", out, text(res))
	}
	res, _ = call(t, ctx, cs, &mcp.CallToolParams{Name: "withdraw_decision", Arguments: map[string]any{"id": "mcp-nowait"}})
	if !res.IsError || !strings.Contains(text(res), "409") {
		t.Errorf("withdrawing it again: %s", text(res))
	}
}

// Validation errors are tool errors naming the field: the bot's own (the
// artifact's path, as /v1 answers) and the short form's.
func TestValidationErrorsNameTheField(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	cs := stdioSession(t, ctx, b.client(), nil)
	bad := twoApprovals("mcp-invalid")
	bad["decisions"] = []map[string]any{{"id": "x", "type": "maybe", "prompt": "?", "required": true}}
	for _, tc := range []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"bot", bad, "content.body.data.decisions[0].type"},
		{"short form", map[string]any{"decisions": bad["decisions"]}, "title"},
		{"risk alone", map[string]any{"title": "t", "risk": map[string]any{"risk_level": "high"}}, "risk"},
		{"whole artifact", map[string]any{"request": map[string]any{"aah_version": "0.1"}}, "artifact"},
	} {
		res, _ := call(t, ctx, cs, &mcp.CallToolParams{Name: "request_decision", Arguments: tc.args})
		if !res.IsError || !strings.Contains(text(res), tc.field) {
			t.Errorf("%s: %v %q, want a tool error naming %s", tc.name, res.IsError, text(res), tc.field)
		}
	}
	if _, err := b.client().Get(ctx, "mcp-invalid"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("an invalid request was stored: %v", err)
	}
}

// proposed_action builds a single approval (client.RequireApproval's
// request); a reviewer's modify comes back with the edited parameters.
func TestProposedActionModified(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	cs := stdioSession(t, ctx, b.client(), nil)
	args := map[string]any{"id": "mcp-gate", "context": "Traffic doubled.",
		"proposed_action": map[string]any{"tool_name": "scale_service", "parameters": map[string]any{"replicas": 12},
			"editable": map[string]any{"replicas": map[string]any{"type": "integer", "maximum": 16}}},
		"risk": map[string]any{"risk_level": "medium"}}
	done := make(chan mcpserver.DecisionOutput, 1)
	go func() {
		_, out := call(t, ctx, cs, &mcp.CallToolParams{Name: "request_decision", Arguments: args})
		done <- out
	}()
	b.waitStored(ctx, "mcp-gate")
	b.decide("mcp-gate", "modify", bobToken, `{"decision_id": "action", "parameters": {"replicas": 8}}`)
	out := <-done
	if out.Status != "resolved" || len(out.Answers) != 1 || out.Answers[0]["modified"] != true {
		t.Fatalf("result %+v", out)
	}
	if p, _ := out.Answers[0]["parameters"].(map[string]any); p["replicas"] != float64(8) {
		t.Errorf("parameters %v, want replicas 8", out.Answers[0]["parameters"])
	}
}

// Cancelling the MCP call stops waiting and leaves the request open, unless
// withdraw_on_cancel asks for it to be withdrawn.
// Over stdio the SDK sends notifications/cancelled; over HTTP it closes the
// request.
func TestCancelStopsWaiting(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	for _, tc := range []struct {
		transport string
		withdraw  bool
	}{{"http", false}, {"http", true}, {"stdio", false}, {"stdio", true}} {
		cs := httpSession(t, ctx, b, agentToken, nil)
		if tc.transport == "stdio" {
			cs = stdioSession(t, ctx, b.client(), nil)
		}
		withdraw := tc.withdraw
		id := "mcp-cancel-" + tc.transport + "-" + map[bool]string{false: "keep", true: "withdraw"}[withdraw]
		args := twoApprovals(id)
		args["withdraw_on_cancel"] = withdraw
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "request_decision", Arguments: args})
			errc <- err
		}()
		b.waitStored(ctx, id)
		cancel()
		if err := <-errc; err == nil {
			t.Errorf("%s: the cancelled call returned no error", id)
		}
		want := map[bool]string{false: "pending", true: "withdrawn"}[withdraw]
		for {
			v, err := b.client().Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if string(v.Status) == want {
				break
			}
			if !withdraw || ctx.Err() != nil {
				t.Fatalf("%s: status %s, want %s", id, v.Status, want)
			}
			time.Sleep(20 * time.Millisecond) // the server sees the cancellation a moment later
		}
	}
}

// At shutdown (Service.Close, before the HTTP server stops) a waiting call
// returns the open request at once.
func TestShutdownEndsWaits(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	cs := httpSession(t, ctx, b, agentToken, nil)
	type answer struct {
		res *mcp.CallToolResult
		out mcpserver.DecisionOutput
	}
	done := make(chan answer, 1)
	go func() {
		res, out := call(t, ctx, cs, &mcp.CallToolParams{Name: "request_decision", Arguments: twoApprovals("mcp-shutdown")})
		done <- answer{res, out}
	}()
	b.waitStored(ctx, "mcp-shutdown")
	b.close()
	a := <-done
	if a.res.IsError || a.out.Status != "pending" || a.out.Waiting != "shutdown" || !strings.Contains(text(a.res), "shutting down") {
		t.Errorf("result at shutdown: %+v %s", a.out, text(a.res))
	}
}

// A tool's /v1 calls are logged with the /mcp request's id, so one search
// finds the MCP call and what it did.
func TestInnerCallsCarryTheRequestID(t *testing.T) {
	b := startBot(t)
	ctx := testCtx(t)
	tr := &withHeader{key: "X-Request-Id", value: "mcp-trace-42", next: bearer{token: agentToken, next: http.DefaultTransport}}
	cs := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: b.url + "/mcp", HTTPClient: &http.Client{Transport: tr}}, nil)
	args := twoApprovals("mcp-traced")
	args["wait"] = false
	if res, _ := call(t, ctx, cs, &mcp.CallToolParams{Name: "request_decision", Arguments: args}); res.IsError {
		t.Fatal(text(res))
	}
	var routes []string
	for line := range strings.SplitSeq(b.logs.String(), "\n") {
		var e struct {
			Msg, Route, RequestID string
			HTTPRequestID         string `json:"http_request_id"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "http request" && e.HTTPRequestID == "mcp-trace-42" {
			routes = append(routes, e.Route)
		}
	}
	if !slices.Contains(routes, "/v1/requests") || !slices.Contains(routes, "/mcp") {
		t.Errorf("routes logged with the MCP request's id: %v, want /v1/requests and /mcp", routes)
	}
}

type withHeader struct {
	key, value string
	next       http.RoundTripper
}

func (h *withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return h.next.RoundTrip(r)
}
