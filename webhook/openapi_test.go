package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// The OpenAPI document (webhook/openapi.json, served at /openapi.json) is
// checked against the running server with libopenapi-validator (OpenAPI
// 3.1, JSON Schema 2020-12): every request the test sends is valid under
// it, every answer the server gives (successes and errors) matches it, and
// every operation it describes is exercised with a success and an error.

// operations are the document's "METHOD /path" operations, as ServeMux
// patterns ("GET /v1/requests/{id}").
func operations(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	mustNil(t, json.Unmarshal(doc, &d))
	var ops []string
	for path, item := range d.Paths {
		for method := range item {
			if method == "parameters" || strings.HasPrefix(method, "x-") {
				continue
			}
			ops = append(ops, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(ops)
	return ops
}

// fullAPI is an API with every optional part on: decisions, verbs,
// standing approvals, event streams and long polls.
func (e *env) fullAPI(edit func(*webhook.Options)) *api {
	e.t.Helper()
	reviewers, err := webhook.ParseReviewerTokens("U0ALICE:" + tokenAlice + ",U0BOB:" + tokenBob +
		",U0CAROL:" + tokenCarol + ",U0ADMIN:" + tokenAdmin)
	mustNil(e.t, err)
	approvers, err := webhook.ParseAgentApprovers([]string{"other:U0ALICE"})
	mustNil(e.t, err)
	core := approval.New(e.st, approval.Options{Now: e.now, Policy: approval.Policy{Admins: []string{"U0ADMIN"}},
		Grants: approval.StandingApprovals{Store: e.st, Max: time.Hour, LookupBudget: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	changes := e.st.SubscribeChanges(ctx, 2)
	hub := webhook.NewEventHub(ctx, e.st, changes.Consumers[0], webhook.EventHubOptions{Creations: changes})
	waiters := webhook.NewWaiters(changes.Consumers[1])
	return e.api(func(o *webhook.Options) {
		o.Lifecycle, o.Decisions, o.Reviewers, o.AgentApprovers = core, core, reviewers, approvers
		o.Names = names{}
		o.Events, o.Waiters = hub, waiters
		o.Now = func() time.Time { return seedAt }
		o.AllowInsecureCallbacks = true
		o.MaxBodyBytes = 256 << 10
		if edit != nil {
			edit(o)
		}
	})
}

// Every route the API registers is in the document, and every operation
// of the document is a route the mux serves.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, err := webhook.New(webhook.Options{Store: e.st, Lifecycle: approval.New(e.st, approval.Options{}), AllowAnonymous: true,
		Decisions: approval.New(e.st, approval.Options{}), Events: &webhook.EventHub{}})
	mustNil(t, err)
	registered := webhook.Routes(a)
	sort.Strings(registered)
	documented := operations(t, webhook.OpenAPIJSON)
	for _, r := range registered {
		if r == "/v1/" {
			continue // the catch-all answering unknown paths and methods
		}
		if !slices.Contains(documented, r) {
			t.Errorf("route %q is registered but not in openapi.json", r)
		}
	}
	mux := http.NewServeMux()
	a.Register(mux)
	for _, op := range documented {
		if !slices.Contains(registered, op) {
			t.Errorf("operation %q is in openapi.json but not registered", op)
		}
		method, path, _ := strings.Cut(op, " ")
		req := httptest.NewRequest(method, strings.NewReplacer("{id}", "x1", "{name}", "n1").Replace(path), nil)
		if _, pattern := mux.Handler(req); pattern != op {
			t.Errorf("%s %s is served by %q, want %q", method, req.URL.Path, pattern, op)
		}
	}
	if len(registered) < 20 {
		t.Errorf("only %d routes registered: %v", len(registered), registered)
	}
}

// contract validates exchanges with the server against the document it
// serves, and records which operation answered which status.
type contract struct {
	t       *testing.T
	srv     *httptest.Server
	v       validator.Validator
	event   *base.Schema
	mu      sync.Mutex
	covered map[string][]int // operation -> statuses seen
	ops     []string
}

// newContract fetches /openapi.json and the schemas it references from the
// server and builds the validator from them.
func newContract(t *testing.T, a *api) *contract {
	t.Helper()
	get := func(path string) []byte {
		resp, err := a.srv.Client().Get(a.srv.URL + path)
		mustNil(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		mustNil(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	spec := get("/openapi.json")
	if !bytes.Equal(spec, webhook.OpenAPIJSON) {
		t.Fatal("GET /openapi.json is not webhook/openapi.json")
	}
	// The document refers to the schemas as schemas/<name>, relative to
	// itself: load them from the server, as a client resolving it would.
	fsys := fstest.MapFS{}
	for _, name := range []string{"decision-request.schema.json", "decision-response.schema.json"} {
		fsys["schemas/"+name] = &fstest.MapFile{Data: get("/schemas/" + name)}
	}
	doc, err := libopenapi.NewDocumentWithConfiguration(spec, &datamodel.DocumentConfiguration{
		BasePath: ".", LocalFS: fsys, AllowFileReferences: true, ResolveNestedRefsWithDocumentContext: true})
	mustNil(t, err)
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", v)
	}
	model, err := doc.BuildV3Model()
	mustNil(t, err)
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("openapi.json is not a valid OpenAPI 3.1 document: %s", describe(verrs))
	}
	c := &contract{t: t, srv: a.srv, v: v, covered: map[string][]int{}, ops: operations(t, spec)}
	// The validator rejects what the document does not allow: a test that
	// passes because nothing is checked proves nothing.
	for _, bad := range []struct {
		name, method, path, contentType, body string
		status                                int
	}{
		{"a request view without its fields", "GET", "/v1/requests/x1", "application/json", `{"id":1}`, 200},
		{"an error that is not problem+json", "GET", "/v1/requests/x1", "application/json", `{"error":"no"}`, 404},
		{"a problem without status", "GET", "/v1/requests/x1", "application/problem+json",
			`{"type":"about:blank","title":"t","detail":"d","error":"d"}`, 404},
		{"an undocumented status", "DELETE", "/v1/requests/x1", "application/problem+json",
			`{"type":"about:blank","title":"t","status":418,"detail":"d","error":"d"}`, 418},
		{"a decision request missing content", "GET", "/v1/requests/x1", "application/json",
			`{"id":"x1","status":"pending","agent":"pm","received_at":"2026-02-16T10:00:00Z","updated_at":"2026-02-16T10:00:00Z",` +
				`"links":{"self":"/v1/requests/x1"},"slack":{"state":"queued","channel":"#a"},"request":{"aah_version":"0.1"}}`, 200},
	} {
		req := httptest.NewRequest(bad.method, "/v1/requests/x1", nil)
		req.Header.Set("Authorization", "Bearer "+tokenPM)
		resp := &http.Response{StatusCode: bad.status, Header: http.Header{"Content-Type": {bad.contentType}},
			Body: io.NopCloser(strings.NewReader(bad.body))}
		if ok, _ := v.ValidateHttpResponse(req, resp); ok {
			t.Errorf("the validator accepts %s", bad.name)
		}
	}
	if ok, _ := v.ValidateHttpRequest(c.request(context.Background(), call{method: "POST", path: "/v1/requests", token: tokenPM,
		body: `{"aah_version":"0.1","artifact":{"type":"decision/request","title":"t"},"source":{"agent_id":"a"},"content":{"body":{"schema":"aah:decision/request@1.0","data":{"decisions":[{"id":"d1","type":"approval","prompt":"ok?","required":"yes"}]}}}}`})); ok {
		t.Error("the validator accepts a decision request whose decision's required is a string")
	}
	c.event = model.Model.Components.Schemas.GetOrZero("Event").Schema()
	if c.event == nil {
		t.Fatal("no components.schemas.Event")
	}
	return c
}

func describe(errs []*valerrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s: %s", s.FieldPath, s.Reason)
		}
	}
	return b.String()
}

// call is one exchange.
type call struct {
	method, path, token string
	body                string
	contentType         string // default application/json when there is a body
	header              http.Header
	// invalid marks a request the document does not allow (a test of an
	// error path): its answer is checked, the request is not.
	invalid bool
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	return response{Status: a.status, Body: a.body}.json(t)
}

func (c *contract) request(ctx context.Context, x call) *http.Request {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, x.method, c.srv.URL+x.path, strings.NewReader(x.body))
	mustNil(c.t, err)
	for k, vs := range x.header {
		req.Header[k] = vs
	}
	if x.token != "" {
		req.Header.Set("Authorization", "Bearer "+x.token)
	}
	switch {
	case x.contentType != "":
		req.Header.Set("Content-Type", x.contentType)
	case x.body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// do sends x, validates the request (unless invalid) and the answer, and
// fails unless the status is want.
func (c *contract) do(x call, want int) answer {
	c.t.Helper()
	resp, err := c.srv.Client().Do(c.request(context.Background(), x))
	mustNil(c.t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	mustNil(c.t, err)
	c.check(x, resp, body)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", x.method, x.path, resp.StatusCode, want, body)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// check validates one exchange against the document.
func (c *contract) check(x call, resp *http.Response, body []byte) {
	c.t.Helper()
	if !x.invalid {
		if ok, errs := c.v.ValidateHttpRequest(c.request(context.Background(), x)); !ok {
			c.t.Errorf("%s %s: the request does not match openapi.json:%s", x.method, x.path, describe(errs))
		}
	}
	replay := *resp
	replay.Body = io.NopCloser(bytes.NewReader(body))
	if ok, errs := c.v.ValidateHttpResponse(c.request(context.Background(), x), &replay); !ok {
		c.t.Errorf("%s %s: the %d answer does not match openapi.json:%s\n%s", x.method, x.path, resp.StatusCode, describe(errs), body)
	}
	if resp.StatusCode >= 400 && resp.StatusCode != http.StatusNotModified {
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			c.t.Errorf("%s %s: %d with Content-Type %q, want application/problem+json", x.method, x.path, resp.StatusCode, ct)
		}
	}
	op := c.operation(x.method, x.path)
	c.mu.Lock()
	c.covered[op] = append(c.covered[op], resp.StatusCode)
	c.mu.Unlock()
}

// operation is the document's operation that path is: the pattern whose
// segments match.
func (c *contract) operation(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(path, "/")
	for _, op := range c.ops {
		m, p, _ := strings.Cut(op, " ")
		ps := strings.Split(p, "/")
		if m != method || len(ps) != len(segs) {
			continue
		}
		match := true
		for i := range ps {
			if !strings.HasPrefix(ps[i], "{") && ps[i] != segs[i] {
				match = false
				break
			}
		}
		if match {
			return op
		}
	}
	c.t.Fatalf("%s %s is no operation of openapi.json", method, path)
	return ""
}

// stream opens an event stream, reads frames until n events came or the
// stream ended, and validates the answer and each event's data.
func (c *contract) stream(x call, n int) (events []map[string]any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.srv.Client().Do(c.request(ctx, x))
	mustNil(c.t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: %d %s", x.path, resp.StatusCode, body)
	}
	var raw bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(resp.Body, &raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var frameID, frameType string
	for len(events) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			frameID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			frameType = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaString(c.event, data); !ok {
				c.t.Errorf("%s: event data does not match components.schemas.Event:%s\n%s", x.path, describe(errs), data)
			}
			var ev map[string]any
			mustNil(c.t, json.Unmarshal([]byte(data), &ev))
			if ev["id"] != frameID || ev["type"] != frameType {
				c.t.Errorf("%s: frame id %q event %q, data %v", x.path, frameID, frameType, ev)
			}
			events = append(events, ev)
		}
	}
	cancel()
	c.check(x, resp, raw.Bytes())
	return events
}

// Every operation of the document, against the running server: a success
// and the main errors each, every request and answer validated.
func TestOpenAPIMatchesTheRunningServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.fullAPI(nil)
	c := newContract(t, a)
	inbox := newReceiver(t, nil)

	// The document and its schemas: cacheable, revalidated by ETag.
	doc := c.do(call{method: "GET", path: "/openapi.json"}, 200)
	etag := doc.header.Get("ETag")
	if etag == "" || doc.header.Get("Cache-Control") == "" {
		t.Errorf("GET /openapi.json: ETag %q Cache-Control %q", etag, doc.header.Get("Cache-Control"))
	}
	c.do(call{method: "GET", path: "/openapi.json", header: http.Header{"If-None-Match": {etag}}}, 304)
	sch := c.do(call{method: "GET", path: "/schemas/decision-request.schema.json"}, 200)
	c.do(call{method: "GET", path: "/schemas/decision-request.schema.json", header: http.Header{"If-None-Match": {sch.header.Get("ETag")}}}, 304)
	c.do(call{method: "GET", path: "/schemas/decision-response.schema.json", header: http.Header{"If-None-Match": {sch.header.Get("ETag")}}}, 200)
	c.do(call{method: "GET", path: "/schemas/nope.json", invalid: true}, 404)

	// Intake.
	reviewers := map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}}
	seed := string(seedWith(t, "oa-seed", reviewers))
	c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: seed}, 202)
	c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: seed}, 200)
	c.do(call{method: "POST", path: "/v1/requests", token: tokenOther, body: seed}, 409)
	c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: `{"aah_version":"2"}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests", body: seed, invalid: true}, 401)
	c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: seed, contentType: "text/plain", invalid: true}, 415)
	big := strings.Replace(seed, `"aah_version"`, `"pad":"`+strings.Repeat("x", 300<<10)+`","aah_version"`, 1)
	c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: big}, 413)
	// Looser than the workspace's sign-off rules.
	c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: string(seedWith(t, "oa-loose",
		map[string]any{"reviewers": []any{"U0ALICE"}, "allow_self_approval": true}))}, 400)
	withCallback := func(id string, raw []byte) string {
		var d map[string]any
		mustNil(t, json.Unmarshal(raw, &d))
		d["handoff"] = map[string]any{"expects_response": true, "response_url": inbox.srv.URL + "/decisions"}
		d["extensions"].(map[string]any)["events"] = map[string]any{"url": inbox.srv.URL + "/events", "types": []any{"resolved"}}
		out, err := json.Marshal(d)
		mustNil(t, err)
		return string(out)
	}
	c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: withCallback("oa-scale", scaleRequest(t, "oa-scale"))}, 202)
	for _, id := range []string{"oa-reject", "oa-grant", "oa-withdraw"} {
		c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: string(scaleRequest(t, id))}, 202)
	}
	all := []string{"approve", "reject", "modify", "defer", "change_plan", "escalate", "abort"}
	for _, id := range []string{"oa-modify", "oa-defer", "oa-change", "oa-abort", "oa-escalate"} {
		c.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: string(reviewedSeed(t, id, reviewers, all...))}, 202)
	}

	// Reading: one request (and long polls), the list, the audit chain.
	got := c.do(call{method: "GET", path: "/v1/requests/oa-seed", token: tokenPM}, 200).json(t)
	if _, ok := got["answers"]; !ok {
		t.Errorf("GET of an open request has no answers: %v", got)
	}
	c.do(call{method: "GET", path: "/v1/requests/oa-seed?wait=50ms&until=change", token: tokenPM}, 200)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed?wait=50ms&since=" + got["updated_at"].(string), token: tokenPM}, 200)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed?wait=2m", token: tokenPM, invalid: true}, 400)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed?until=later", token: tokenPM, invalid: true}, 400)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed", token: tokenOther}, 403)
	c.do(call{method: "GET", path: "/v1/requests/oa-none", token: tokenPM}, 404)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed", invalid: true}, 401)
	page := c.do(call{method: "GET", path: "/v1/requests?limit=2&status=pending", token: tokenPM}, 200).json(t)
	next, _ := page["links"].(map[string]any)["next"].(string)
	if next == "" {
		t.Fatalf("no links.next: %v", page)
	}
	c.do(call{method: "GET", path: next, token: tokenPM}, 200)
	c.do(call{method: "GET", path: "/v1/requests?limit=500", token: tokenPM, invalid: true}, 400)
	c.do(call{method: "GET", path: "/v1/requests?cursor=forged", token: tokenPM}, 400)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed/audit", token: tokenPM}, 200)
	c.do(call{method: "GET", path: "/v1/requests/oa-none/audit", token: tokenPM}, 404)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed/audit", token: tokenOther}, 403)

	// Deciding: each endpoint's success and its main refusals.
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/answers", token: tokenCarol, body: `{"answers":{"d1":true}}`}, 403)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/answers", token: tokenAlice, body: `{"answers":{"d1":true},"note":"x"}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/answers", token: tokenAlice, body: `{"answers":{"d9":true}}`}, 404)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/answers", token: "nobody-0123456789abcdef", body: `{"answers":{"d1":true}}`}, 401)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/answers", token: tokenAlice, body: `{"answers":{"d1":true,"d2":true}}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/answers", token: tokenAlice,
		body: `{"answers":{"d1":true},"comment":"` + strings.Repeat("x", 70<<10) + `"}`, invalid: true}, 413)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/comments", token: tokenBob, body: `{"decision_id":"d3","text":"Align with the newsletter"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/comments", token: tokenBob, body: `{"text":"?"}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/submit", token: tokenBob, body: `{"now":true}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/submit", token: tokenBob}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/submit", token: tokenBob, body: `{}`}, 409)
	c.do(call{method: "POST", path: "/v1/requests/oa-scale/reject", token: tokenAlice, body: `{}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-reject/reject", token: tokenAlice, body: `{"reason":"Too big"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-reject/reject", token: tokenAlice, body: `{"reason":"Too big"}`}, 409)
	c.do(call{method: "POST", path: "/v1/requests/oa-modify/modify", token: tokenAlice, body: `{"decision_id":"d1","parameters":{"replicas":40}}`}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-scale/modify", token: tokenAlice, body: `{"decision_id":"scale","parameters":{"replicas":4}}`}, 409)
	c.do(call{method: "POST", path: "/v1/requests/oa-modify/modify", token: tokenAlice, body: `{"decision_id":"d1","parameters":{"replicas":4},"comment":"4 will do"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-defer/defer", token: tokenAlice, body: `{"guidance":""}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-defer/defer", token: tokenAlice, body: `{"guidance":"Try a canary first"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-scale/defer", token: tokenAlice, body: `{"guidance":"Try a canary first"}`}, 409)
	c.do(call{method: "POST", path: "/v1/requests/oa-change/change_plan", token: tokenAlice, body: `{"requirement":"Keep costs flat"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-change/change_plan", token: tokenCarol, body: `{"requirement":"Keep costs flat"}`}, 409)
	c.do(call{method: "POST", path: "/v1/requests/oa-abort/abort", token: tokenCarol, body: `{"reason":"Stop"}`}, 403)
	c.do(call{method: "POST", path: "/v1/requests/oa-abort/abort", token: tokenAlice, body: `{"reason":7}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-change/change_plan", token: tokenAlice, body: `{}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-abort/abort", token: tokenAlice, body: `{"reason":"Stop"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-escalate/escalate", token: tokenAlice, body: `{"note":"x"}`, invalid: true}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-escalate/escalate", token: tokenAlice, body: `{"to":"U0CAROL","note":"Carol owns capacity"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-none/escalate", token: tokenAlice, body: `{"to":"U0CAROL"}`}, 404)
	c.do(call{method: "POST", path: "/v1/requests/oa-grant/grant", token: tokenAlice, body: `{"decision_id":"scale","duration":"soon"}`}, 400)
	c.do(call{method: "POST", path: "/v1/requests/oa-grant/grant", token: tokenOther, body: `{"decision_id":"scale","duration":"30m"}`}, 403)
	granted := c.do(call{method: "POST", path: "/v1/requests/oa-grant/grant", token: tokenAlice, body: `{"decision_id":"scale","duration":"30m","comment":"launch day"}`}, 200).json(t)
	grantID := granted["grant"].(map[string]any)["id"].(string)
	c.do(call{method: "POST", path: "/v1/requests/oa-scale/grant", token: tokenAlice, body: `{"decision_id":"scale","duration":"30m"}`}, 200)
	c.do(call{method: "POST", path: "/v1/requests/oa-scale/answers", token: tokenBob, body: `{"answers":{"scale":true}}`}, 409)

	// Every decision endpoint: a token nobody has, an unknown request, a
	// closed one, a body over 64 KiB.
	bodies := map[string]string{"answers": `{"answers":{"d1":true}}`, "comments": `{"decision_id":"d1","text":"x"}`, "submit": `{}`,
		"reject": `{"reason":"x"}`, "modify": `{"decision_id":"d1","parameters":{"replicas":2}}`, "defer": `{"guidance":"x"}`,
		"change_plan": `{"requirement":"x"}`, "abort": `{"reason":"x"}`, "escalate": `{"to":"U0CAROL"}`, "grant": `{"decision_id":"d1","duration":"30m"}`}
	for endpoint, body := range bodies {
		c.do(call{method: "POST", path: "/v1/requests/oa-seed/" + endpoint, token: "nobody-0123456789abcdef", body: body}, 401)
		c.do(call{method: "POST", path: "/v1/requests/oa-seed/" + endpoint, token: tokenPM, body: body}, 403) // an agent without AGENT_APPROVERS
		c.do(call{method: "POST", path: "/v1/requests/oa-none/" + endpoint, token: tokenAlice, body: body}, 404)
		c.do(call{method: "POST", path: "/v1/requests/oa-seed/" + endpoint, token: tokenAlice, body: body}, 409)
		c.do(call{method: "POST", path: "/v1/requests/oa-seed/" + endpoint, token: tokenAlice,
			body: `{"pad":"` + strings.Repeat("x", 70<<10) + `"}`, invalid: true}, 413)
	}
	for _, path := range []string{"/v1/requests", "/v1/requests/oa-seed/audit", "/v1/requests/oa-seed/events"} {
		c.do(call{method: "GET", path: path, token: "nobody-0123456789abcdef"}, 401)
	}
	c.do(call{method: "DELETE", path: "/v1/requests/oa-seed", token: "nobody-0123456789abcdef"}, 401)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/redeliver", token: "nobody-0123456789abcdef"}, 401)

	// Standing approvals.
	c.do(call{method: "GET", path: "/v1/grants", token: tokenPM}, 200)
	c.do(call{method: "GET", path: "/v1/grants", token: tokenAdmin}, 200)
	c.do(call{method: "GET", path: "/v1/grants", token: "nobody-0123456789abcdef"}, 401)
	c.do(call{method: "DELETE", path: "/v1/grants/" + grantID, token: "nobody-0123456789abcdef"}, 401)
	c.do(call{method: "DELETE", path: "/v1/grants/" + grantID, token: tokenPM}, 403)
	c.do(call{method: "DELETE", path: "/v1/grants/" + grantID, token: tokenBob}, 403)
	c.do(call{method: "DELETE", path: "/v1/grants/no-such-grant", token: tokenAlice}, 404)
	c.do(call{method: "DELETE", path: "/v1/grants/" + grantID, token: tokenAlice}, 200)

	// Redelivery and withdrawal.
	c.do(call{method: "POST", path: "/v1/requests/oa-scale/redeliver", token: tokenPM}, 202)
	c.do(call{method: "POST", path: "/v1/requests/oa-seed/redeliver", token: tokenPM}, 409)
	c.do(call{method: "POST", path: "/v1/requests/oa-none/redeliver", token: tokenPM}, 404)
	c.do(call{method: "POST", path: "/v1/requests/oa-scale/redeliver", token: tokenOther}, 403)
	c.do(call{method: "GET", path: "/v1/requests/oa-scale", token: tokenPM}, 200) // closed: response, callback, events_callback
	c.do(call{method: "DELETE", path: "/v1/requests/oa-withdraw", token: tokenOther}, 403)
	c.do(call{method: "DELETE", path: "/v1/requests/oa-withdraw", token: tokenPM}, 200)
	c.do(call{method: "DELETE", path: "/v1/requests/oa-withdraw", token: tokenPM}, 409)
	c.do(call{method: "DELETE", path: "/v1/requests/oa-none", token: tokenPM}, 404)
	c.do(call{method: "GET", path: "/v1/requests?status=withdrawn", token: tokenPM}, 200)

	// Event streams: a closed request's stream ends after its final event;
	// the agent's stream resumes from a cursor.
	evs := c.stream(call{method: "GET", path: "/v1/requests/oa-seed/events", token: tokenPM}, 100)
	if len(evs) < 3 || evs[0]["type"] != "input:requested" || evs[len(evs)-1]["type"] != "resolved" {
		t.Errorf("oa-seed's events: %v", evs)
	}
	c.do(call{method: "GET", path: "/v1/requests/oa-seed/events", token: tokenOther}, 404)
	c.do(call{method: "GET", path: "/v1/requests/oa-seed/events?last_event_id=nonsense", token: tokenPM}, 400)
	c.stream(call{method: "GET", path: "/v1/requests/oa-withdraw/events", token: tokenPM, header: http.Header{"Last-Event-ID": {evs[0]["id"].(string)}}}, 100)
	agent := c.stream(call{method: "GET", path: "/v1/events?last_event_id=c1.0................", token: tokenPM}, 5)
	if len(agent) != 5 {
		t.Errorf("the agent's stream sent %d events, want 5", len(agent))
	}
	c.do(call{method: "GET", path: "/v1/events", token: tokenPM, header: http.Header{"Last-Event-ID": {"1-0"}}}, 400)
	c.do(call{method: "GET", path: "/v1/events", invalid: true}, 401)

	// Limits: over the rate (Retry-After) and at the cap of open requests.
	limited := e.fullAPI(func(o *webhook.Options) {
		o.Limits = webhook.Limits{Rate: mustRate(t, "1/h:1")}
	})
	lc := &contract{t: t, srv: limited.srv, v: c.v, event: c.event, covered: c.covered, ops: c.ops}
	lc.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: string(scaleRequest(t, "oa-rate-1"))}, 202)
	if r := lc.do(call{method: "POST", path: "/v1/requests", token: tokenPM, body: string(scaleRequest(t, "oa-rate-2"))}, 429); r.header.Get("Retry-After") == "" {
		t.Error("429 over the rate without Retry-After")
	}
	capped := e.fullAPI(func(o *webhook.Options) { o.Limits = webhook.Limits{MaxOpen: 1} })
	cc := &contract{t: t, srv: capped.srv, v: c.v, event: c.event, covered: c.covered, ops: c.ops}
	cc.do(call{method: "POST", path: "/v1/requests", token: tokenOther, body: string(scaleRequest(t, "oa-cap-1"))}, 202)
	cc.do(call{method: "POST", path: "/v1/requests", token: tokenOther, body: string(scaleRequest(t, "oa-cap-2"))}, 429)

	// A store that does not answer in time: 503 with Retry-After.
	frozen := e.fullAPI(func(o *webhook.Options) { o.StoreTimeout = time.Nanosecond })
	fc := &contract{t: t, srv: frozen.srv, v: c.v, event: c.event, covered: c.covered, ops: c.ops}
	for _, path := range []string{"/v1/requests", "/v1/requests/oa-seed", "/v1/requests/oa-seed/events"} {
		if r := fc.do(call{method: "GET", path: path, token: tokenPM}, 503); r.header.Get("Retry-After") == "" {
			t.Errorf("GET %s: 503 without Retry-After", path)
		}
	}
	fc.do(call{method: "POST", path: "/v1/requests/oa-seed/comments", token: tokenBob, body: `{"decision_id":"d3","text":"x"}`}, 503)

	// Every operation answered at least one success and one error.
	for _, op := range c.ops {
		statuses := c.covered[op]
		if !slices.ContainsFunc(statuses, func(s int) bool { return s < 300 }) ||
			!slices.ContainsFunc(statuses, func(s int) bool { return s >= 304 }) {
			t.Errorf("%s: exercised with %v; want a success and an error", op, statuses)
		}
	}
	// The documented statuses no exchange produced (500 needs a broken
	// store; 503 is checked on a few operations above).
	var missing []string
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	mustNil(t, json.Unmarshal(webhook.OpenAPIJSON, &spec))
	for path, item := range spec.Paths {
		for method, raw := range item {
			var o struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if method == "parameters" || json.Unmarshal(raw, &o) != nil {
				continue
			}
			for code := range o.Responses {
				op := strings.ToUpper(method) + " " + path
				if code != "500" && code != "503" && !slices.Contains(c.covered[op], atoi(code)) {
					missing = append(missing, op+" "+code)
				}
			}
		}
	}
	sort.Strings(missing)
	t.Logf("documented answers not exercised: %v", missing)
}

func atoi(s string) int {
	var n int
	_, _ = fmt.Sscanf(s, "%d", &n)
	return n
}

func mustRate(t *testing.T, s string) store.Rate {
	t.Helper()
	r, err := webhook.ParseRate(s)
	mustNil(t, err)
	return r
}
