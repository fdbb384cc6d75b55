package aah_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
)

var (
	alice      = aah.Person{ID: "U0ALICE", Name: "Alice Example"}
	bob        = aah.Person{ID: "U0BOB", Name: "Bob Example"}
	answeredAt = time.Date(2026, 2, 16, 14, 0, 0, 0, time.UTC)
	resolvedAt = time.Date(2026, 2, 16, 14, 30, 0, 0, time.UTC)
)

// The seed request's decisions as the spec's example answers them.
const (
	seedTitle   = "Approve Marketing Strategy"
	seedReqID   = "aah_decision_abc123"
	seedSummary = "Approved: Approve target audience segments?, Approve budget allocation?. " +
		"Rejected: Offer 14-day free trial? (Require CC to reduce spam signups). " +
		"Select launch timing: Launch next Monday."
)

func answer(id string, v any, comment string, by aah.Person, at time.Time) aah.Answer {
	return aah.Answer{DecisionID: id, Value: v, Comments: said(by, at, comment), By: by, At: at}
}

// said is a person's comment as an answer's comment list (nil for none).
func said(by aah.Person, at time.Time, text string) []aah.Comment {
	if text == "" {
		return nil
	}
	return []aah.Comment{{By: by, At: at, Text: text}}
}

// seedAnswers answers the seed as spec §4 does: d1 and d2 by first, d3 and d4 by second.
func seedAnswers(first, second aah.Person) map[string]aah.Answer {
	return map[string]aah.Answer{
		"d1": answer("d1", true, "Good segmentation", first, answeredAt),
		"d2": answer("d2", true, "", first, answeredAt.Add(time.Minute)),
		"d3": answer("d3", "next_week", "Align with newsletter schedule", second, answeredAt.Add(2*time.Minute)),
		"d4": answer("d4", false, "Require CC to reduce spam signups", second, answeredAt.Add(3*time.Minute)),
	}
}

func seedRequest(t testing.TB) *aah.Request {
	t.Helper()
	return mustParse(t, seedBytes(t), aah.ParseOptions{Now: seedNow})
}

// Decisions of every type, for requestOf.
const (
	decApproval = `{"id":"a","type":"approval","prompt":"Ship it?","required":true}`
	decChoice   = `{"id":"c","type":"choice","prompt":"Region","required":true,"options":[{"value":"eu","label":"Europe"},{"value":"us","label":"United States"}]}`
	decMulti    = `{"id":"m","type":"multi_choice","prompt":"Channels","required":true,"options":[{"value":"email","label":"Email"},{"value":"ads","label":"Ads"},{"value":"seo","label":"SEO"}]}`
	decText     = `{"id":"t","type":"text","prompt":"Tagline","required":true}`
	decNumber   = `{"id":"n","type":"number","prompt":"Monthly budget","required":true}`
	decDate     = `{"id":"d","type":"date","prompt":"Launch date","required":true}`
)

// requestOf is a valid request (id "req_1", from agent "agent-7") holding the decisions.
func requestOf(t testing.TB, decisions ...string) *aah.Request {
	t.Helper()
	raw := `{"aah_version":"0.1","artifact":{"id":"req_1","type":"decision/request","title":"All types"},` +
		`"source":{"agent_id":"agent-7"},"content":{"body":{"schema":"aah:decision/request@1.0","data":{"decisions":[` +
		strings.Join(decisions, ",") + `]}}}}`
	return mustParse(t, []byte(raw), aah.ParseOptions{Now: seedNow})
}

func build(req *aah.Request, answers map[string]aah.Answer, by aah.Person, outcome string) *aah.Response {
	return aah.BuildResponse(req, answers, aah.ResponseOptions{
		ID: "aah_decision_resp_xyz789", CreatedAt: resolvedAt, ResolvedBy: by, Outcome: outcome,
	})
}

// lookup returns the value at a path such as "content.body.data.responses[2].selected"
// in a decoded document, and whether it is there.
func lookup(t testing.TB, doc any, path string) (any, bool) {
	t.Helper()
	cur := doc
	for _, s := range splitPath(t, path) {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[s.key]
			if s.isIndex || !ok {
				return nil, false
			}
			cur = v
		case []any:
			if !s.isIndex || s.index >= len(c) {
				return nil, false
			}
			cur = c[s.index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// rawJSON is the JSON encoding of the value at path.
func rawJSON(t testing.TB, doc any, path string) string {
	t.Helper()
	v, ok := lookup(t, doc, path)
	if !ok {
		return "<absent>"
	}
	return string(encodeDoc(t, v))
}

func keysOf(t testing.TB, doc any, path string) []string {
	t.Helper()
	v, _ := lookup(t, doc, path)
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want an object", path, v)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// entries is data.responses of a response, each entry as its JSON text.
func entries(t testing.TB, resp *aah.Response) []string {
	t.Helper()
	var doc struct {
		Content struct {
			Body struct {
				Data struct {
					Responses []json.RawMessage `json:"responses"`
				} `json:"data"`
			} `json:"body"`
		} `json:"content"`
	}
	if err := json.Unmarshal(resp.JSON(), &doc); err != nil {
		t.Fatalf("decode response: %v", err)
	}
	out := make([]string, len(doc.Content.Body.Data.Responses))
	for i, r := range doc.Content.Body.Data.Responses {
		out[i] = string(r)
	}
	return out
}

func TestBuildResponseSeedExample(t *testing.T) {
	t.Parallel()
	resp := build(seedRequest(t), seedAnswers(alice, bob), bob, "")
	doc := decodeDoc(t, resp.JSON())

	const data = "content.body.data"
	for _, c := range []struct {
		name, path, want string
	}{
		{"aah_version", "aah_version", `"0.1"`},
		{"artifact id", "artifact.id", `"aah_decision_resp_xyz789"`},
		{"artifact type", "artifact.type", `"decision/response"`},
		{"artifact title", "artifact.title", `"Response: Approve Marketing Strategy"`},
		{"artifact created_at", "artifact.created_at", `"2026-02-16T14:30:00Z"`},
		{"source agent_id is the resolver", "source.agent_id", `"human:U0BOB"`},
		{"source agent_name", "source.agent_name", `"Bob Example"`},
		{"no agent_role", "source.agent_role", `<absent>`},
		{"media type", "content.media_type", `"application/vnd.aah.decision-response+json"`},
		{"body schema", "content.body.schema", `"aah:decision/response@1.0"`},
		{"request_id", data + ".request_id", `"aah_decision_abc123"`},
		{"d1 id", data + ".responses[0].decision_id", `"d1"`},
		{"d1 approved", data + ".responses[0].approved", `true`},
		{"d1 comment", data + ".responses[0].comment", `"Good segmentation"`},
		{"d1 decided_at", data + ".responses[0].decided_at", `"2026-02-16T14:00:00Z"`},
		{"d1 decided_by", data + ".responses[0].decided_by", `{"id":"U0ALICE","name":"Alice Example"}`},
		{"d2 id", data + ".responses[1].decision_id", `"d2"`},
		{"d2 approved", data + ".responses[1].approved", `true`},
		{"d2 comment is null", data + ".responses[1].comment", `null`},
		{"d2 decided_by", data + ".responses[1].decided_by", `{"id":"U0ALICE","name":"Alice Example"}`},
		{"d3 id", data + ".responses[2].decision_id", `"d3"`},
		{"d3 selected", data + ".responses[2].selected", `"next_week"`},
		{"d3 no approved", data + ".responses[2].approved", `<absent>`},
		{"d3 comment", data + ".responses[2].comment", `"Align with newsletter schedule"`},
		{"d3 decided_by", data + ".responses[2].decided_by", `{"id":"U0BOB","name":"Bob Example"}`},
		{"d4 id", data + ".responses[3].decision_id", `"d4"`},
		{"d4 approved", data + ".responses[3].approved", `false`},
		{"d4 comment", data + ".responses[3].comment", `"Require CC to reduce spam signups"`},
		{"d4 decided_at", data + ".responses[3].decided_at", `"2026-02-16T14:03:00Z"`},
		{"only four responses", data + ".responses[4]", `<absent>`},
		{"overall_status", data + ".overall_status", `"partial"`},
		{"summary", data + ".summary", fmt.Sprintf("%q", seedSummary)},
		{"parent ids", "handoff.parent_artifact_ids", `["aah_decision_abc123"]`},
		{"target agent", "handoff.target_agent", `"product-manager"`},
		{"lifecycle", "lifecycle", `{"status":"final"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := rawJSON(t, doc, c.path); got != c.want {
				t.Errorf("%s = %s, want %s", c.path, got, c.want)
			}
		})
	}

	t.Run("key sets", func(t *testing.T) {
		t.Parallel()
		for path, want := range map[string][]string{
			"":                                {"aah_version", "artifact", "content", "handoff", "lifecycle", "source"},
			"artifact":                        {"created_at", "id", "title", "type"},
			"source":                          {"agent_id", "agent_name"},
			"content":                         {"body", "media_type"},
			"content.body":                    {"data", "schema"},
			data:                              {"overall_status", "request_id", "responses", "summary"},
			"handoff":                         {"parent_artifact_ids", "target_agent"},
			data + ".responses[0]":            {"approved", "comment", "comments", "decided_at", "decided_by", "decision_id"},
			data + ".responses[1]":            {"approved", "comment", "decided_at", "decided_by", "decision_id"},
			data + ".responses[2]":            {"comment", "comments", "decided_at", "decided_by", "decision_id", "selected"},
			data + ".responses[3].decided_by": {"id", "name"},
		} {
			var got []string
			if path == "" {
				for k := range doc {
					got = append(got, k)
				}
				slices.Sort(got)
			} else {
				got = keysOf(t, doc, path)
			}
			if !slices.Equal(got, want) {
				t.Errorf("keys of %q = %v, want %v", path, got, want)
			}
		}
	})

	t.Run("typed fields", func(t *testing.T) {
		t.Parallel()
		d := resp.Content.Body.Data
		if resp.Artifact.ID != "aah_decision_resp_xyz789" || d.OverallStatus != aah.OverallPartial || d.RequestID != seedReqID {
			t.Errorf("Artifact.ID %q, OverallStatus %q, RequestID %q", resp.Artifact.ID, d.OverallStatus, d.RequestID)
		}
		if d.Responses[1].Comment != nil {
			t.Errorf("d2 Comment = %q, want nil", *d.Responses[1].Comment)
		}
	})

	t.Run("key order follows the spec", func(t *testing.T) {
		t.Parallel()
		js := string(resp.JSON())
		order := []string{`"aah_version"`, `"artifact"`, `"source"`, `"content"`, `"handoff"`, `"lifecycle"`}
		last := -1
		for _, k := range order {
			i := strings.Index(js, k)
			if i <= last {
				t.Fatalf("key %s out of order in %s", k, js)
			}
			last = i
		}
		if !strings.Contains(js, `{"decision_id":"d1","approved":true,"comment":"Good segmentation",`) {
			t.Errorf("d1 entry does not start like the spec's: %s", js)
		}
	})
}

func TestBuildResponseDecidedByOnlyWithSeveralPeople(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		first, second aah.Person
		answers       func(map[string]aah.Answer)
		wantBy        bool
	}{
		{"one person answered everything", alice, alice, nil, false},
		{"two people", alice, bob, nil, true},
		{"a second person only commented", alice, alice, func(m map[string]aah.Answer) {
			m["d4"] = aah.Answer{DecisionID: "d4", Value: true, Defaulted: true, Comments: said(bob, answeredAt, "I'd rather not"), By: bob}
		}, false},
		{"a default does not count as a person", alice, alice, func(m map[string]aah.Answer) {
			m["d4"] = aah.Answer{DecisionID: "d4", Value: true, Defaulted: true}
		}, false},
		{"answers for unknown decisions are ignored", alice, alice, func(m map[string]aah.Answer) {
			m["zz"] = answer("zz", true, "", bob, answeredAt)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			answers := seedAnswers(c.first, c.second)
			if c.answers != nil {
				c.answers(answers)
			}
			resp := build(seedRequest(t), answers, c.second, "")
			for i, e := range resp.Content.Body.Data.Responses {
				a := answers[e.DecisionID]
				want := c.wantBy && !a.Defaulted
				if got := e.DecidedBy != nil; got != want {
					t.Errorf("responses[%d] (%s) has decided_by: %v, want %v", i, e.DecisionID, got, want)
				}
				if e.DecidedBy != nil && *e.DecidedBy != a.By {
					t.Errorf("responses[%d] decided_by = %+v, want %+v", i, *e.DecidedBy, a.By)
				}
			}
			if got := string(resp.JSON()); strings.Contains(got, "decided_by") != c.wantBy {
				t.Errorf("JSON mentions decided_by: %v, want %v\n%s", !c.wantBy, c.wantBy, got)
			}
		})
	}
}

func TestOverallStatus(t *testing.T) {
	t.Parallel()
	seed := func(edit func(map[string]aah.Answer)) map[string]aah.Answer {
		m := seedAnswers(alice, bob)
		if edit != nil {
			edit(m)
		}
		return m
	}
	setValue := func(id string, v any) func(map[string]aah.Answer) {
		return func(m map[string]aah.Answer) { a := m[id]; a.Value = v; m[id] = a }
	}
	all := func(edits ...func(map[string]aah.Answer)) func(map[string]aah.Answer) {
		return func(m map[string]aah.Answer) {
			for _, e := range edits {
				e(m)
			}
		}
	}
	nonApproval := requestOf(t, decChoice, decText)
	for _, c := range []struct {
		name    string
		req     *aah.Request
		answers map[string]aah.Answer
		outcome string
		want    string
	}{
		{"seed answered as the spec: mixed", nil, seed(nil), "", "partial"},
		{"all approved", nil, seed(setValue("d4", true)), "", "all_approved"},
		{"all rejected", nil, seed(all(setValue("d1", false), setValue("d2", false))), "", "all_rejected"},
		{"explicit resolved outcome", nil, seed(nil), aah.OutcomeResolved, "partial"},
		{"no approval decisions: nothing was rejected", nonApproval, map[string]aah.Answer{
			"c": answer("c", "us", "", alice, answeredAt), "t": answer("t", "Hi", "", alice, answeredAt),
		}, "", "all_approved"},
		{"required decision unanswered", nil, seed(func(m map[string]aah.Answer) { delete(m, "d2") }), "", "pending"},
		{"required decision with only a comment", nil, seed(setValue("d2", nil)), "", "pending"},
		{"required choice unanswered", nil, seed(func(m map[string]aah.Answer) { delete(m, "d3") }), "", "pending"},
		{"required approval of the wrong type counts as unanswered", nil, seed(setValue("d1", "yes")), "", "pending"},
		{"expired although everything was answered", nil, seed(nil), aah.OutcomeExpired, "pending"},
		{"expired with nothing answered", nil, nil, aah.OutcomeExpired, "pending"},
		{"optional approval unanswered is ignored", nil, seed(func(m map[string]aah.Answer) { delete(m, "d4") }), "", "all_approved"},
		{"optional rejection unanswered, rest rejected", nil, seed(all(setValue("d1", false), setValue("d2", false),
			func(m map[string]aah.Answer) { delete(m, "d4") })), "", "all_rejected"},
		{"a defaulted approval counts", nil, seed(all(setValue("d1", false), setValue("d2", false), func(m map[string]aah.Answer) {
			m["d4"] = aah.Answer{DecisionID: "d4", Value: true, Defaulted: true}
		})), "", "partial"},
		{"choice answers count neither way", nil, seed(all(setValue("d4", true), setValue("d3", "immediate"))), "", "all_approved"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := c.req
			if req == nil {
				req = seedRequest(t)
			}
			if got := aah.OverallStatus(req, c.answers, c.outcome); got != c.want {
				t.Errorf("OverallStatus = %q, want %q", got, c.want)
			}
			resp := build(req, c.answers, alice, c.outcome)
			if got := resp.Content.Body.Data.OverallStatus; got != c.want {
				t.Errorf("BuildResponse overall_status = %q, want %q", got, c.want)
			}
		})
	}
}

func TestBuildResponseDefaultedAndUnanswered(t *testing.T) {
	t.Parallel()
	req := requestOf(t,
		`{"id":"go","type":"approval","prompt":"Go ahead?","required":true}`,
		`{"id":"trial","type":"approval","prompt":"Offer a trial?","required":false,"default":true}`,
		`{"id":"tier","type":"choice","prompt":"Tier","required":false,"options":[{"value":"pro","label":"Pro"}],"default":"pro"}`,
		`{"id":"notes","type":"text","prompt":"Notes","required":false}`,
		`{"id":"when","type":"date","prompt":"When","required":false}`,
	)
	answers := map[string]aah.Answer{
		"go":    answer("go", true, "", alice, answeredAt),
		"trial": {DecisionID: "trial", Value: true, Defaulted: true},
		// Bob commented on the tier but nobody picked one: the default was taken.
		"tier": {DecisionID: "tier", Value: "pro", Defaulted: true, Comments: said(bob, answeredAt, "Pro is fine"), By: bob},
		// A comment without a value is not an answer.
		"when": {DecisionID: "when", Comments: said(bob, answeredAt, "not sure yet"), By: bob, At: answeredAt},
	}
	resp := build(req, answers, alice, "")
	want := []string{
		`{"decision_id":"go","approved":true,"comment":null,"decided_at":"2026-02-16T14:00:00Z"}`,
		`{"decision_id":"trial","approved":true,"comment":null,"defaulted":true}`,
		`{"decision_id":"tier","selected":"pro","comment":"Pro is fine","comments":[{"by":"human:U0BOB","by_name":"Bob Example","at":"2026-02-16T14:00:00Z","text":"Pro is fine"}],"defaulted":true}`,
		`{"decision_id":"notes","comment":null,"answered":false}`,
		`{"decision_id":"when","comment":"not sure yet","comments":[{"by":"human:U0BOB","by_name":"Bob Example","at":"2026-02-16T14:00:00Z","text":"not sure yet"}],"answered":false}`,
	}
	got := entries(t, resp)
	for i := range max(len(got), len(want)) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				t.Errorf("responses[%d]:\n got %s\nwant %s", i, at(got, i), at(want, i))
			}
		})
	}
	if s := resp.Content.Body.Data.OverallStatus; s != aah.OverallAllApproved {
		t.Errorf("overall_status = %q, want all_approved", s)
	}
	wantSummary := "Approved: Go ahead?, Offer a trial? (default). Tier: Pro (default). Notes: no answer. When: no answer."
	if s := resp.Content.Body.Data.Summary; s != wantSummary {
		t.Errorf("summary =\n%q\nwant\n%q", s, wantSummary)
	}
}

func at(list []string, i int) string {
	if i < len(list) {
		return list[i]
	}
	return "<none>"
}

func TestBuildResponseDecisionTypes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		decision string
		value    any
		field    string // the only value field present
		want     string // its JSON
		summary  string
	}{
		{"approval true", decApproval, true, "approved", `true`, "Approved: Ship it?."},
		{"approval false", decApproval, false, "approved", `false`, "Rejected: Ship it?."},
		{"choice", decChoice, "us", "selected", `"us"`, "Region: United States."},
		{"multi_choice", decMulti, []string{"email", "seo"}, "selected", `["email","seo"]`, "Channels: Email, SEO."},
		{"multi_choice from stored JSON", decMulti, []any{"ads"}, "selected", `["ads"]`, "Channels: Ads."},
		{"multi_choice none selected", decMulti, []string{}, "selected", `[]`, "Channels: none."},
		{"text", decText, "Plan less, celebrate more", "value", `"Plan less, celebrate more"`, `Tagline: "Plan less, celebrate more".`},
		{"empty text", decText, "", "value", `""`, `Tagline: "".`},
		{"number integral", decNumber, 5000.0, "value", `5000`, "Monthly budget: 5000."},
		{"number fraction", decNumber, 2500.75, "value", `2500.75`, "Monthly budget: 2500.75."},
		{"number zero", decNumber, 0.0, "value", `0`, "Monthly budget: 0."},
		{"number negative", decNumber, -3.5, "value", `-3.5`, "Monthly budget: -3.5."},
		{"date", decDate, "2026-03-02", "value", `"2026-03-02"`, "Launch date: 2026-03-02."},
		{"date-time", decDate, "2026-03-02T09:00:00+01:00", "value", `"2026-03-02T09:00:00+01:00"`, "Launch date: 2026-03-02T09:00:00+01:00."},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := requestOf(t, c.decision)
			id := req.Data.Decisions[0].ID
			resp := build(req, map[string]aah.Answer{id: answer(id, c.value, "", alice, answeredAt)}, alice, "")
			doc := decodeDoc(t, resp.JSON())
			entry := "content.body.data.responses[0]"
			for _, f := range []string{"approved", "selected", "value"} {
				got := rawJSON(t, doc, entry+"."+f)
				switch {
				case f == c.field && got != c.want:
					t.Errorf("%s = %s, want %s", f, got, c.want)
				case f != c.field && got != "<absent>":
					t.Errorf("%s = %s, want it absent", f, got)
				}
			}
			// The JSON type, not just the text: a number is a JSON number.
			v, _ := lookup(t, doc, entry+"."+c.field)
			wantType := "string"
			switch c.decision {
			case decApproval:
				wantType = "bool"
			case decMulti:
				wantType = "[]interface {}"
			case decNumber:
				wantType = "json.Number"
			}
			if got := fmt.Sprintf("%T", v); got != wantType {
				t.Errorf("%s decodes as %s, want %s", c.field, got, wantType)
			}
			if got := rawJSON(t, doc, entry+".decision_id"); got != fmt.Sprintf("%q", id) {
				t.Errorf("decision_id = %s", got)
			}
			if s := resp.Content.Body.Data.Summary; s != c.summary {
				t.Errorf("summary = %q, want %q", s, c.summary)
			}
		})
	}
}

func TestBuildResponseSource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		by   aah.Person
		want string
	}{
		{"a person", alice, `{"agent_id":"human:U0ALICE","agent_name":"Alice Example"}`},
		{"a person without a known name", aah.Person{ID: "U0CAROL"}, `{"agent_id":"human:U0CAROL","agent_name":"U0CAROL"}`},
		{"the system", aah.Person{}, `{"agent_id":"system:approvalbot","agent_name":"approvalbot"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			resp := build(seedRequest(t), seedAnswers(alice, bob), c.by, "")
			if got := rawJSON(t, decodeDoc(t, resp.JSON()), "source"); got != c.want {
				t.Errorf("source = %s, want %s", got, c.want)
			}
		})
	}
}

func TestBuildResponseExpired(t *testing.T) {
	t.Parallel()
	answers := map[string]aah.Answer{"d1": answer("d1", true, "", alice, answeredAt)}
	resp := build(seedRequest(t), answers, aah.Person{}, aah.OutcomeExpired)
	d := resp.Content.Body.Data
	if d.OverallStatus != aah.OverallPending {
		t.Errorf("overall_status = %q, want pending", d.OverallStatus)
	}
	want := "Expired before it was resolved. Approved: Approve target audience segments?. " +
		"Approve budget allocation?: no answer. Select launch timing: no answer. Offer 14-day free trial?: no answer."
	if d.Summary != want {
		t.Errorf("summary =\n%q\nwant\n%q", d.Summary, want)
	}
	got := entries(t, resp)
	wantEntries := []string{
		`{"decision_id":"d1","approved":true,"comment":null,"decided_at":"2026-02-16T14:00:00Z"}`,
		`{"decision_id":"d2","comment":null,"answered":false}`,
		`{"decision_id":"d3","comment":null,"answered":false}`,
		`{"decision_id":"d4","comment":null,"answered":false}`,
	}
	if !slices.Equal(got, wantEntries) {
		t.Errorf("responses =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantEntries, "\n"))
	}
	if resp.Source.AgentID != aah.SystemAgentID || resp.Lifecycle.Status != "final" {
		t.Errorf("source %q, lifecycle %q", resp.Source.AgentID, resp.Lifecycle.Status)
	}
}

func TestBuildResponseSummary(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("very ", 60) + "long prompt?"
	var many []string
	manyAnswers := map[string]aah.Answer{}
	for i := range 60 {
		id := fmt.Sprintf("d%d", i)
		many = append(many, fmt.Sprintf(`{"id":%q,"type":"approval","prompt":%q,"required":true}`, id, fmt.Sprint(i)+" "+long))
		manyAnswers[id] = answer(id, i%2 == 0, strings.Repeat("because ", 100), alice, answeredAt)
	}
	for _, c := range []struct {
		name     string
		req      *aah.Request
		answers  map[string]aah.Answer
		outcome  string
		want     string   // exact, when set
		contains []string // substrings, in order
	}{
		{name: "the seed's example", req: seedRequest(t), answers: seedAnswers(alice, bob), want: seedSummary},
		{name: "comments of approvals are left out, rejections keep theirs, newlines collapsed",
			req: requestOf(t, decApproval, `{"id":"b","type":"approval","prompt":"Also this?","required":true}`),
			answers: map[string]aah.Answer{
				"a": answer("a", true, "fine by me", alice, answeredAt),
				"b": answer("b", false, "too\nexpensive", alice, answeredAt),
			},
			want: "Approved: Ship it?. Rejected: Also this? (too expensive).",
		},
		{name: "a defaulted rejection keeps its comment",
			req: requestOf(t, `{"id":"b","type":"approval","prompt":"Also this?","required":false,"default":false}`),
			answers: map[string]aah.Answer{
				"b": {DecisionID: "b", Value: false, Defaulted: true, Comments: said(bob, answeredAt, "agreed")},
			},
			want: "Rejected: Also this? (default; agreed).",
		},
		{name: "a prompt ending in a colon",
			req:     requestOf(t, `{"id":"c","type":"choice","prompt":"Region:","required":true,"options":[{"value":"eu","label":"Europe"}]}`),
			answers: map[string]aah.Answer{"c": answer("c", "eu", "", alice, answeredAt)},
			want:    "Region: Europe.",
		},
		{name: "a text answer ending in a full stop",
			req:     requestOf(t, decText),
			answers: map[string]aah.Answer{"t": answer("t", "Done.", "", alice, answeredAt)},
			want:    `Tagline: "Done.".`,
		},
		{name: "every type in request order", req: requestOf(t, decChoice, decApproval, decMulti, decText, decNumber, decDate),
			answers: map[string]aah.Answer{
				"c": answer("c", "eu", "", alice, answeredAt), "a": answer("a", true, "", alice, answeredAt),
				"m": answer("m", []string{"ads"}, "", alice, answeredAt), "t": answer("t", "Hi", "", alice, answeredAt),
				"n": answer("n", 12.5, "", alice, answeredAt), "d": answer("d", "2026-04-01", "", alice, answeredAt),
			},
			want: `Approved: Ship it?. Region: Europe. Channels: Ads. Tagline: "Hi". Monthly budget: 12.5. Launch date: 2026-04-01.`,
		},
		{name: "long prompts and comments are shortened", req: requestOf(t, many...), answers: manyAnswers,
			contains: []string{"Approved: 0 very", "…", "Rejected: 1 very"},
		},
		{name: "a long text answer is shortened",
			req:      requestOf(t, decApproval, decText),
			answers:  map[string]aah.Answer{"a": answer("a", true, "", alice, answeredAt), "t": answer("t", strings.Repeat("word ", 600), "", alice, answeredAt)},
			contains: []string{"Approved: Ship it?. Tagline: \"word word", "…"},
		},
		{name: "expired, long", req: requestOf(t, many...), answers: manyAnswers, outcome: aah.OutcomeExpired,
			contains: []string{"Expired before it was resolved. Approved: 0 very", "…"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := aah.Summary(c.req, c.answers, c.outcome)
			if n := utf8.RuneCountInString(s); n > aah.MaxSummaryLength {
				t.Errorf("summary is %d characters, want at most %d", n, aah.MaxSummaryLength)
			}
			if c.want != "" && s != c.want {
				t.Errorf("summary =\n%q\nwant\n%q", s, c.want)
			}
			rest := s
			for _, sub := range c.contains {
				i := strings.Index(rest, sub)
				if i < 0 {
					t.Fatalf("summary lacks %q (in order):\n%s", sub, s)
				}
				rest = rest[i+len(sub):]
			}
			if again := aah.Summary(c.req, c.answers, c.outcome); again != s {
				t.Errorf("summary is not deterministic:\n%q\n%q", s, again)
			}
			resp := build(c.req, c.answers, alice, c.outcome)
			if resp.Content.Body.Data.Summary != s {
				t.Errorf("BuildResponse summary differs from Summary")
			}
		})
	}
}

func TestResponseJSONIsStable(t *testing.T) {
	t.Parallel()
	answers := seedAnswers(alice, bob)
	a := answers["d4"]
	a.Comments = said(a.By, answeredAt, "Require CC <b>now</b> & always")
	answers["d4"] = a
	zone := time.FixedZone("CET", 3600)
	opts := aah.ResponseOptions{ID: "r1", CreatedAt: resolvedAt.In(zone).Add(987654321 * time.Nanosecond), ResolvedBy: alice}
	resp := aah.BuildResponse(seedRequest(t), answers, opts)
	first := resp.JSON()
	for _, c := range []struct {
		name string
		got  []byte
	}{
		{"the same response again", resp.JSON()},
		{"a second build from the same input", aah.BuildResponse(seedRequest(t), answers, opts).JSON()},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if !bytes.Equal(first, c.got) {
				t.Errorf("JSON differs:\n%s\n%s", first, c.got)
			}
		})
	}
	t.Run("shape", func(t *testing.T) {
		t.Parallel()
		if !json.Valid(first) || bytes.HasSuffix(first, []byte("\n")) {
			t.Errorf("JSON() is not one JSON value without a trailing newline: %q", first)
		}
		if !bytes.Contains(first, []byte(`"Require CC <b>now</b> & always"`)) {
			t.Errorf("comment is escaped: %s", first)
		}
		if !bytes.Contains(first, []byte(`"created_at":"2026-02-16T14:30:00Z"`)) {
			t.Errorf("created_at is not UTC to the second: %s", first)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		t.Parallel()
		var back aah.Response
		if err := json.Unmarshal(first, &back); err != nil {
			t.Fatal(err)
		}
		if again := back.JSON(); !bytes.Equal(again, first) {
			t.Errorf("decoded and re-encoded response differs:\n%s\n%s", first, again)
		}
	})
	t.Run("the caller's answers are not changed", func(t *testing.T) {
		t.Parallel()
		if !reflect.DeepEqual(answers["d4"].Value, false) || !reflect.DeepEqual(answers["d4"].Comments, a.Comments) {
			t.Errorf("answers changed: %+v", answers["d4"])
		}
	})
}
