package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
)

var (
	seedNow    = time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	answeredAt = time.Date(2026, 2, 16, 14, 0, 0, 0, time.UTC)
	alice      = aah.Person{ID: "U0ALICE", Name: "Alice Example"}
	bob        = aah.Person{ID: "U0BOB", Name: "Bob Example"}
)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return raw
}

func seedRequestBytes(t testing.TB) []byte { return readFile(t, "../testdata/seed000_request.json") }

func parse(t testing.TB, raw []byte) *aah.Request {
	t.Helper()
	req, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
	if err != nil {
		t.Fatalf("aah.Parse: %v", err)
	}
	return req
}

// requestJSON is a valid request (id "req_1") holding the decisions.
func requestJSON(decisions ...string) []byte {
	return []byte(`{"aah_version":"0.1","artifact":{"id":"req_1","type":"decision/request","title":"T"},` +
		`"source":{"agent_id":"agent-7"},"content":{"body":{"schema":"aah:decision/request@1.0","data":{"decisions":[` +
		strings.Join(decisions, ",") + `]}}}}`)
}

// Decisions of every type.
const (
	decApproval    = `{"id":"a","type":"approval","prompt":"Ship it?","required":true}`
	decOptApproval = `{"id":"oa","type":"approval","prompt":"Trial?","required":false,"default":true}`
	decChoice      = `{"id":"c","type":"choice","prompt":"Region","required":true,"options":[{"value":"eu","label":"Europe"},{"value":"us","label":"United States"}]}`
	decMulti       = `{"id":"m","type":"multi_choice","prompt":"Channels","required":false,"options":[{"value":"email","label":"Email"},{"value":"ads","label":"Ads"}],"default":["ads"]}`
	decText        = `{"id":"t","type":"text","prompt":"Tagline","required":false}`
	decNumber      = `{"id":"n","type":"number","prompt":"Budget","required":true,"constraints":{"min":0,"max":10000}}`
	decDate        = `{"id":"d","type":"date","prompt":"Launch date","required":false,"default":"2026-03-01"}`
)

func ans(id string, v any, comment string, by aah.Person) aah.Answer {
	return aah.Answer{DecisionID: id, Value: v, Comments: said(by, answeredAt, comment), By: by, At: answeredAt}
}

// said is a person's comment as an answer's comment list (nil for none).
func said(by aah.Person, at time.Time, text string) []aah.Comment {
	if text == "" {
		return nil
	}
	return []aah.Comment{{By: by, At: at, Text: text}}
}

// wantViolation asserts err is a *schema.ValidationError naming pointer
// with a message containing msg.
func wantViolation(t testing.TB, err error, pointer, msg string) {
	t.Helper()
	var verr *schema.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error = %v (%T), want a *schema.ValidationError", err, err)
	}
	for _, v := range verr.Violations {
		if v.Pointer == pointer && strings.Contains(v.Message, msg) {
			if !strings.Contains(err.Error(), pointer+": ") {
				t.Errorf("Error() does not name %s: %s", pointer, err)
			}
			return
		}
	}
	t.Errorf("no violation at %q containing %q; got %s", pointer, msg, err)
}

func TestRequestSchemaAcceptsExamples(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, path string }{{"seed 000", "../testdata/seed000_request.json"}}
	// Every request example the repository ships, so a new one cannot
	// drift from the schema.
	examples, err := filepath.Glob("../../examples/*.json")
	if err != nil || len(examples) < 2 {
		t.Fatalf("examples/*.json: %v (%d files)", err, len(examples))
	}
	for _, path := range examples {
		cases = append(cases, struct{ name, path string }{strings.TrimPrefix(path, "../../"), path})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if err := schema.ValidateRequest(readFile(t, c.path)); err != nil {
				t.Errorf("ValidateRequest: %v", err)
			}
		})
	}
}

// The spec's own response example (§4, its one JavaScript comment removed).
func TestResponseSchemaAcceptsSpecExample(t *testing.T) {
	t.Parallel()
	if err := schema.ValidateResponse(readFile(t, "testdata/spec_response_example.json")); err != nil {
		t.Errorf("ValidateResponse: %v", err)
	}
}

func TestBuiltResponsesValidate(t *testing.T) {
	t.Parallel()
	seedAnswers := func(first, second aah.Person) map[string]aah.Answer {
		return map[string]aah.Answer{
			"d1": ans("d1", true, "Good segmentation", first),
			"d2": ans("d2", true, "", first),
			"d3": ans("d3", "next_week", "Align with newsletter schedule", second),
			"d4": ans("d4", false, "Require CC to reduce spam signups", second),
		}
	}
	allTypes := requestJSON(decApproval, decOptApproval, decChoice, decMulti, decText, decNumber, decDate)
	allAnswered := map[string]aah.Answer{
		"a": ans("a", true, "", alice), "oa": ans("oa", false, "no", bob), "c": ans("c", "us", "", alice),
		"m": ans("m", []string{"email", "ads"}, "", bob), "t": ans("t", "Plan less", "", alice),
		"n": ans("n", 5000.0, "", alice), "d": ans("d", "2026-03-02T09:00:00+01:00", "", bob),
	}
	for _, c := range []struct {
		name    string
		req     []byte
		answers map[string]aah.Answer
		by      aah.Person
		outcome string
	}{
		{"seed, two people", seedRequestBytes(t), seedAnswers(alice, bob), bob, ""},
		{"seed, one person", seedRequestBytes(t), seedAnswers(alice, alice), alice, ""},
		{"every type, two people", allTypes, allAnswered, alice, ""},
		{"approval", requestJSON(decApproval), map[string]aah.Answer{"a": ans("a", false, "nope", alice)}, alice, ""},
		{"choice", requestJSON(decChoice), map[string]aah.Answer{"c": ans("c", "eu", "", alice)}, alice, ""},
		{"multi_choice", requestJSON(decMulti), map[string]aah.Answer{"m": ans("m", []string{"ads"}, "", alice)}, alice, ""},
		{"multi_choice, nothing selected", requestJSON(decMulti), map[string]aah.Answer{"m": ans("m", []string{}, "", alice)}, alice, ""},
		{"text", requestJSON(decText), map[string]aah.Answer{"t": ans("t", "", "", alice)}, alice, ""},
		{"number", requestJSON(decNumber), map[string]aah.Answer{"n": ans("n", 0.25, "", alice)}, alice, ""},
		{"date", requestJSON(decDate), map[string]aah.Answer{"d": ans("d", "2026-03-02", "", alice)}, alice, ""},
		{"defaulted", allTypes, map[string]aah.Answer{
			"a": ans("a", true, "", alice), "c": ans("c", "eu", "", alice), "n": ans("n", 1.0, "", bob),
			"oa": {DecisionID: "oa", Value: true, Defaulted: true},
			"m":  {DecisionID: "m", Value: []string{"ads"}, Defaulted: true, Comments: said(bob, answeredAt, "ok"), By: bob},
			"d":  {DecisionID: "d", Value: "2026-03-01", Defaulted: true},
		}, alice, ""},
		{"default accepted, timed out", allTypes, map[string]aah.Answer{
			"a":  {DecisionID: "a", Value: false, TimedOut: true},
			"c":  {DecisionID: "c", Value: "eu", By: alice, At: answeredAt, DefaultAccepted: true},
			"d":  {DecisionID: "d", Value: "2026-03-01", By: alice, At: answeredAt, DefaultAccepted: true},
			"oa": {DecisionID: "oa", Value: true, Defaulted: true},
			"n":  ans("n", 1.0, "", bob),
		}, alice, ""},
		{"unanswered optional", allTypes, map[string]aah.Answer{
			"a": ans("a", true, "", alice), "c": ans("c", "eu", "", alice), "n": ans("n", 1.0, "", alice),
			"t": {DecisionID: "t", Comments: said(bob, answeredAt, "no idea"), By: bob, At: answeredAt},
		}, alice, ""},
		{"expired, nothing answered", seedRequestBytes(t), nil, aah.Person{}, aah.OutcomeExpired},
		{"expired, partly answered by two", allTypes, map[string]aah.Answer{
			"a": ans("a", true, "", alice), "c": ans("c", "us", "", bob),
		}, aah.Person{}, aah.OutcomeExpired},
		{"resolver without a name", requestJSON(decApproval), map[string]aah.Answer{"a": ans("a", true, "", aah.Person{ID: "U0CAROL"})}, aah.Person{ID: "U0CAROL"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			resp := aah.BuildResponse(parse(t, c.req), c.answers, aah.ResponseOptions{
				ID: "aah_decision_resp_1", CreatedAt: answeredAt.Add(time.Hour), ResolvedBy: c.by, Outcome: c.outcome,
			})
			if err := schema.ValidateResponse(resp.JSON()); err != nil {
				t.Errorf("ValidateResponse: %v\n%s", err, resp.JSON())
			}
		})
	}
}

// validResponse is a response the schema accepts, decoded for editing.
func validResponse(t testing.TB) map[string]any {
	t.Helper()
	req := parse(t, requestJSON(decApproval, decChoice, decText, decOptApproval))
	resp := aah.BuildResponse(req, map[string]aah.Answer{
		"a": ans("a", true, "", alice), "c": ans("c", "eu", "", bob),
		"oa": {DecisionID: "oa", Value: true, Defaulted: true},
	}, aah.ResponseOptions{ID: "resp_1", CreatedAt: answeredAt, ResolvedBy: alice})
	raw := resp.JSON()
	if err := schema.ValidateResponse(raw); err != nil {
		t.Fatalf("the base response is invalid: %v", err)
	}
	return decode(t, raw)
}

func decode(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return doc
}

// edit changes the value at a JSON pointer; remove deletes it. Missing
// intermediate objects are created.
type edit struct {
	ptr    string
	value  any
	remove bool
}

func set(ptr string, v any) edit { return edit{ptr: ptr, value: v} }
func del(ptr string) edit        { return edit{ptr: ptr, remove: true} }

func apply(t testing.TB, doc map[string]any, e edit) {
	t.Helper()
	tokens := strings.Split(strings.TrimPrefix(e.ptr, "/"), "/")
	var cur any = doc
	for i, tok := range tokens {
		last := i == len(tokens)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if e.remove {
					delete(c, tok)
				} else {
					c[tok] = e.value
				}
				return
			}
			next, ok := c[tok].(map[string]any)
			if _, isList := c[tok].([]any); isList {
				cur = c[tok]
				continue
			}
			if !ok {
				next = map[string]any{}
				c[tok] = next
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n >= len(c) {
				t.Fatalf("pointer %s: bad index %q", e.ptr, tok)
			}
			if last {
				if e.remove {
					t.Fatalf("pointer %s: cannot remove an array element", e.ptr)
				}
				c[n] = e.value
				return
			}
			cur = c[n]
		default:
			t.Fatalf("pointer %s: cannot step into %T", e.ptr, cur)
		}
	}
}

func encode(t testing.TB, doc any) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBrokenResponsesFail(t *testing.T) {
	t.Parallel()
	const data = "/content/body/data"
	for _, c := range []struct {
		name         string
		edits        []edit
		pointer, msg string
	}{
		{"missing request_id", []edit{del(data + "/request_id")}, data + "/request_id", "is required"},
		{"bad overall_status", []edit{set(data+"/overall_status", "mostly_approved")}, data + "/overall_status", "all_approved"},
		{"approved as a string", []edit{set(data+"/responses/0/approved", "true")}, data + "/responses/0/approved", "want boolean"},
		{"lifecycle not final", []edit{set("/lifecycle/status", "pending")}, "/lifecycle/status", "final"},
		{"no lifecycle", []edit{del("/lifecycle")}, "/lifecycle", "is required"},
		{"wrong artifact type", []edit{set("/artifact/type", "decision/request")}, "/artifact/type", "decision/response"},
		{"wrong media type", []edit{set("/content/media_type", "application/json")}, "/content/media_type", "decision-response"},
		{"wrong body schema", []edit{set("/content/body/schema", "aah:decision/request@1.0")}, "/content/body/schema", "response@1.0"},
		{"created_at not a date-time", []edit{set("/artifact/created_at", "yesterday")}, "/artifact/created_at", "RFC 3339"},
		{"no responses", []edit{set(data+"/responses", []any{})}, data + "/responses", "minItems"},
		{"entry without decision_id", []edit{del(data + "/responses/0/decision_id")}, data + "/responses/0/decision_id", "is required"},
		{"entry without an answer", []edit{del(data + "/responses/0/approved")}, data + "/responses/0/answered", "is required"},
		{"two value fields", []edit{set(data+"/responses/1/value", "eu")}, data + "/responses/1/value", "not allowed"},
		{"selected of the wrong type", []edit{set(data+"/responses/1/selected", json.Number("3"))}, data + "/responses/1/selected", "want string or array"},
		{"comment a number", []edit{set(data+"/responses/0/comment", json.Number("1"))}, data + "/responses/0/comment", "want null or string"},
		{"unanswered with a value", []edit{set(data+"/responses/2/approved", true)}, data + "/responses/2/approved", "not allowed"},
		{"defaulted with decided_at", []edit{set(data+"/responses/3/decided_at", "2026-02-16T14:00:00Z")}, data + "/responses/3/decided_at", "not allowed"},
		{"decided_by without name", []edit{set(data+"/responses/0/decided_by", map[string]any{"id": "U1"})}, data + "/responses/0/decided_by/name", "is required"},
		{"empty parent ids", []edit{set("/handoff/parent_artifact_ids", []any{})}, "/handoff/parent_artifact_ids", "minItems"},
		{"blank target agent", []edit{set("/handoff/target_agent", " ")}, "/handoff/target_agent", "must not be empty or blank"},
		{"modified without parameters", []edit{set(data+"/responses/0/modified", true)}, data + "/responses/0/parameters", "is required"},
		{"modified but rejected", []edit{set(data+"/responses/0/approved", false), set(data+"/responses/0/modified", true),
			set(data+"/responses/0/parameters", map[string]any{}), set(data+"/responses/0/original_parameters", map[string]any{})},
			data + "/responses/0/approved", "true"},
		{"unknown action", []edit{set(data+"/responses/0/action", "defer")}, data + "/responses/0/action", "modify"},
		{"grant without expiry", []edit{set(data+"/responses/0/grant", map[string]any{"id": "g1", "action_key": "k", "agent": "a",
			"by": map[string]any{"id": "U1", "name": "A"}, "granted_at": "2026-02-16T14:00:00Z"})}, data + "/responses/0/grant/expires_at", "is required"},
		{"defer without guidance", []edit{set(data+"/directive", map[string]any{"action": "defer",
			"decided_by": map[string]any{"id": "U1", "name": "A"}, "decided_at": "2026-02-16T14:00:00Z"})}, data + "/directive/guidance", "is required"},
		{"unknown directive", []edit{set(data+"/directive", map[string]any{"action": "pause", "reason": "x",
			"decided_by": map[string]any{"id": "U1", "name": "A"}, "decided_at": "2026-02-16T14:00:00Z"})}, data + "/directive/action", "abort"},
		{"not an object", []edit{}, "", "want object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var raw []byte
			if c.name == "not an object" {
				raw = []byte(`[]`)
			} else {
				doc := validResponse(t)
				for _, e := range c.edits {
					apply(t, doc, e)
				}
				raw = encode(t, doc)
			}
			err := schema.ValidateResponse(raw)
			if err == nil {
				t.Fatalf("ValidateResponse accepted %s", raw)
			}
			wantViolation(t, err, c.pointer, c.msg)
		})
	}
}

func TestBrokenRequestsFail(t *testing.T) {
	t.Parallel()
	const data = "/content/body/data"
	const d0 = data + "/decisions/0"
	for _, c := range []struct {
		name         string
		edits        []edit
		pointer, msg string
	}{
		{"no decisions", []edit{set(data+"/decisions", []any{})}, data + "/decisions", "minItems"},
		{"decisions missing", []edit{del(data + "/decisions")}, data + "/decisions", "is required"},
		{"unknown decision type", []edit{set(d0+"/type", "yes_no")}, d0 + "/type", "approval"},
		{"choice without options", []edit{set(d0+"/type", "choice")}, d0 + "/options", "is required"},
		{"approval with options", []edit{set(d0+"/options", []any{map[string]any{"value": "x", "label": "X"}})}, d0 + "/options", "maxItems"},
		{"approval constraints min a boolean", []edit{set(d0+"/constraints", map[string]any{"min": true})}, d0 + "/constraints/min", "want null or number or string"},
		{"approval default a string", []edit{set(d0+"/default", "yes")}, d0 + "/default", "or boolean"},
		{"required missing", []edit{del(d0 + "/required")}, d0 + "/required", "is required"},
		{"bad decision id", []edit{set(d0+"/id", "-x")}, d0 + "/id", "1-64 characters"},
		{"blank prompt", []edit{set(d0+"/prompt", "  ")}, d0 + "/prompt", "must not be empty or blank"},
		{"wrong artifact type", []edit{set("/artifact/type", "decision/response")}, "/artifact/type", "decision/request"},
		{"aah version 1.0", []edit{set("/aah_version", "1.0")}, "/aah_version", "0.x"},
		{"bad deadline", []edit{set(data+"/deadline", "tomorrow")}, data + "/deadline", "ISO 8601"},
		{"empty escalation list", []edit{set(data+"/escalation", []any{})}, data + "/escalation", "minItems"},
		{"escalation step without to", []edit{set(data+"/escalation", []any{map[string]any{"after": "1h"}})}, data + "/escalation/0/to", "is required"},
		{"lifecycle not pending", []edit{set("/lifecycle/status", "resolved")}, "/lifecycle/status", "pending"},
		{"priority a number", []edit{set("/handoff/priority", json.Number("1"))}, "/handoff/priority", "want null or string"},
		{"on_deadline unknown", []edit{set("/extensions/on_deadline", "later")}, "/extensions/on_deadline", "expire"},
		{"events with a typo", []edit{set("/extensions/events", map[string]any{"url": "https://a.example/e", "type": []any{"resolved"}})}, "/extensions/events", "type"},
		{"events of an unknown type", []edit{set("/extensions/events", map[string]any{"url": "https://a.example/e", "types": []any{"done"}})}, "/extensions/events/types/0", "resolved"},
		{"reminders max 11", []edit{set("/extensions/slack/reminders", map[string]any{"every": "1h", "max": json.Number("11")})}, "/extensions/slack/reminders/max", "maximum"},
		{"blank risk factor", []edit{set("/extensions/decisions", map[string]any{"d1": map[string]any{"risk_assessment": map[string]any{"risk_factors": []any{" "}}}})},
			"/extensions/decisions/d1/risk_assessment/risk_factors/0", "must not be empty or blank"},
		{"one-digit hour", []edit{set(data+"/deadline", "2026-02-17T7:00:00Z")}, data + "/deadline", "RFC 3339"},
		{"response_url not https", []edit{set("/handoff/response_url", "ftp://x")}, "/handoff/response_url", "https URL"},
		{"bad reviewer", []edit{set("/extensions/slack/reviewers", []any{"alice"})}, "/extensions/slack/reviewers/0", "Slack user id"},
		{"bad channel", []edit{set("/extensions/slack/channel", "Approvals!")}, "/extensions/slack/channel", "channel"},
		{"text max too long", []edit{set(d0+"/type", "text"), set(d0+"/constraints", map[string]any{"max": json.Number("5000")})}, d0 + "/constraints/max", "maximum"},
		{"multi_choice min not whole", []edit{
			set(d0+"/type", "multi_choice"), set(d0+"/options", []any{map[string]any{"value": "x", "label": "X"}}),
			set(d0+"/constraints", map[string]any{"min": json.Number("0.5")}),
		}, d0 + "/constraints/min", "or integer"},
		{"date default not a date", []edit{set(d0+"/type", "date"), set(d0+"/default", "soon")}, d0 + "/default", "date"},
		{"option without label", []edit{set(d0+"/type", "choice"), set(d0+"/options", []any{map[string]any{"value": "x"}})}, d0 + "/options/0/label", "is required"},
		{"unknown verb", []edit{set("/extensions/decisions", map[string]any{"d1": map[string]any{"responses": []any{"approve", "veto"}}})},
			"/extensions/decisions/d1/responses/1", "change_plan"},
		{"unknown risk level", []edit{set("/extensions/decisions", map[string]any{"d1": map[string]any{"risk_assessment": map[string]any{"risk_level": "severe"}}})},
			"/extensions/decisions/d1/risk_assessment/risk_level", "critical"},
		{"confidence above 1", []edit{set("/extensions/decisions", map[string]any{"d1": map[string]any{"risk_assessment": map[string]any{"confidence": json.Number("1.5")}}})},
			"/extensions/decisions/d1/risk_assessment/confidence", "maximum"},
		{"editable without type", []edit{set("/extensions/decisions", map[string]any{"d1": map[string]any{
			"proposed_action": map[string]any{"parameters": map[string]any{"n": json.Number("1")}}, "editable": map[string]any{"n": map[string]any{}}}})},
			"/extensions/decisions/d1/editable/n/type", "is required"},
		{"blank reject reason", []edit{set("/extensions/decisions", map[string]any{"d1": map[string]any{"reject_reasons": []any{" "}}})},
			"/extensions/decisions/d1/reject_reasons/0", "must not be empty or blank"},
		{"bad action key", []edit{set("/extensions/decisions", map[string]any{"d1": map[string]any{"action_key": "deploy prod"}})},
			"/extensions/decisions/d1/action_key", "letters, digits"},
		{"date bound not a date", []edit{set(d0+"/type", "date"), set(d0+"/constraints", map[string]any{"min": "soon"})}, d0 + "/constraints/min", "date"},
		{"bad parent id", []edit{set("/handoff/parent_artifact_ids", []any{"-x"})}, "/handoff/parent_artifact_ids/0", "1-128 characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			doc := decode(t, seedRequestBytes(t))
			for _, e := range c.edits {
				apply(t, doc, e)
			}
			raw := encode(t, doc)
			if _, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow}); err == nil {
				t.Errorf("aah.Parse accepts the broken request too; the case proves nothing")
			}
			err := schema.ValidateRequest(raw)
			if err == nil {
				t.Fatalf("ValidateRequest accepted %s", raw)
			}
			wantViolation(t, err, c.pointer, c.msg)
		})
	}
}

func TestValidateNotJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc, msg string
	}{
		{"empty", "", "not valid JSON"},
		{"truncated", `{"aah_version":`, "not valid JSON"},
		{"two values", `{} {}`, "exactly one JSON value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, validate := range []func([]byte) error{schema.ValidateRequest, schema.ValidateResponse} {
				wantViolation(t, validate([]byte(c.doc)), "", c.msg)
			}
		})
	}
}

func TestValidationErrorListsEveryViolation(t *testing.T) {
	t.Parallel()
	err := schema.ValidateResponse([]byte(`{"aah_version":"0.1","artifact":{"id":"x","type":"decision/response","title":"T","created_at":"2026-02-16T14:00:00Z"},` +
		`"source":{"agent_id":"human:U1"},"content":{"media_type":"application/vnd.aah.decision-response+json","body":{"schema":"aah:decision/response@1.0",` +
		`"data":{"responses":[{"decision_id":"a","approved":"yes"}],"overall_status":"nope"}}},"handoff":{"parent_artifact_ids":["x"],"target_agent":"a"},"lifecycle":{"status":"open"}}`))
	var verr *schema.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error = %v", err)
	}
	want := []string{
		"/content/body/data/overall_status",
		"/content/body/data/request_id",
		"/content/body/data/responses/0/approved",
		"/lifecycle/status",
	}
	var got []string
	for _, v := range verr.Violations {
		got = append(got, v.Pointer)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("violations at %v, want %v (sorted, one each)\n%v", got, want, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "decision response does not match its schema: /content/body/data/overall_status: ") {
		t.Errorf("Error() = %q", msg)
	}
}

func TestValidateConcurrently(t *testing.T) {
	t.Parallel()
	raw := seedRequestBytes(t)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				errs[i] = schema.ValidateRequest(raw)
			} else {
				errs[i] = schema.ValidateResponse([]byte(`{}`))
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (err == nil) != (i%2 == 0) {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

// The request schema must not be stricter than aah.Parse: every document
// Parse accepts validates. Parse is run with Stored, its most lenient mode
// (no deadline or callback-host checks), so the property is the strongest.
// acceptedByParse reports whether intake's validator accepts raw, as
// generously as a server can be configured: at a time before every
// deadline, with http and private callback addresses allowed. (Stored
// documents are read more leniently still, e.g. timestamps written before
// RFC 3339's form was enforced; the schema describes what is accepted now.)
func acceptedByParse(raw []byte) bool {
	_, err := aah.Parse(raw, aah.ParseOptions{Now: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), AllowInsecureCallbacks: true})
	return err == nil
}

// fuzzCorpus reads the aah package's FuzzParse corpus.
func fuzzCorpus(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../testdata/fuzz/FuzzParse/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fuzz corpus: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		text := strings.TrimSpace(string(readFile(t, f)))
		header, body, _ := strings.Cut(text, "\n")
		body = strings.TrimSpace(body)
		if header != "go test fuzz v1" || !strings.HasPrefix(body, "[]byte(") || !strings.HasSuffix(body, ")") {
			t.Fatalf("%s: not a []byte fuzz input", f)
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(body, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = []byte(s)
	}
	return out
}

func TestRequestSchemaNotStricterThanParse(t *testing.T) {
	t.Parallel()

	t.Run("fuzz corpus", func(t *testing.T) {
		t.Parallel()
		accepted := 0
		for name, raw := range fuzzCorpus(t) {
			if !acceptedByParse(raw) {
				continue
			}
			accepted++
			if err := schema.ValidateRequest(raw); err != nil {
				t.Errorf("%s: Parse accepts it, the schema does not: %v", name, err)
			}
		}
		if accepted == 0 {
			t.Errorf("Parse accepts none of the corpus; the test proves nothing")
		}
	})

	// Requests at the edges of what Parse accepts: null for absent, empty
	// strings where Parse ignores them, odd but valid time and number forms.
	for _, c := range []struct {
		name  string
		edits []edit
	}{
		{"optional fields null", []edit{
			set("/artifact/id", nil), set("/artifact/created_at", nil), set("/source/task_id", nil),
			set("/content/media_type", nil), set("/content/body/data/context", nil),
			set("/content/body/data/blocking", nil), set("/content/body/data/deadline", nil),
			set("/content/body/data/escalation", nil), set("/content/body/data/decisions/0/description", nil),
			set("/content/body/data/decisions/0/default", nil), set("/content/body/data/decisions/0/options", nil),
			set("/content/body/data/decisions/0/constraints", nil), set("/handoff", nil), set("/lifecycle", nil),
			set("/extensions", map[string]any{"slack": nil}),
		}},
		{"empty strings Parse ignores", []edit{
			set("/content/media_type", ""), set("/artifact/created_at", ""), set("/content/body/data/deadline", ""),
			set("/handoff/response_deadline", ""), set("/handoff/priority", ""), set("/handoff/response_url", ""),
			set("/lifecycle/status", ""), set("/extensions/slack/channel", ""),
		}},
		{"fraction and offset", []edit{
			set("/content/body/data/deadline", "2026-02-17T07:00:00.5+01:00"), set("/artifact/created_at", "2026-02-16T10:00:00.123456789Z"),
		}},
		{"what seed 000 leaves open", []edit{
			set("/handoff/priority", "whenever you can"), set("/handoff/target_role", "human"),
			set("/content/body/data/decisions/0/constraints", map[string]any{"max": json.Number("1"), "pattern": "x"}),
			set("/content/body/data/decisions/2/constraints", map[string]any{"min": "1"}),
			set("/content/body/data/decisions/1/options", []any{}),
		}},
		{"upper-case https and a private host", []edit{set("/handoff/response_url", "HTTPS://10.0.0.1:8443/cb")}},
		{"escalation chain with odd spacing and case", []edit{set("/content/body/data/escalation", []any{
			map[string]any{"after": " 1h ", "to": " U0A "}, map[string]any{"after": "p1d", "to": "#b"},
		})}},
		{"title with a byte-order mark", []edit{set("/artifact/title", "\ufeff")}},
		{"whole numbers written as fractions", []edit{
			set("/content/body/data/decisions/0/type", "multi_choice"), set("/content/body/data/decisions/0/default", []any{"x"}),
			set("/content/body/data/decisions/0/options", []any{map[string]any{"value": "x", "label": "X"}, map[string]any{"value": "y", "label": "Y"}}),
			set("/content/body/data/decisions/0/constraints", map[string]any{"min": json.Number("1.0000000000000000001"), "max": json.Number("2.0")}),
		}},
		{"tiny text min that reads as zero", []edit{
			set("/content/body/data/decisions/0/type", "text"), set("/content/body/data/decisions/0/default", "x"),
			set("/content/body/data/decisions/0/constraints", map[string]any{"min": json.Number("-0.0"), "max": json.Number("1e1"), "pattern": nil}),
		}},
		{"number with pattern null", []edit{
			set("/content/body/data/decisions/0/type", "number"), set("/content/body/data/decisions/0/default", json.Number("1e2")),
			set("/content/body/data/decisions/0/constraints", map[string]any{"min": json.Number("-1e300"), "pattern": nil}),
		}},
		{"reviewers and channel", []edit{set("/extensions/slack", map[string]any{"channel": "#approvals", "reviewers": []any{"U0ALICE", "w0bob@example.com"}})}},
		{"unknown fields everywhere", []edit{
			set("/x_top", true), set("/artifact/x", 1), set("/content/body/data/decisions/0/ui", map[string]any{"hint": "toggle"}),
			set("/handoff/x", []any{}), set("/extensions/other", "y"),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			doc := decode(t, seedRequestBytes(t))
			for _, e := range c.edits {
				apply(t, doc, e)
			}
			raw := encode(t, doc)
			if !acceptedByParse(raw) {
				_, err := aah.Parse(raw, aah.ParseOptions{Now: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), AllowInsecureCallbacks: true})
				t.Fatalf("aah.Parse rejects the case, so it proves nothing: %v", err)
			}
			if err := schema.ValidateRequest(raw); err != nil {
				t.Errorf("Parse accepts it, the schema does not: %v\n%s", err, raw)
			}
		})
	}

	t.Run("random mutations", func(t *testing.T) {
		t.Parallel()
		randomMutations(t)
	})
}

// Values the random mutations write.
var mutationValues = []any{
	nil, "", " ", "x", "\u00a0", "0.1", "1.0", "decision/request", "aah:decision/request@1.0",
	"application/vnd.aah.decision-request+json", "approval", "choice", "multi_choice", "text", "number", "date",
	"pending", "high", "human", "agent", "2099-02-17T17:00:00Z", "2099-02-17T7:00:00,25-05:00", "2099-02-17T07:00:00.25-05:00", "2026-03-01", "yesterday",
	"https://example.com/cb", "HTTP://127.0.0.1/cb", "24h", " PT1H ", "7d", "#approvals", "C0APPROVALS",
	"U0ALICE", "a@b.co", "next_week", "immediate",
	json.Number("0"), json.Number("1"), json.Number("2.0"), json.Number("-0.0"), json.Number("0.5"),
	json.Number("3000"), json.Number("1e400"), json.Number("1.0000000000000000001"), true, false,
	[]any{}, []any{"x"}, []any{"next_week"}, []any{nil}, map[string]any{},
	map[string]any{"after": "24h", "to": "x"}, []any{map[string]any{"after": "1h", "to": "a"}},
	[]any{map[string]any{"value": "x", "label": "X"}}, map[string]any{"min": json.Number("1"), "max": json.Number("2")},
	map[string]any{"pattern": "^a"}, map[string]any{"channel": "#a", "reviewers": []any{"U0ALICE"}},
	"expire", "apply_defaults", "resolved", []any{"resolved", "expired"}, map[string]any{"url": "https://a.example/e"},
	map[string]any{"every": "4h", "max": json.Number("3")},
}

// Pointers the mutations may add although the bases lack them.
var mutationExtraPointers = []string{
	"/artifact/id", "/content/body/data/context", "/content/body/data/escalation", "/handoff/response_url",
	"/handoff/priority", "/extensions/slack", "/extensions/slack/channel", "/extensions/slack/reviewers",
	"/content/body/data/decisions/0/options", "/content/body/data/decisions/0/constraints",
	"/content/body/data/decisions/1/default", "/content/body/data/decisions/2/constraints",
	"/lifecycle/status", "/content/media_type", "/extensions/on_deadline", "/extensions/events", "/extensions/events/url",
	"/extensions/events/types", "/extensions/slack/reminders", "/extensions/slack/reminders/max",
}

func pointersOf(v any, prefix string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := prefix + "/" + k
			*out = append(*out, p)
			pointersOf(e, p, out)
		}
	case []any:
		for i, e := range x {
			p := fmt.Sprintf("%s/%d", prefix, i)
			*out = append(*out, p)
			pointersOf(e, p, out)
		}
	}
}

// randomMutations changes valid requests at random, one to three values at
// a time, and checks every result Parse still accepts against the schema.
func randomMutations(t *testing.T) {
	corpus := fuzzCorpus(t)
	bases := [][]byte{seedRequestBytes(t), corpus["valid_all_decision_types"], readFile(t, "../../examples/marketing-strategy.json")}
	rng := rand.New(rand.NewPCG(2026, 216))
	rounds := 4000
	if testing.Short() {
		rounds = 500
	}
	accepted, failures := 0, 0
	for i := range rounds {
		doc := decode(t, bases[i%len(bases)])
		for range 1 + rng.IntN(3) {
			var ptrs []string
			pointersOf(doc, "", &ptrs)
			ptrs = append(ptrs, mutationExtraPointers...)
			slices.Sort(ptrs) // map order is random; keep the run reproducible
			ptr := ptrs[rng.IntN(len(ptrs))]
			e := set(ptr, deepCopy(mutationValues[rng.IntN(len(mutationValues))]))
			if rng.IntN(5) == 0 {
				e = del(ptr)
			}
			if !applyQuietly(doc, e) {
				continue
			}
		}
		raw := encode(t, doc)
		if !acceptedByParse(raw) {
			continue
		}
		accepted++
		if err := schema.ValidateRequest(raw); err != nil {
			failures++
			if failures <= 5 {
				t.Errorf("Parse accepts it, the schema does not: %v\n%s", err, raw)
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d accepted mutations fail the schema", failures, accepted)
	}
	if accepted < rounds/10 {
		t.Errorf("Parse accepted only %d of %d mutations; the test proves little", accepted, rounds)
	}
	t.Logf("%d of %d mutated requests were accepted by Parse and validated", accepted, rounds)
}

// applyQuietly is apply without failing the test on an impossible pointer.
func applyQuietly(doc map[string]any, e edit) (ok bool) {
	var ft fakeTB
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	apply(&ft, doc, e)
	return true
}

// fakeTB turns Fatalf into a panic that applyQuietly recovers.
type fakeTB struct{ testing.TB }

func (*fakeTB) Helper()                        {}
func (*fakeTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

// FuzzRequestSchemaNotStricterThanParse checks the same property on inputs
// the fuzzer makes, starting from the aah package's FuzzParse corpus.
func FuzzRequestSchemaNotStricterThanParse(f *testing.F) {
	for _, raw := range fuzzCorpus(f) {
		f.Add(raw)
	}
	f.Add(seedRequestBytes(f))
	f.Add(readFile(f, "../../examples/marketing-strategy.json"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !acceptedByParse(raw) {
			return
		}
		if err := schema.ValidateRequest(raw); err != nil {
			t.Errorf("Parse accepts it, the schema does not: %v\n%s", err, raw)
		}
	})
}

// Responses to requests using the review extension (examples/scale-service.json)
// validate too: a modified approval, a picked reject reason, a standing
// approval, each directive, and an agent deciding with a person's authority.
func TestBuiltReviewResponsesValidate(t *testing.T) {
	t.Parallel()
	raw := readFile(t, "../../examples/scale-service.json")
	req, err := aah.Parse(raw, aah.ParseOptions{Now: time.Date(2027, 2, 16, 10, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	modified := ans("scale", true, "8 is enough", alice)
	modified.Verb = aah.VerbModify
	modified.Parameters = map[string]any{"service": "checkout-api", "replicas": 8.0, "region": "eu-west-1"}
	rejected := ans("migrate", false, "backup first", bob)
	rejected.RejectReason = "Take a backup first"
	grant := &aah.GrantRef{ID: "grant_1", ActionKey: "scale_service:checkout-api", Agent: "ops", By: alice,
		GrantedAt: answeredAt, ExpiresAt: answeredAt.Add(time.Hour), FromRequest: "earlier"}
	granted := aah.Answer{DecisionID: "scale", Value: true, By: alice, At: answeredAt, Grant: grant}
	agentApprover := aah.Person{ID: "U0ALICE", Name: "Alice", Agent: "reviewer-bot", Via: aah.ViaAPI}
	byAgent := ans("migrate", true, "checked by the reviewer bot", agentApprover)
	answered := map[string]aah.Answer{"scale": modified, "migrate": rejected}
	for _, c := range []struct {
		name      string
		answers   map[string]aah.Answer
		directive *aah.Directive
	}{
		{"modified and rejected with a reason", answered, nil},
		{"granted", map[string]aah.Answer{"scale": granted, "migrate": byAgent}, nil},
		{"deferred", map[string]aah.Answer{"scale": modified}, &aah.Directive{Verb: aah.VerbDefer, Text: "Wait for the forecast", By: bob, At: answeredAt}},
		{"plan changed", nil, &aah.Directive{Verb: aah.VerbChangePlan, Text: "Use a read replica instead", By: bob, At: answeredAt}},
		{"aborted", answered, &aah.Directive{Verb: aah.VerbAbort, Text: "Launch postponed", By: alice, At: answeredAt}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			resp := aah.BuildResponse(req, c.answers, aah.ResponseOptions{ID: "aah_decision_resp_1",
				CreatedAt: answeredAt.Add(time.Hour), ResolvedBy: bob, Directive: c.directive})
			if err := schema.ValidateResponse(resp.JSON()); err != nil {
				t.Errorf("ValidateResponse: %v\n%s", err, resp.JSON())
			}
		})
	}
}

// The schemas' timestamp pattern is RFC 3339's date-time (section 5.6), and
// aah.Parse agrees with it at intake: every form one accepts the other does,
// except dates the pattern cannot know do not exist (Parse refuses those).
func TestTimestampPattern(t *testing.T) {
	t.Parallel()
	const deadline = "/content/body/data/deadline"
	check := func(ts string) (schemaOK, parseOK bool) {
		doc := decode(t, seedRequestBytes(t))
		apply(t, doc, set(deadline, ts))
		raw := encode(t, doc)
		_, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
		return schema.ValidateRequest(raw) == nil, err == nil
	}
	for _, ts := range []string{
		"2026-02-17T17:00:00Z", "2026-02-17T17:00:00.5Z", "2026-02-17T17:00:00.123456789+01:00",
		"2026-12-31T23:59:59-23:59", "2026-02-17T00:00:00+00:00", "2026-02-17T17:00:00-00:00",
	} {
		if s, p := check(ts); !s || !p {
			t.Errorf("%s: schema accepts %v, Parse accepts %v; want both", ts, s, p)
		}
	}
	for _, ts := range []string{
		"2026-2-17T17:00:00Z", "2026-02-7T17:00:00Z", "2026-02-17T7:00:00Z", "2026-02-17T17:0:00Z", "2026-02-17T17:00:0Z",
		"2026-13-17T17:00:00Z", "2026-02-32T17:00:00Z", "2026-02-17T24:00:00Z", "2026-02-17T17:60:00Z", "2026-02-17T17:00:60Z",
		"2026-02-17T17:00:00,5Z", "2026-02-17T17:00:00.Z", "2026-02-17T17:00:00", "2026-02-17 17:00:00Z",
		"2026-02-17T17:00:00+1:00", "2026-02-17T17:00:00+0100", "2026-02-17T17:00:00+24:00", "2026-02-17T17:00:00+01:60",
		"2026-02-17", " 2026-02-17T17:00:00Z", "2026-02-17T17:00:00Z ", "tomorrow",
	} {
		if s, p := check(ts); s || p {
			t.Errorf("%s: schema accepts %v, Parse accepts %v; want neither", ts, s, p)
		}
	}
	// Days that do not exist pass the pattern; Parse refuses them.
	for _, ts := range []string{"2026-02-30T17:00:00Z", "2026-04-31T17:00:00Z"} {
		if s, p := check(ts); !s || p {
			t.Errorf("%s: schema accepts %v, Parse accepts %v; want the schema only", ts, s, p)
		}
	}
}
