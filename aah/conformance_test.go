package aah_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
)

// The conformance test walks seed 000 (AAH-HITL-001) section by section:
// each field of the request with at least one example approvalbot accepts
// and, where the spec or approvalbot restricts it, one it refuses. An
// accepted example passes the schema, aah.Parse and the Slack check intake
// applies (blocks.Check); a refused one is refused at its field, and the
// refusal is either the schema's or a rule of docs/validation.md
// (validationRules), so no refusal goes unexplained.

// conformanceCase is one example: the seed request with edits, accepted
// when refusedAt is "", else refused with a problem at refusedAt.
type conformanceCase struct {
	name      string
	edits     []edit
	refusedAt string
}

func accepted(name string, edits ...edit) conformanceCase {
	return conformanceCase{name: name, edits: edits}
}

func refused(name, at string, edits ...edit) conformanceCase {
	return conformanceCase{name: name, edits: edits, refusedAt: at}
}

// intakeProblems is what intake says of a request (short of the server's
// own settings): aah.Parse's problems, or when it accepts, the Slack check's.
func intakeProblems(raw []byte) ([]aah.FieldError, *aah.Request) {
	req, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
	var verr *aah.ValidationError
	if errors.As(err, &verr) {
		return verr.Problems, nil
	} else if err != nil {
		return []aah.FieldError{{Message: err.Error()}}, nil
	}
	return blocks.Check(req), req
}

// documented reports whether a rule of docs/validation.md covers field.
func documented(field string) bool {
	general := indexPattern.ReplaceAllString(field, "[]")
	return slices.ContainsFunc(validationRules, func(r validationRule) bool {
		return fieldMatches(r.Field, general)
	})
}

func checkConformance(t *testing.T, c conformanceCase) {
	t.Helper()
	raw := mutated(t, c.edits...)
	probs, _ := intakeProblems(raw)
	schemaErr := schema.ValidateRequest(raw)
	if c.refusedAt == "" {
		if len(probs) > 0 {
			t.Errorf("refused at intake:\n%s", formatProblems(probs))
		}
		if schemaErr != nil {
			t.Errorf("the schema refuses it: %v", schemaErr)
		}
		return
	}
	if !slices.ContainsFunc(probs, func(p aah.FieldError) bool { return p.Field == c.refusedAt }) {
		t.Errorf("no problem at %s; got:\n%s", c.refusedAt, formatProblems(probs))
	}
	if schemaErr == nil && !documented(c.refusedAt) {
		t.Errorf("refused at %s by a rule neither the schema nor docs/validation.md states", c.refusedAt)
	}
}

// Decisions the cases use, replacing the seed's d3.
const (
	confMulti  = `{"id":"d3","type":"multi_choice","prompt":"Channels","required":true,"options":[{"value":"email","label":"Email","description":"Newsletter"},{"value":"ads","label":"Ads"}],"default":["ads"],"constraints":{"min":1,"max":2}}`
	confText   = `{"id":"d3","type":"text","prompt":"Tagline","required":false,"default":"Plan more","constraints":{"min":1,"max":40,"pattern":"^[A-Z]"}}`
	confNumber = `{"id":"d3","type":"number","prompt":"Budget","required":true,"default":5000,"constraints":{"min":0,"max":10000}}`
	confDate   = `{"id":"d3","type":"date","prompt":"Launch","required":true,"default":"2026-03-02","constraints":{"min":"2026-03-01","max":"2026-03-31T17:00:00Z"}}`
)

func TestConformanceSeed000Request(t *testing.T) {
	t.Parallel()
	d0, d2 := decPath(0), decPath(2)
	sections := []struct {
		section string
		cases   []conformanceCase
	}{
		{"§1 the request artifact", []conformanceCase{
			accepted("the spec's example as written"),
			refused("aah_version missing", "aah_version", del("aah_version")),
			refused("aah_version 1.0", "aah_version", set("aah_version", "1.0")),
			accepted("artifact.id absent: one is generated", del("artifact.id")),
			refused("artifact.id with a space (Slack action ids)", "artifact.id", set("artifact.id", "abc 123")),
			refused("artifact.type a response", "artifact.type", set("artifact.type", "decision/response")),
			refused("artifact.title missing", "artifact.title", del("artifact.title")),
			refused("artifact.title of 151 characters (a Slack header)", "artifact.title", set("artifact.title", strings.Repeat("t", 151))),
			accepted("artifact.created_at with an offset", set("artifact.created_at", "2026-02-16T11:00:00.250+01:00")),
			refused("artifact.created_at without a zone", "artifact.created_at", set("artifact.created_at", "2026-02-16T10:00:00")),
			refused("artifact.created_at with a one-digit hour", "artifact.created_at", set("artifact.created_at", "2026-02-16T9:00:00Z")),
			refused("source.agent_id missing", "source.agent_id", del("source.agent_id")),
			accepted("source.agent_name and agent_role", set("source.agent_name", "Product manager"), set("source.agent_role", "pm")),
			accepted("content.media_type absent", del("content.media_type")),
			refused("content.media_type another", "content.media_type", set("content.media_type", "application/json")),
			refused("content.body.schema another", "content.body.schema", set("content.body.schema", "aah:decision/request@2.0")),
			accepted("handoff absent", del("handoff")),
			accepted("handoff.target_role absent", del("handoff.target_role")),
			refused("handoff.target_role an agent (approvalbot hands to people)", "handoff.target_role", set("handoff.target_role", "agent")),
			accepted("handoff.expects_response false", set("handoff.expects_response", false)),
			refused("handoff.expects_response a string", "handoff.expects_response", set("handoff.expects_response", "yes")),
			refused("handoff.response_deadline past", "handoff.response_deadline", set("handoff.response_deadline", "2026-02-15T17:00:00Z")),
			accepted("handoff.priority of the example", set("handoff.priority", "high")),
			accepted("handoff.priority any text", set("handoff.priority", "whenever you can")),
			refused("handoff.priority a number", "handoff.priority", set("handoff.priority", js(`1`))),
			accepted("lifecycle.status pending", set("lifecycle.status", "pending")),
			accepted("lifecycle.visibility any text (kept, not honoured)", set("lifecycle.visibility", "private")),
			accepted("lifecycle absent", del("lifecycle")),
		}},
		{"§2 decision types", []conformanceCase{
			accepted("approval and choice (the example)"),
			accepted("multi_choice", set(d2, js(confMulti))),
			accepted("text", set(d2, js(confText))),
			accepted("number", set(d2, js(confNumber))),
			accepted("date", set(d2, js(confDate))),
			refused("an unknown type", d0+".type", set(d0+".type", "yes_no")),
		}},
		{"§3 data", []conformanceCase{
			accepted("context absent", del(dataPath+".context")),
			refused("context over 20,000 characters", dataPath+".context", set(dataPath+".context", strings.Repeat("c", 20001))),
			refused("decisions missing", dataPath+".decisions", del(dataPath+".decisions")),
			refused("decisions empty", dataPath+".decisions", set(dataPath+".decisions", js(`[]`))),
			refused("decision id not unique", decPath(1)+".id", set(decPath(1)+".id", "d1")),
			refused("decision id missing", d0+".id", del(d0+".id")),
			refused("prompt missing", d0+".prompt", del(d0+".prompt")),
			accepted("description absent", del(d0+".description")),
			refused("description over 20,000 characters", d0+".description", set(d0+".description", strings.Repeat("d", 20001))),
			refused("required missing (the spec makes it a boolean, not optional)", d0+".required", del(d0+".required")),
			accepted("default null", set(d0+".default", nil)),
			accepted("default of an approval true", set(d0+".default", true)),
			refused("default of an approval a string", d0+".default", set(d0+".default", "yes")),
			refused("default of a choice not an option", d2+".default", set(d2+".default", "someday")),
			accepted("option description", set(d2+".options[0].description", "Today")),
			refused("choice without options", d2+".options", del(d2+".options"), del(d2+".default")),
			refused("option without label", d2+".options[0].label", del(d2+".options[0].label")),
			refused("101 options (a Slack select holds 100)", d2+".options", set(d2+".options", js(options(101))), set(d2+".default", nil)),
			accepted("options [] on an approval", set(d0+".options", js(`[]`))),
			refused("options on an approval", d0+".options", set(d0+".options", js(`[{"value":"y","label":"Yes"}]`))),
			accepted("constraints on an approval (ignored)", set(d0+".constraints", js(`{"min":1,"max":2}`))),
			accepted("constraints on a choice (ignored)", set(d2+".constraints", js(`{"min":1}`))),
			refused("constraints min > max", d2+".constraints", set(d2, js(confNumber)), set(d2+".constraints", js(`{"min":10,"max":1}`)), set(d2+".default", nil)),
			refused("constraints.pattern with lookbehind", d2+".constraints.pattern", set(d2, js(confText)), set(d2+".constraints.pattern", "(?<=a)b")),
			refused("date bound after the other", d2+".constraints", set(d2, js(confDate)), set(d2+".constraints.min", "2026-04-01"), set(d2+".default", nil)),
			accepted("blocking with artifact_id", set(dataPath+".blocking[0].artifact_id", "aah_plan_1")),
			refused("blocking without description", dataPath+".blocking[0].description", del(dataPath+".blocking[0].description")),
			refused("deadline past", dataPath+".deadline", set(dataPath+".deadline", "2026-02-15T17:00:00Z")),
			refused("deadline with a one-digit month", dataPath+".deadline", set(dataPath+".deadline", "2026-2-17T17:00:00Z")),
			accepted("escalation after 7d to a Slack user", set(dataPath+".escalation", js(`{"after":"7d","to":"U0MANAGER"}`))),
			refused("escalation after not a duration", dataPath+".escalation.after", set(dataPath+".escalation.after", "soon")),
			refused("escalation to an agent_id (names nobody in Slack)", dataPath+".escalation.to", set(dataPath+".escalation.to", "product-manager")),
			refused("escalation to missing", dataPath+".escalation.to", del(dataPath+".escalation.to")),
		}},
		{"§6 lifecycle states", func() []conformanceCase {
			var cs []conformanceCase
			for _, s := range aah.Statuses[1:] {
				cs = append(cs, refused("a new request "+string(s), "lifecycle.status", set("lifecycle.status", string(s))))
			}
			return cs
		}()},
		{"§7 integration", []conformanceCase{
			accepted("target_role human, expects_response true", set("handoff.target_role", "human"), set("handoff.expects_response", true)),
			accepted("extensions a framework adds", set("extensions.ui_hints", js(`{"theme":"dark"}`))),
		}},
	}
	if got := aah.Statuses; !slices.Equal(got, []aah.Status{"pending", "partial", "resolved", "expired", "escalated", "withdrawn"}) {
		t.Errorf("Statuses = %v, want spec §6's six", got)
	}
	for _, s := range sections {
		t.Run(s.section, func(t *testing.T) {
			t.Parallel()
			for _, c := range s.cases {
				t.Run(c.name, func(t *testing.T) { checkConformance(t, c) })
			}
		})
	}
}

// §2 and §4–5: each type's answer in the spec's response format; answers
// the decision does not take are refused (aah.CheckAnswer); the built
// response passes the response schema, and one it does not allow fails it.
func TestConformanceSeed000Response(t *testing.T) {
	t.Parallel()
	req := mustParse(t, mutated(t, set(decPath(2), js(confMulti)),
		set(dataPath+".decisions", js(`[
			{"id":"a","type":"approval","prompt":"Ship?","required":true},
			{"id":"c","type":"choice","prompt":"When?","required":true,"options":[{"value":"now","label":"Now"},{"value":"later","label":"Later"}]},
			`+strings.Replace(confMulti, `"d3"`, `"m"`, 1)+`,
			`+strings.Replace(confText, `"d3"`, `"t"`, 1)+`,
			`+strings.Replace(confNumber, `"d3"`, `"n"`, 1)+`,
			`+strings.Replace(confDate, `"d3"`, `"d"`, 1)+`]`))), aah.ParseOptions{Now: seedNow})
	good := map[string]any{"a": true, "c": "later", "m": []string{"email"}, "t": "Plan less", "n": 2500.0, "d": "2026-03-10"}
	bad := map[string]any{"a": "yes", "c": "never", "m": []string{"fax"}, "t": "lower case", "n": 20000.0, "d": "2026-04-10"}
	at := seedNow.Add(time.Hour)
	by := aah.Person{ID: "U0GRACIE", Name: "Gracie Redfern"}
	answers := map[string]aah.Answer{}
	for _, d := range req.Data.Decisions {
		v, err := aah.CheckAnswer(d, good[d.ID])
		if err != nil {
			t.Errorf("%s answer %v refused: %v", d.Type, good[d.ID], err)
		}
		if _, err := aah.CheckAnswer(d, bad[d.ID]); err == nil {
			t.Errorf("%s answer %v accepted", d.Type, bad[d.ID])
		}
		answers[d.ID] = aah.Answer{DecisionID: d.ID, Value: v, By: by, At: at,
			Comments: []aah.Comment{{By: by, At: at, Text: "Fine"}}}
	}
	resp := aah.BuildResponse(req, answers, aah.ResponseOptions{ID: "aah_decision_resp_xyz789", CreatedAt: at, ResolvedBy: by})
	raw := resp.JSON()
	if err := schema.ValidateResponse(raw); err != nil {
		t.Fatalf("ValidateResponse: %v\n%s", err, raw)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
	handoff := doc["handoff"].(map[string]any)
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"artifact.type", doc["artifact"].(map[string]any)["type"], "decision/response"},
		{"content.media_type", doc["content"].(map[string]any)["media_type"], aah.MediaTypeResponse},
		{"content.body.schema", doc["content"].(map[string]any)["body"].(map[string]any)["schema"], aah.SchemaResponse},
		{"data.request_id", data["request_id"], "aah_decision_abc123"},
		{"handoff.parent_artifact_ids", handoff["parent_artifact_ids"], []any{"aah_decision_abc123"}},
		{"handoff.target_agent", handoff["target_agent"], "product-manager"},
		{"lifecycle.status", doc["lifecycle"].(map[string]any)["status"], "final"},
	} {
		if g, _ := json.Marshal(c.got); string(g) != mustJSON(c.want) {
			t.Errorf("%s = %s, want %s", c.field, g, mustJSON(c.want))
		}
	}
	if s, _ := data["overall_status"].(string); !slices.Contains([]string{"all_approved", "partial", "all_rejected", "pending"}, s) {
		t.Errorf("overall_status = %q, not one of spec §5's", s)
	}
	fields := map[string]string{"a": "approved", "c": "selected", "m": "selected", "t": "value", "n": "value", "d": "value"}
	for _, r := range data["responses"].([]any) {
		r := r.(map[string]any)
		id, _ := r["decision_id"].(string)
		if _, ok := r[fields[id]]; !ok {
			t.Errorf("response to %s lacks %q (spec §2): %v", id, fields[id], r)
		}
		if _, ok := r["decided_at"].(string); !ok {
			t.Errorf("response to %s lacks decided_at: %v", id, r)
		}
	}
	// What the response schema refuses.
	for _, c := range []struct{ name, from, to string }{
		{"an overall_status outside spec §5", `"overall_status":"` + data["overall_status"].(string) + `"`, `"overall_status":"maybe"`},
		{"an approval that is not a boolean", `"approved":true`, `"approved":"yes"`},
	} {
		broken := strings.Replace(string(raw), c.from, c.to, 1)
		if broken == string(raw) {
			t.Fatalf("%s: %s not in the response", c.name, c.from)
		}
		if err := schema.ValidateResponse([]byte(broken)); err == nil {
			t.Errorf("%s: the response schema accepts it", c.name)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Every request example the repository holds validates against the schema
// and is accepted at intake: the example files, the seed's copies in each
// package's testdata, the fuzz corpus's valid request, and the request
// fragments of the docs (merged into the seed's example).
func TestConformanceRepositoryExamples(t *testing.T) {
	t.Parallel()
	now := seedNow // the examples' deadlines lie after it
	files, _ := filepath.Glob("../examples/*.json")
	more, _ := filepath.Glob("../*/testdata/seed000_request.json")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	check := func(t *testing.T, raw []byte) {
		if err := schema.ValidateRequest(raw); err != nil {
			t.Errorf("schema: %v", err)
		}
		req, err := aah.Parse(raw, aah.ParseOptions{Now: now})
		if err != nil {
			t.Fatalf("aah.Parse: %v", err)
		}
		if probs := blocks.Check(req); len(probs) > 0 {
			t.Errorf("Slack check:\n%s", formatProblems(probs))
		}
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			check(t, raw)
		})
	}
	t.Run("fuzz corpus valid_all_decision_types", func(t *testing.T) {
		raw, err := os.ReadFile("testdata/fuzz/FuzzParse/valid_all_decision_types")
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
		var s string
		if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(body), "[]byte("), ")")), &s); err != nil {
			t.Skipf("corpus entry not a plain string literal: %v", err)
		}
		check(t, []byte(s))
	})
	docs, _ := filepath.Glob("../docs/*.md")
	docs = append(docs, "../README.md")
	block := regexp.MustCompile("(?s)```json\n(.*?)```")
	merged := 0
	for _, f := range docs {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(text, -1) {
			src := strings.TrimSpace(string(m[1]))
			if strings.HasPrefix(src, `"`) {
				src = "{" + src + "}" // a fragment: "extensions": {…}
			}
			var frag map[string]any
			if json.Unmarshal([]byte(src), &frag) != nil {
				continue // not JSON (elided with …) or not an object
			}
			ext, ok := frag["extensions"]
			if !ok {
				if frag["aah_version"] != nil {
					t.Run(f+" request", func(t *testing.T) { check(t, []byte(src)) })
				}
				continue
			}
			merged++
			t.Run(f+" extensions", func(t *testing.T) {
				check(t, mutated(t, set("extensions", js(mustJSON(ext)))))
			})
		}
	}
	if merged == 0 {
		t.Errorf("no request fragment found in the docs; the check proves nothing")
	}
}

// handoff.priority: the known ones keep their badge, any other text is
// shown as text (escaped, shortened), never refused.
func TestConformancePriorityShown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ priority, want, notWant string }{
		{"high", ":large_orange_circle: *High priority*", ""},
		{"urgent", ":red_circle: *Urgent*", ""},
		{"whenever you can", "whenever you can priority", ":large_orange_circle:"},
		{"<!channel> now", "&lt;!channel&gt; now priority", "<!channel>"},
		{strings.Repeat("p", 300), strings.Repeat("p", 99) + "… priority", strings.Repeat("p", 101)},
	} {
		req := mustParse(t, mutated(t, set("handoff.priority", c.priority)), aah.ParseOptions{Now: seedNow})
		msg := blocks.Render(req, blocks.State{Status: aah.StatusPending, Version: 1, ReceivedAt: seedNow})
		b, err := json.Marshal(msg.Blocks)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		collectText(&text, b)
		if !strings.Contains(text.String(), c.want) {
			t.Errorf("priority %.20q: message lacks %q", c.priority, c.want)
		}
		if c.notWant != "" && strings.Contains(text.String(), c.notWant) {
			t.Errorf("priority %.20q: message holds %q", c.priority, c.notWant)
		}
	}
}

// collectText appends every string of a JSON document, one a line.
func collectText(b *strings.Builder, raw []byte) {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	walk(v)
}
