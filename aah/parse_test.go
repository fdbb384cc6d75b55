package aah_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// decision is a decision object of the given type with id "x"; extra is
// spliced into the object and starts with a comma.
func decision(typ, extra string) any {
	return js(`{"id":"x","type":"` + typ + `","prompt":"Question?","required":true` + extra + `}`)
}

// abcOptions are three options a, b, c for choice and multi_choice decisions.
const abcOptions = `,"options":[{"value":"a","label":"A"},{"value":"b","label":"B"},{"value":"c","label":"C"}]`

func boolPtr(b bool) *bool { return &b }

func TestParseSeedExample(t *testing.T) {
	t.Parallel()
	req := mustParse(t, seedBytes(t), aah.ParseOptions{Now: seedNow})

	deadline := time.Date(2026, 2, 17, 17, 0, 0, 0, time.UTC)
	want := &aah.Request{
		AAHVersion: "0.1",
		Artifact: aah.Artifact{
			ID:        "aah_decision_abc123",
			Type:      aah.ArtifactTypeRequest,
			Title:     "Approve Marketing Strategy",
			CreatedAt: seedNow,
		},
		Source: aah.Source{AgentID: "product-manager", TaskID: "TASK-456"},
		Data: aah.Data{
			Context: "Review the proposed marketing strategy before launch.",
			Decisions: []aah.Decision{
				{
					ID: "d1", Type: aah.TypeApproval, Prompt: "Approve target audience segments?",
					Description: "Segments: DIY brides (60%), Event planners (30%), Venues (10%)",
					Required:    true,
				},
				{
					ID: "d2", Type: aah.TypeApproval, Prompt: "Approve budget allocation?",
					Description: "$5k/month: Google (50%), LinkedIn (25%), Meta (15%), Content (10%)",
					Required:    true,
				},
				{
					ID: "d3", Type: aah.TypeChoice, Prompt: "Select launch timing", Required: true,
					Default: "next_week",
					Options: []aah.Option{
						{Value: "immediate", Label: "Launch immediately"},
						{Value: "next_week", Label: "Launch next Monday"},
						{Value: "next_month", Label: "Wait for Q2"},
					},
				},
				{
					ID: "d4", Type: aah.TypeApproval, Prompt: "Offer 14-day free trial?",
					Description: "No credit card required for trial signup",
					Required:    false, Default: true,
				},
			},
			Blocking: []aah.BlockingItem{
				{TaskID: "TASK-457", Description: "Launch campaign"},
				{TaskID: "TASK-458", Description: "Create landing pages"},
			},
			Deadline:   deadline,
			Escalation: []aah.EscalationStep{{After: 24 * time.Hour, AfterRaw: "24h", To: "manager@example.com"}},
		},
		Handoff: aah.Handoff{
			TargetRole:       "human",
			ExpectsResponse:  boolPtr(true),
			ResponseDeadline: deadline,
			Priority:         "high",
		},
		Lifecycle:  aah.Lifecycle{Status: "pending", Visibility: "team"},
		OnDeadline: aah.DeadlineExpire,
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("parsed seed example:\n got %+v\nwant %+v", *req, *want)
	}

	// The typed defaults, spelled out (Decision.Default's doc).
	d1, _ := req.Decision("d1")
	if d1.Default != nil || d1.HasDefault() {
		t.Errorf("d1 default = %#v (HasDefault %v), want nil: it is null", d1.Default, d1.HasDefault())
	}
	d3, _ := req.Decision("d3")
	if s, ok := d3.Default.(string); !ok || s != "next_week" || !d3.HasDefault() {
		t.Errorf("d3 default = %#v, want string next_week", d3.Default)
	}
	if got := d3.OptionLabel("next_week"); got != "Launch next Monday" {
		t.Errorf("d3 OptionLabel(next_week) = %q", got)
	}
	if got := d3.OptionLabel("unknown"); got != "unknown" {
		t.Errorf("d3 OptionLabel(unknown) = %q, want the value itself", got)
	}
	d4, _ := req.Decision("d4")
	if b, ok := d4.Default.(bool); !ok || !b {
		t.Errorf("d4 default = %#v, want bool true", d4.Default)
	}
	if _, ok := req.Decision("d9"); ok {
		t.Errorf("Decision(d9) found a decision that does not exist")
	}
	if got := req.EffectiveDeadline(); !got.Equal(deadline) {
		t.Errorf("EffectiveDeadline = %v, want %v", got, deadline)
	}
	if req.Handoff.ExpectsResponse == nil || !*req.Handoff.ExpectsResponse {
		t.Errorf("handoff.expects_response = %v, want true", req.Handoff.ExpectsResponse)
	}
}

// badCase is a request that must be refused with exactly the listed problems.
type badCase struct {
	name  string
	isRaw bool // raw is the body, instead of the edited seed example
	raw   string
	edits []edit
	opts  func(*aah.ParseOptions)
	want  []problem
}

func one(field, msg string) []problem { return []problem{{field, msg}} }

func allowInsecure(o *aah.ParseOptions) { o.AllowInsecureCallbacks = true }

func fiftyOneReviewers() any {
	r := make([]any, 51)
	for i := range r {
		r[i] = fmt.Sprintf("U%05d", i)
	}
	return r
}

func badCases() []badCase {
	d0, d1, d2, d3 := decPath(0), decPath(1), decPath(2), decPath(3)
	esc := dataPath + ".escalation"
	textWith := func(extra string) edit { return set(d0, decision("text", extra)) }
	numberWith := func(extra string) edit { return set(d0, decision("number", extra)) }
	multiWith := func(extra string) edit { return set(d0, decision("multi_choice", abcOptions+extra)) }
	dateWith := func(extra string) edit { return set(d0, decision("date", extra)) }
	url := func(u string) edit { return set("handoff.response_url", u) }
	const notPublic = "points to a non-public address"

	return []badCase{
		// The body as a whole.
		{isRaw: true, name: "body not JSON", raw: `not json`, want: one("", "body is not valid JSON")},
		{isRaw: true, name: "body empty", raw: ``, want: one("", "body is not valid JSON")},
		{isRaw: true, name: "body truncated", raw: `{"aah_version":"0.1"`, want: one("", "body is not valid JSON")},
		{isRaw: true, name: "body JSON array", raw: `[{"aah_version":"0.1"}]`, want: one("", "must be an object, got an array")},
		{isRaw: true, name: "body JSON null", raw: `null`, want: one("", "body must be a JSON object")},
		{isRaw: true, name: "body JSON number", raw: `42`, want: one("", "must be an object, got a number")},
		{isRaw: true, name: "body JSON string", raw: `"decision"`, want: one("", "must be an object, got a string")},
		{isRaw: true, name: "two JSON values concatenated", raw: `{"aah_version":"0.1"} {"aah_version":"0.1"}`, want: one("", "exactly one JSON object")},
		{isRaw: true, name: "trailing garbage", raw: `{"aah_version":"0.1"} x`, want: one("", "exactly one JSON object")},
		{isRaw: true, name: "trailing close bracket", raw: `{"aah_version":"0.1"}]`, want: one("", "exactly one JSON object")},
		{isRaw: true, name: "trailing close brace", raw: `{"aah_version":"0.1"} }`, want: one("", "exactly one JSON object")},
		{isRaw: true, name: "trailing comma", raw: `{"aah_version":"0.1"},`, want: one("", "exactly one JSON object")},
		{isRaw: true, name: "trailing NUL", raw: "{\"aah_version\":\"0.1\"}\x00", want: one("", "exactly one JSON object")},
		{isRaw: true, name: "empty object", raw: `{}`, want: []problem{
			{"aah_version", "is required"}, {"artifact", "is required"},
			{"source", "is required"}, {"content", "is required"},
		}},

		// aah_version.
		{name: "aah_version missing", edits: []edit{del("aah_version")}, want: one("aah_version", "is required")},
		{name: "aah_version 2.0", edits: []edit{set("aah_version", "2.0")}, want: one("aah_version", `unsupported AAH version "2.0"`)},
		{name: "aah_version 1.0", edits: []edit{set("aah_version", "1.0")}, want: one("aah_version", "unsupported AAH version")},
		{name: "aah_version number", edits: []edit{set("aah_version", js(`0.1`))}, want: one("aah_version", "must be a string, got a number")},

		// artifact.
		{name: "artifact missing", edits: []edit{del("artifact")}, want: one("artifact", "is required")},
		{name: "artifact null", edits: []edit{set("artifact", nil)}, want: one("artifact", "is required")},
		{name: "artifact a string", edits: []edit{set("artifact", "aah_decision_abc123")}, want: one("artifact", "must be an object, got a string")},
		{name: "artifact.type response", edits: []edit{set("artifact.type", "decision/response")}, want: one("artifact.type", `must be "decision/request", got "decision/response"`)},
		{name: "artifact.type missing", edits: []edit{del("artifact.type")}, want: one("artifact.type", "is required")},
		{name: "artifact.type number", edits: []edit{set("artifact.type", js(`1`))}, want: one("artifact.type", "must be a string")},
		{name: "title missing", edits: []edit{del("artifact.title")}, want: one("artifact.title", "is required")},
		{name: "title blank", edits: []edit{set("artifact.title", "  \t ")}, want: one("artifact.title", "must not be empty")},
		{name: "title empty", edits: []edit{set("artifact.title", "")}, want: one("artifact.title", "must not be empty")},
		{name: "title array", edits: []edit{set("artifact.title", js(`["a"]`))}, want: one("artifact.title", "must be a string, got an array")},
		{name: "id empty string", edits: []edit{set("artifact.id", "")}, want: one("artifact.id", "must not be empty; omit it")},
		{name: "id with slash", edits: []edit{set("artifact.id", "req/1")}, want: one("artifact.id", "must be 1-128 characters")},
		{name: "id with space", edits: []edit{set("artifact.id", "req 1")}, want: one("artifact.id", "must be 1-128 characters")},
		{name: "id 129 chars", edits: []edit{set("artifact.id", strings.Repeat("a", 129))}, want: one("artifact.id", "must be 1-128 characters")},
		{name: "id starts with underscore", edits: []edit{set("artifact.id", "_req")}, want: one("artifact.id", "starting with a letter or digit")},
		{name: "id starts with dash", edits: []edit{set("artifact.id", "-req")}, want: one("artifact.id", "starting with a letter or digit")},
		{name: "id non-ASCII", edits: []edit{set("artifact.id", "réq")}, want: one("artifact.id", "must be 1-128 characters")},
		{name: "created_at not ISO", edits: []edit{set("artifact.created_at", "2026-02-16 10:00")}, want: one("artifact.created_at", "ISO 8601 date-time with a time zone")},
		{name: "created_at without zone", edits: []edit{set("artifact.created_at", "2026-02-16T10:00:00")}, want: one("artifact.created_at", "ISO 8601")},
		{name: "created_at unix number", edits: []edit{set("artifact.created_at", js(`1771236000`))}, want: one("artifact.created_at", "must be a string, got a number")},

		// source.
		{name: "source missing", edits: []edit{del("source")}, want: one("source", "is required")},
		{name: "source an array", edits: []edit{set("source", js(`[]`))}, want: one("source", "must be an object, got an array")},
		{name: "agent_id missing", edits: []edit{del("source.agent_id")}, want: one("source.agent_id", "is required")},
		{name: "agent_id blank", edits: []edit{set("source.agent_id", " ")}, want: one("source.agent_id", "must not be empty")},
		{name: "agent_id number", edits: []edit{set("source.agent_id", js(`7`))}, want: one("source.agent_id", "must be a string")},
		{name: "task_id number", edits: []edit{set("source.task_id", js(`456`))}, want: one("source.task_id", "must be a string, got a number")},

		// content and body.
		{name: "content missing", edits: []edit{del("content")}, want: one("content", "is required")},
		{name: "content a string", edits: []edit{set("content", "x")}, want: one("content", "must be an object")},
		{name: "media_type wrong", edits: []edit{set("content.media_type", "application/json")}, want: one("content.media_type", `must be "application/vnd.aah.decision-request+json", got "application/json"`)},
		{name: "media_type of a response", edits: []edit{set("content.media_type", aah.MediaTypeResponse)}, want: one("content.media_type", "must be")},
		{name: "media_type number", edits: []edit{set("content.media_type", js(`1`))}, want: one("content.media_type", "must be a string")},
		{name: "body missing", edits: []edit{del("content.body")}, want: one("content.body", "is required")},
		{name: "body a string", edits: []edit{set("content.body", "{}")}, want: one("content.body", "must be an object, got a string")},
		{name: "schema wrong", edits: []edit{set("content.body.schema", aah.SchemaResponse)}, want: one("content.body.schema", `must be "aah:decision/request@1.0"`)},
		{name: "schema missing", edits: []edit{del("content.body.schema")}, want: one("content.body.schema", "is required")},
		{name: "schema blank", edits: []edit{set("content.body.schema", "")}, want: one("content.body.schema", "must not be empty")},
		{name: "data missing", edits: []edit{del(dataPath)}, want: one(dataPath, "is required")},
		{name: "data an array", edits: []edit{set(dataPath, js(`[]`))}, want: one(dataPath, "must be an object, got an array")},
		{name: "context number", edits: []edit{set(dataPath+".context", js(`5`))}, want: one(dataPath+".context", "must be a string, got a number")},

		// decisions.
		{name: "decisions missing", edits: []edit{del(dataPath + ".decisions")}, want: one(dataPath+".decisions", "is required")},
		{name: "decisions null", edits: []edit{set(dataPath+".decisions", nil)}, want: one(dataPath+".decisions", "is required")},
		{name: "decisions empty", edits: []edit{set(dataPath+".decisions", js(`[]`))}, want: one(dataPath+".decisions", "must hold at least one decision")},
		{name: "decisions a string", edits: []edit{set(dataPath+".decisions", "d1")}, want: one(dataPath+".decisions", "must be an array, got a string")},
		{name: "decisions an object", edits: []edit{set(dataPath+".decisions", js(`{"id":"d1"}`))}, want: one(dataPath+".decisions", "must be an array, got an object")},
		{name: "decision a string", edits: []edit{set(d1, "d2")}, want: one(d1, "must be an object, got a string")},
		{name: "decision null", edits: []edit{set(d1, nil)}, want: one(d1, "is required")},
		{name: "duplicate decision id", edits: []edit{set(d1+".id", "d1")}, want: one(d1+".id", `duplicates the id of decisions[0] ("d1")`)},
		{name: "decision id used three times", edits: []edit{set(d1+".id", "d1"), set(d3+".id", "d1")}, want: []problem{
			{d1 + ".id", "duplicates the id of decisions[0]"}, {d3 + ".id", "duplicates the id of decisions[0]"},
		}},
		{name: "decision id with space", edits: []edit{set(d0+".id", "d 1")}, want: one(d0+".id", "must be 1-64 characters")},
		{name: "decision id with colon", edits: []edit{set(d0+".id", "d:1")}, want: one(d0+".id", "must be 1-64 characters")},
		{name: "decision id 65 chars", edits: []edit{set(d0+".id", strings.Repeat("d", 65))}, want: one(d0+".id", "must be 1-64 characters")},
		{name: "decision id missing", edits: []edit{del(d0 + ".id")}, want: one(d0+".id", "is required")},
		{name: "decision id empty", edits: []edit{set(d0+".id", "")}, want: one(d0+".id", "must not be empty")},
		{name: "decision id number", edits: []edit{set(d0+".id", js(`1`))}, want: one(d0+".id", "must be a string, got a number")},
		{name: "decision type unknown", edits: []edit{set(d0+".type", "yes_no")}, want: one(d0+".type", `must be one of approval, choice, multi_choice, text, number, date; got "yes_no"`)},
		{name: "decision type capitalised", edits: []edit{set(d0+".type", "Approval")}, want: one(d0+".type", "must be one of")},
		{name: "decision type unknown skips option checks", edits: []edit{set(d2+".type", "select")}, want: one(d2+".type", "must be one of")},
		{name: "decision type missing", edits: []edit{del(d0 + ".type")}, want: one(d0+".type", "is required")},
		{name: "prompt missing", edits: []edit{del(d0 + ".prompt")}, want: one(d0+".prompt", "is required")},
		{name: "prompt blank", edits: []edit{set(d0+".prompt", " ")}, want: one(d0+".prompt", "must not be empty")},
		{name: "description number", edits: []edit{set(d0+".description", js(`1`))}, want: one(d0+".description", "must be a string")},
		{name: "required missing", edits: []edit{del(d0 + ".required")}, want: one(d0+".required", "is required (true or false)")},
		{name: "required null", edits: []edit{set(d0+".required", nil)}, want: one(d0+".required", "is required (true or false)")},
		{name: "required a string", edits: []edit{set(d0+".required", "true")}, want: one(d0+".required", "must be true or false, got a string")},
		{name: "required a number", edits: []edit{set(d0+".required", js(`1`))}, want: one(d0+".required", "must be true or false, got a number")},

		// options.
		{name: "options on an approval", edits: []edit{set(d0+".options", js(`[{"value":"yes","label":"Yes"}]`))}, want: one(d0+".options", "only choice and multi_choice decisions take options")},
		{name: "options on a text", edits: []edit{textWith(abcOptions)}, want: one(d0+".options", "only choice and multi_choice")},
		{name: "choice without options", edits: []edit{del(d2 + ".options"), del(d2 + ".default")}, want: one(d2+".options", "a choice decision needs at least one option")},
		{name: "choice with empty options", edits: []edit{set(d2+".options", js(`[]`)), del(d2 + ".default")}, want: one(d2+".options", "needs at least one option")},
		{name: "choice with null options", edits: []edit{set(d2+".options", nil), del(d2 + ".default")}, want: one(d2+".options", "needs at least one option")},
		{name: "multi_choice without options", edits: []edit{set(d0, decision("multi_choice", ""))}, want: one(d0+".options", "a multi_choice decision needs at least one option")},
		{name: "options a string", edits: []edit{set(d2+".options", "immediate")}, want: []problem{
			{d2 + ".options", "must be an array, got a string"},
			{d2 + ".default", `"next_week" is not one of the option values`},
		}},
		{name: "duplicate option values", edits: []edit{set(d2+".options[2].value", "immediate")}, want: one(d2+".options[2].value", `duplicates the value of options[0] ("immediate")`)},
		{name: "option missing label", edits: []edit{del(d2 + ".options[0].label")}, want: one(d2+".options[0].label", "is required")},
		{name: "option blank label", edits: []edit{set(d2+".options[0].label", "")}, want: one(d2+".options[0].label", "must not be empty")},
		{name: "option missing value", edits: []edit{del(d2 + ".options[0].value")}, want: one(d2+".options[0].value", "is required")},
		{name: "option value not a string", edits: []edit{set(d2+".options[0].value", js(`1`))}, want: one(d2+".options[0].value", "must be a string, got a number")},
		{name: "option not an object", edits: []edit{set(d2+".options[0]", "immediate")}, want: one(d2+".options[0]", "must be an object, got a string")},
		{name: "option description number", edits: []edit{set(d2+".options[0].description", js(`1`))}, want: one(d2+".options[0].description", "must be a string")},

		// constraints.
		{name: "constraints on a date", edits: []edit{dateWith(`,"constraints":{"min":1}`)}, want: one(d0+".constraints.min", "bounds a date: an ISO 8601 date (2026-02-17) or date-time, got a number")},
		{name: "constraints a string", edits: []edit{textWith(`,"constraints":"max 5"`)}, want: one(d0+".constraints", "must be an object, got a string")},
		{name: "text min greater than max", edits: []edit{textWith(`,"constraints":{"min":10,"max":5}`)}, want: one(d0+".constraints", "min (10) is greater than max (5)")},
		{name: "text max 5000", edits: []edit{textWith(`,"constraints":{"max":5000}`)}, want: one(d0+".constraints.max", "a whole number from 0 to 3000")},
		{name: "text min 3001", edits: []edit{textWith(`,"constraints":{"min":3001}`)}, want: one(d0+".constraints.min", "a whole number from 0 to 3000")},
		{name: "text min negative", edits: []edit{textWith(`,"constraints":{"min":-1}`)}, want: one(d0+".constraints.min", "is a length in characters")},
		{name: "text min 1.5", edits: []edit{textWith(`,"constraints":{"min":1.5}`)}, want: one(d0+".constraints.min", "is a length in characters")},
		{name: "text max 0", edits: []edit{textWith(`,"constraints":{"max":0}`)}, want: one(d0+".constraints.max", "must allow at least one character")},
		{name: "text min a string", edits: []edit{textWith(`,"constraints":{"min":"1"}`)}, want: one(d0+".constraints.min", "must be a number, got a string")},
		{name: "text max overflows", edits: []edit{textWith(`,"constraints":{"max":1e400}`)}, want: one(d0+".constraints.max", "must be a finite number")},
		{name: "pattern unbalanced paren", edits: []edit{textWith(`,"constraints":{"pattern":"("}`)}, want: one(d0+".constraints.pattern", "is not a valid RE2 regular expression")},
		{name: "pattern lookahead", edits: []edit{textWith(`,"constraints":{"pattern":"(?=x)"}`)}, want: one(d0+".constraints.pattern", "is not a valid RE2 regular expression")},
		{name: "pattern backreference", edits: []edit{textWith(`,"constraints":{"pattern":"(a)\\1"}`)}, want: one(d0+".constraints.pattern", "not a valid RE2")},
		{name: "pattern a number", edits: []edit{textWith(`,"constraints":{"pattern":5}`)}, want: one(d0+".constraints.pattern", "must be a string, got a number")},
		{name: "pattern on a number decision", edits: []edit{numberWith(`,"constraints":{"pattern":"^1"}`)}, want: one(d0+".constraints.pattern", "only text decisions take a pattern")},
		{name: "pattern on a multi_choice", edits: []edit{multiWith(`,"constraints":{"pattern":"a"}`)}, want: one(d0+".constraints.pattern", "only text decisions take a pattern")},
		{name: "number min greater than max", edits: []edit{numberWith(`,"constraints":{"min":10,"max":1}`)}, want: one(d0+".constraints", "min (10) is greater than max (1)")},
		{name: "number min a string", edits: []edit{numberWith(`,"constraints":{"min":"0"}`)}, want: one(d0+".constraints.min", "must be a number, got a string")},
		{name: "number max overflows", edits: []edit{numberWith(`,"constraints":{"max":-1e999}`)}, want: one(d0+".constraints.max", "must be a finite number")},
		{name: "multi_choice max above option count", edits: []edit{multiWith(`,"constraints":{"max":4}`)}, want: one(d0+".constraints.max", "counts selected options: a whole number from 0 to 3")},
		{name: "multi_choice min above option count", edits: []edit{multiWith(`,"constraints":{"min":4}`)}, want: one(d0+".constraints.min", "from 0 to 3")},
		{name: "multi_choice max 0", edits: []edit{multiWith(`,"constraints":{"max":0}`)}, want: one(d0+".constraints.max", "must allow at least one selection")},
		{name: "multi_choice min negative", edits: []edit{multiWith(`,"constraints":{"min":-1}`)}, want: one(d0+".constraints.min", "counts selected options")},
		{name: "multi_choice max 1.5", edits: []edit{multiWith(`,"constraints":{"max":1.5}`)}, want: one(d0+".constraints.max", "counts selected options")},
		{name: "multi_choice min greater than max", edits: []edit{multiWith(`,"constraints":{"min":3,"max":2}`)}, want: one(d0+".constraints", "min (3) is greater than max (2)")},

		// Defaults of the wrong type, one per decision type.
		{name: "approval default a string", edits: []edit{set(d3+".default", "yes")}, want: one(d3+".default", "must be true or false, got a string")},
		{name: "approval default a number", edits: []edit{set(d3+".default", js(`1`))}, want: one(d3+".default", "must be true or false, got a number")},
		{name: "choice default a boolean", edits: []edit{set(d2+".default", true)}, want: one(d2+".default", "must be a string, got a boolean")},
		{name: "choice default an array", edits: []edit{set(d2+".default", js(`["next_week"]`))}, want: one(d2+".default", "must be a string, got an array")},
		{name: "multi_choice default a string", edits: []edit{multiWith(`,"default":"a"`)}, want: one(d0+".default", "must be an array, got a string")},
		{name: "text default a number", edits: []edit{textWith(`,"default":5`)}, want: one(d0+".default", "must be a string, got a number")},
		{name: "number default a string", edits: []edit{numberWith(`,"default":"5"`)}, want: one(d0+".default", "must be a number, got a string")},
		{name: "number default a boolean", edits: []edit{numberWith(`,"default":true`)}, want: one(d0+".default", "must be a number, got a boolean")},
		{name: "number default overflows", edits: []edit{numberWith(`,"default":1e400`)}, want: one(d0+".default", "must be a finite number")},
		{name: "date default a number", edits: []edit{dateWith(`,"default":20260301`)}, want: one(d0+".default", "must be a string, got a number")},
		{name: "date default an object", edits: []edit{dateWith(`,"default":{"date":"2026-03-01"}`)}, want: one(d0+".default", "must be a string, got an object")},

		// Defaults that break the options or constraints.
		{name: "choice default not an option", edits: []edit{set(d2+".default", "later")}, want: one(d2+".default", `"later" is not one of the option values`)},
		{name: "choice default empty", edits: []edit{set(d2+".default", "")}, want: one(d2+".default", `"" is not one of the option values`)},
		{name: "choice default is a label", edits: []edit{set(d2+".default", "Launch next Monday")}, want: one(d2+".default", "is not one of the option values")},
		{name: "multi_choice default unknown value", edits: []edit{multiWith(`,"default":["a","z"]`)}, want: one(d0+".default[1]", `"z" is not one of the option values`)},
		{name: "multi_choice default duplicate", edits: []edit{multiWith(`,"default":["a","a"]`)}, want: one(d0+".default[1]", `selects "a" twice`)},
		{name: "multi_choice default too many for max", edits: []edit{multiWith(`,"constraints":{"max":1},"default":["a","b"]`)}, want: one(d0+".default", "must select at most 1 options")},
		{name: "multi_choice default too few for min", edits: []edit{multiWith(`,"constraints":{"min":2},"default":["a"]`)}, want: one(d0+".default", "must select at least 2 options")},
		{name: "multi_choice default empty with min", edits: []edit{multiWith(`,"constraints":{"min":1},"default":[]`)}, want: one(d0+".default", "must select at least 1 options")},
		{name: "multi_choice default element a number", edits: []edit{multiWith(`,"default":[1]`)}, want: one(d0+".default[0]", "must be a string, got a number")},
		{name: "multi_choice default element empty", edits: []edit{multiWith(`,"default":[""]`)}, want: one(d0+".default[0]", "must not be empty")},
		{name: "text default too long for max", edits: []edit{textWith(`,"constraints":{"max":5},"default":"abcdefgh"`)}, want: one(d0+".default", "must be at most 5 characters long")},
		{name: "text default too short for min", edits: []edit{textWith(`,"constraints":{"min":3},"default":"ab"`)}, want: one(d0+".default", "must be at least 3 characters long")},
		{name: "text default violates pattern", edits: []edit{textWith(`,"constraints":{"pattern":"^[A-Z]+$"},"default":"abc"`)}, want: one(d0+".default", "must match the pattern ^[A-Z]+$")},
		{name: "text default longer than 3000", edits: []edit{textWith(`,"default":"` + strings.Repeat("x", 3001) + `"`)}, want: one(d0+".default", "must be at most 3000 characters long")},
		{name: "number default above max", edits: []edit{numberWith(`,"constraints":{"max":10},"default":11`)}, want: one(d0+".default", "must be at most 10")},
		{name: "number default below min", edits: []edit{numberWith(`,"constraints":{"min":0},"default":-0.5`)}, want: one(d0+".default", "must be at least 0")},
		{name: "date default tomorrow", edits: []edit{dateWith(`,"default":"tomorrow"`)}, want: one(d0+".default", `must be an ISO 8601 date (2026-02-17) or date-time with a time zone, got "tomorrow"`)},
		{name: "date default without zone", edits: []edit{dateWith(`,"default":"2026-03-01T09:00:00"`)}, want: one(d0+".default", "must be an ISO 8601 date")},
		{name: "date default blank", edits: []edit{dateWith(`,"default":"   "`)}, want: one(d0+".default", "must be an ISO 8601 date")},
		{name: "date default February 30", edits: []edit{dateWith(`,"default":"2026-02-30"`)}, want: one(d0+".default", "must be an ISO 8601 date")},
		{name: "date default US format", edits: []edit{dateWith(`,"default":"03/01/2026"`)}, want: one(d0+".default", "must be an ISO 8601 date")},

		// Deadlines.
		{name: "deadline not ISO", edits: []edit{set(dataPath+".deadline", "2026-02-17 17:00")}, want: one(dataPath+".deadline", "must be an ISO 8601 date-time with a time zone")},
		{name: "deadline without zone", edits: []edit{set(dataPath+".deadline", "2026-02-17T17:00:00")}, want: one(dataPath+".deadline", "ISO 8601")},
		{name: "deadline date only", edits: []edit{set(dataPath+".deadline", "2026-02-17")}, want: one(dataPath+".deadline", "ISO 8601")},
		{name: "deadline a number", edits: []edit{set(dataPath+".deadline", js(`1771347600`))}, want: one(dataPath+".deadline", "must be a string, got a number")},
		{name: "deadline in the past", edits: []edit{set(dataPath+".deadline", "2026-02-15T00:00:00Z")}, want: one(dataPath+".deadline", "is in the past (2026-02-15T00:00:00Z)")},
		{name: "deadline exactly now", edits: []edit{set(dataPath+".deadline", "2026-02-16T10:00:00Z")}, want: one(dataPath+".deadline", "is in the past")},
		{name: "deadline in the past by its offset", edits: []edit{set(dataPath+".deadline", "2026-02-16T11:00:00+02:00")}, want: one(dataPath+".deadline", "is in the past (2026-02-16T09:00:00Z)")},
		{name: "deadline past relative to Now option", opts: func(o *aah.ParseOptions) { o.Now = time.Date(2026, 2, 17, 18, 0, 0, 0, time.UTC) },
			edits: []edit{del("handoff.response_deadline")}, want: one(dataPath+".deadline", "is in the past")},
		{name: "response_deadline in the past", edits: []edit{set("handoff.response_deadline", "2026-02-16T09:59:59Z")}, want: one("handoff.response_deadline", "is in the past")},
		{name: "response_deadline not ISO", edits: []edit{set("handoff.response_deadline", "tomorrow")}, want: one("handoff.response_deadline", "ISO 8601")},
		{name: "both deadlines in the past", opts: func(o *aah.ParseOptions) { o.Now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }, want: []problem{
			{dataPath + ".deadline", "is in the past"}, {"handoff.response_deadline", "is in the past"},
		}},

		// Escalation.
		{name: "escalation after soon", edits: []edit{set(esc+".after", "soon")}, want: one(esc+".after", `"soon" is not a duration`)},
		{name: "escalation after 0h", edits: []edit{set(esc+".after", "0h")}, want: one(esc+".after", "must be greater than zero")},
		{name: "escalation after -5m", edits: []edit{set(esc+".after", "-5m")}, want: one(esc+".after", "is not a duration")},
		{name: "escalation after P1M", edits: []edit{set(esc+".after", "P1M")}, want: one(esc+".after", "is not an ISO 8601 duration")},
		{name: "escalation after eleven years", edits: []edit{set(esc+".after", "100000h")}, want: one(esc+".after", "longer than ten years")},
		{name: "escalation after a number", edits: []edit{set(esc+".after", js(`24`))}, want: one(esc+".after", "must be a string, got a number")},
		{name: "escalation after missing", edits: []edit{del(esc + ".after")}, want: one(esc+".after", "is required")},
		{name: "escalation to missing", edits: []edit{del(esc + ".to")}, want: one(esc+".to", "is required")},
		{name: "escalation to blank", edits: []edit{set(esc+".to", "")}, want: one(esc+".to", "must not be empty")},
		{name: "escalation to a role", edits: []edit{set(esc+".to", "role:finance")},
			want: one(esc+".to", `"role:finance" is not a target approvalbot can escalate to; use a Slack user id (U…/W…), an email address`)},
		{name: "escalation to a bare word", edits: []edit{set(esc+".to", "foo")}, want: one(esc+".to", "user group id (S…), a channel id (C…/G…) or a channel name (#approvals)")},
		{name: "escalation to a display name", edits: []edit{set(esc+".to", "Ann Lee <ann@example.com>")}, want: one(esc+".to", "is not a target")},
		{name: "escalation list step to an agent id", edits: []edit{set(esc, js(`[{"after":"1h","to":"U0LEAD"},{"after":"2h","to":"agent:pm"}]`))}, want: one(esc+"[1].to", "is not a target")},
		{name: "escalation a string", edits: []edit{set(esc, "24h")}, want: one(esc, "must be an object {after, to} or a list of them, got a string")},
		{name: "escalation a boolean", edits: []edit{set(esc, true)}, want: one(esc, "got a boolean")},
		{name: "escalation empty list", edits: []edit{set(esc, js(`[]`))}, want: one(esc, "must hold at least one step")},
		{name: "escalation list decreasing", edits: []edit{set(esc, js(`[{"after":"48h","to":"U0LEAD"},{"after":"24h","to":"manager@example.com"}]`))},
			want: one(esc+"[1].after", "must be later than the previous step (48h0m0s)")},
		{name: "escalation list equal after in two notations", edits: []edit{set(esc, js(`[{"after":"24h","to":"U0LEAD"},{"after":"P1D","to":"S0VPS"}]`))},
			want: one(esc+"[1].after", "must be later than the previous step")},
		{name: "escalation list step a string", edits: []edit{set(esc, js(`["24h"]`))}, want: one(esc+"[0]", "must be an object, got a string")},
		{name: "escalation list step missing to", edits: []edit{set(esc, js(`[{"after":"1h","to":"U0LEAD"},{"after":"2h"}]`))}, want: one(esc+"[1].to", "is required")},

		// Blocking items.
		{name: "blocking item without description", edits: []edit{del(dataPath + ".blocking[0].description")}, want: one(dataPath+".blocking[0].description", "is required")},
		{name: "blocking item blank description", edits: []edit{set(dataPath+".blocking[1].description", " ")}, want: one(dataPath+".blocking[1].description", "must not be empty")},
		{name: "blocking not an array", edits: []edit{set(dataPath+".blocking", js(`{"task_id":"TASK-457","description":"x"}`))}, want: one(dataPath+".blocking", "must be an array, got an object")},
		{name: "blocking item a string", edits: []edit{set(dataPath+".blocking[1]", "TASK-458")}, want: one(dataPath+".blocking[1]", "must be an object, got a string")},
		{name: "blocking task_id a number", edits: []edit{set(dataPath+".blocking[0].task_id", js(`457`))}, want: one(dataPath+".blocking[0].task_id", "must be a string")},

		// Handoff.
		{name: "handoff a string", edits: []edit{set("handoff", "human")}, want: one("handoff", "must be an object, got a string")},
		{name: "expects_response a string", edits: []edit{set("handoff.expects_response", "yes")}, want: one("handoff.expects_response", "must be true or false, got a string")},
		{name: "target_role a number", edits: []edit{set("handoff.target_role", js(`1`))}, want: one("handoff.target_role", "must be a string")},
		{name: "response_url ftp", edits: []edit{url("ftp://x")}, want: one("handoff.response_url", `must use https, got scheme "ftp"`)},
		{name: "response_url not a url", edits: []edit{url("not a url")}, want: one("handoff.response_url", "must be an absolute URL")},
		{name: "response_url relative", edits: []edit{url("/callbacks/1")}, want: one("handoff.response_url", "must be an absolute URL")},
		{name: "response_url without host", edits: []edit{url("https:///cb")}, want: one("handoff.response_url", "must be an absolute URL")},
		{name: "response_url bad escape", edits: []edit{url("https://example.com/%zz")}, want: one("handoff.response_url", "must be an absolute URL")},
		{name: "response_url http", edits: []edit{url("http://example.com")}, want: one("handoff.response_url", "must use https (plain http is allowed only with CALLBACK_ALLOW_PRIVATE=true)")},
		{name: "response_url with credentials", edits: []edit{url("https://user:pw@example.com")}, want: one("handoff.response_url", "must not carry credentials")},
		{name: "response_url with credentials even when insecure allowed", opts: allowInsecure, edits: []edit{url("https://user:pw@example.com")}, want: one("handoff.response_url", "must not carry credentials")},
		{name: "response_url ftp even when insecure allowed", opts: allowInsecure, edits: []edit{url("ftp://x")}, want: one("handoff.response_url", `got scheme "ftp"`)},
		{name: "response_url loopback", edits: []edit{url("https://127.0.0.1/cb")}, want: one("handoff.response_url", notPublic+" 127.0.0.1")},
		{name: "response_url private 10/8", edits: []edit{url("https://10.0.0.5/cb")}, want: one("handoff.response_url", notPublic+" 10.0.0.5")},
		{name: "response_url private 192.168/16", edits: []edit{url("https://192.168.1.1:8443/cb")}, want: one("handoff.response_url", notPublic)},
		{name: "response_url link-local metadata", edits: []edit{url("https://169.254.169.254/latest/meta-data")}, want: one("handoff.response_url", notPublic)},
		{name: "response_url IPv6 loopback", edits: []edit{url("https://[::1]/cb")}, want: one("handoff.response_url", notPublic)},
		{name: "response_url IPv4-mapped loopback", edits: []edit{url("https://[::ffff:127.0.0.1]/cb")}, want: one("handoff.response_url", notPublic)},
		{name: "response_url unspecified", edits: []edit{url("https://0.0.0.0/cb")}, want: one("handoff.response_url", notPublic)},
		{name: "response_url a number", edits: []edit{set("handoff.response_url", js(`1`))}, want: one("handoff.response_url", "must be a string")},

		// Lifecycle.
		{name: "lifecycle status resolved", edits: []edit{set("lifecycle.status", "resolved")}, want: one("lifecycle.status", `a new request must be "pending", got "resolved"`)},
		{name: "lifecycle status withdrawn", edits: []edit{set("lifecycle.status", "withdrawn")}, want: one("lifecycle.status", `must be "pending"`)},
		{name: "lifecycle status unknown", edits: []edit{set("lifecycle.status", "PENDING")}, want: one("lifecycle.status", `must be "pending"`)},
		{name: "lifecycle status a number", edits: []edit{set("lifecycle.status", js(`0`))}, want: one("lifecycle.status", "must be a string")},
		{name: "lifecycle an array", edits: []edit{set("lifecycle", js(`["pending"]`))}, want: one("lifecycle", "must be an object, got an array")},
		{name: "lifecycle visibility a boolean", edits: []edit{set("lifecycle.visibility", true)}, want: one("lifecycle.visibility", "must be a string, got a boolean")},

		// Extensions.
		{name: "extensions a string", edits: []edit{set("extensions", "slack")}, want: one("extensions", "must be an object, got a string")},
		{name: "extensions.slack an array", edits: []edit{set("extensions.slack", js(`[]`))}, want: one("extensions.slack", "must be an object, got an array")},
		{name: "slack channel invalid", edits: []edit{set("extensions.slack.channel", "Not A Channel!")}, want: one("extensions.slack.channel", "must be a Slack channel id (C…, G…, D…) or a channel name like #approvals")},
		{name: "slack channel upper case name", edits: []edit{set("extensions.slack.channel", "#Approvals")}, want: one("extensions.slack.channel", "must be a Slack channel id")},
		{name: "slack channel a number", edits: []edit{set("extensions.slack.channel", js(`1`))}, want: one("extensions.slack.channel", "must be a string")},
		{name: "reviewers invalid entry", edits: []edit{set("extensions.slack.reviewers", js(`["U123ABC","not a user"]`))}, want: one("extensions.slack.reviewers[1]", `must be a Slack user id (U…/W…) or an email address, got "not a user"`)},
		{name: "reviewers display-name address", edits: []edit{set("extensions.slack.reviewers", js(`["Alice <alice@example.com>"]`))}, want: one("extensions.slack.reviewers[0]", "must be a Slack user id")},
		{name: "reviewers lower-case user id", edits: []edit{set("extensions.slack.reviewers", js(`["u123abc"]`))}, want: one("extensions.slack.reviewers[0]", "must be a Slack user id")},
		{name: "reviewers duplicate", edits: []edit{set("extensions.slack.reviewers", js(`["U123ABC","alice@example.com","U123ABC"]`))}, want: one("extensions.slack.reviewers[2]", `lists "U123ABC" twice`)},
		{name: "reviewers 51 entries", edits: []edit{set("extensions.slack.reviewers", fiftyOneReviewers())}, want: one("extensions.slack.reviewers", "lists 51 reviewers; at most 50 can be mentioned")},
		{name: "reviewers a string", edits: []edit{set("extensions.slack.reviewers", "U123ABC")}, want: one("extensions.slack.reviewers", "must be an array, got a string")},
		{name: "reviewers empty entry", edits: []edit{set("extensions.slack.reviewers", js(`[""]`))}, want: one("extensions.slack.reviewers[0]", "must not be empty")},
		{name: "reviewers number entry", edits: []edit{set("extensions.slack.reviewers", js(`[1]`))}, want: one("extensions.slack.reviewers[0]", "must be a string, got a number")},
	}
}

func TestParseRejectsBadRequests(t *testing.T) {
	t.Parallel()
	cases := badCases()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := []byte(tc.raw)
			if !tc.isRaw {
				raw = mutated(t, tc.edits...)
			}
			opts := aah.ParseOptions{Now: seedNow}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			matchProblems(t, problemsOf(t, raw, opts), tc.want)
		})
	}
}

// goodCase is a variation of the seed example that must be accepted.
type goodCase struct {
	name  string
	edits []edit
	opts  func(*aah.ParseOptions)
	check func(t *testing.T, r *aah.Request)
}

func floatPtrEq(p *float64, v float64) bool { return p != nil && *p == v }

func goodCases() []goodCase {
	d0 := decPath(0)
	esc := dataPath + ".escalation"
	first := func(r *aah.Request) aah.Decision { return r.Data.Decisions[0] }
	url := func(u string) edit { return set("handoff.response_url", u) }
	urlIs := func(u string) func(t *testing.T, r *aah.Request) {
		return func(t *testing.T, r *aah.Request) {
			if r.Handoff.ResponseURL != u {
				t.Errorf("ResponseURL = %q, want %q", r.Handoff.ResponseURL, u)
			}
		}
	}
	defaultIs := func(want any) func(t *testing.T, r *aah.Request) {
		return func(t *testing.T, r *aah.Request) {
			if got := first(r).Default; !reflect.DeepEqual(got, want) {
				t.Errorf("Default = %#v (%T), want %#v (%T)", got, got, want, want)
			}
		}
	}
	return []goodCase{
		{name: "approval default false", edits: []edit{set(d0+".default", false)}, check: defaultIs(false)},
		{name: "approval without default", edits: []edit{del(d0 + ".default")}, check: defaultIs(nil)},
		{name: "approval not required", edits: []edit{set(d0+".required", false)}, check: func(t *testing.T, r *aah.Request) {
			if first(r).Required {
				t.Errorf("Required = true, want false")
			}
		}},
		{name: "choice default null", edits: []edit{set(decPath(2)+".default", nil)}, check: func(t *testing.T, r *aah.Request) {
			if d := r.Data.Decisions[2]; d.Default != nil || d.HasDefault() {
				t.Errorf("Default = %#v, want nil", d.Default)
			}
		}},
		{name: "choice option description", edits: []edit{set(decPath(2)+".options[0].description", "Today")}, check: func(t *testing.T, r *aah.Request) {
			if got := r.Data.Decisions[2].Options[0].Description; got != "Today" {
				t.Errorf("option description = %q", got)
			}
		}},
		{name: "multi_choice default empty without min", edits: []edit{set(d0, decision("multi_choice", abcOptions+`,"default":[]`))}, check: func(t *testing.T, r *aah.Request) {
			d := first(r)
			got, ok := d.Default.([]string)
			if !ok || got == nil || len(got) != 0 || !d.HasDefault() {
				t.Errorf("Default = %#v, want an empty non-nil []string", d.Default)
			}
		}},
		{name: "multi_choice with min max and default", edits: []edit{set(d0, decision("multi_choice", abcOptions+`,"constraints":{"min":1,"max":2},"default":["c","a"]`))}, check: func(t *testing.T, r *aah.Request) {
			d := first(r)
			if !reflect.DeepEqual(d.Default, []string{"c", "a"}) {
				t.Errorf("Default = %#v, want [c a] in the order given", d.Default)
			}
			if !floatPtrEq(d.Constraints.Min, 1) || !floatPtrEq(d.Constraints.Max, 2) {
				t.Errorf("Constraints = %+v", d.Constraints)
			}
			if len(d.Options) != 3 || d.Options[1] != (aah.Option{Value: "b", Label: "B"}) {
				t.Errorf("Options = %+v", d.Options)
			}
		}},
		{name: "multi_choice max equal to option count", edits: []edit{set(d0, decision("multi_choice", abcOptions+`,"constraints":{"min":0,"max":3},"default":["a","b","c"]`))}},
		{name: "text with constraints and default", edits: []edit{set(d0, decision("text", `,"constraints":{"min":2,"max":10,"pattern":"^[a-z]+$"},"default":"abc"`))}, check: func(t *testing.T, r *aah.Request) {
			d := first(r)
			if d.Default != "abc" {
				t.Errorf("Default = %#v, want string abc", d.Default)
			}
			if d.Constraints.Pattern != "^[a-z]+$" || !floatPtrEq(d.Constraints.Min, 2) || !floatPtrEq(d.Constraints.Max, 10) {
				t.Errorf("Constraints = %+v", d.Constraints)
			}
		}},
		{name: "text max 3000 and min equal to max", edits: []edit{set(d0, decision("text", `,"constraints":{"min":3000,"max":3000}`))}},
		{name: "text default empty without min", edits: []edit{set(d0, decision("text", `,"default":""`))}, check: defaultIs("")},
		{name: "text default counted in characters", edits: []edit{set(d0, decision("text", `,"constraints":{"max":5},"default":"héllo"`))}, check: defaultIs("héllo")},
		{name: "text pattern is not anchored", edits: []edit{set(d0, decision("text", `,"constraints":{"pattern":"[0-9]"},"default":"ab1cd"`))}, check: defaultIs("ab1cd")},
		{name: "number with constraints and default", edits: []edit{set(d0, decision("number", `,"constraints":{"min":-10.5,"max":100},"default":42.5`))}, check: func(t *testing.T, r *aah.Request) {
			d := first(r)
			if d.Default != 42.5 {
				t.Errorf("Default = %#v, want float64 42.5", d.Default)
			}
			if !floatPtrEq(d.Constraints.Min, -10.5) || !floatPtrEq(d.Constraints.Max, 100) {
				t.Errorf("Constraints = %+v", d.Constraints)
			}
		}},
		{name: "number default zero", edits: []edit{set(d0, decision("number", `,"default":0`))}, check: defaultIs(float64(0))},
		{name: "number default on the bounds", edits: []edit{set(d0, decision("number", `,"constraints":{"min":5,"max":5},"default":5e0`))}, check: defaultIs(float64(5))},
		{name: "date default calendar date", edits: []edit{set(d0, decision("date", `,"default":"2026-03-01"`))}, check: defaultIs("2026-03-01")},
		{name: "date default date-time with offset", edits: []edit{set(d0, decision("date", `,"default":"2026-03-01T09:00:00+02:00"`))}, check: defaultIs("2026-03-01T09:00:00+02:00")},
		{name: "date default in the past is allowed", edits: []edit{set(d0, decision("date", `,"default":"2020-01-01"`))}, check: defaultIs("2020-01-01")},
		{name: "artifact id absent", edits: []edit{del("artifact.id")}, check: func(t *testing.T, r *aah.Request) {
			if r.Artifact.ID != "" {
				t.Errorf("ID = %q, want empty (the caller generates one)", r.Artifact.ID)
			}
		}},
		{name: "artifact id null", edits: []edit{set("artifact.id", nil)}},
		{name: "artifact id 128 chars", edits: []edit{set("artifact.id", strings.Repeat("a", 128))}},
		{name: "artifact id with allowed punctuation", edits: []edit{set("artifact.id", "9req_1.2:3-4")}},
		{name: "decision id 64 chars", edits: []edit{set(d0+".id", strings.Repeat("d", 64))}},
		{name: "created_at absent", edits: []edit{del("artifact.created_at")}, check: func(t *testing.T, r *aah.Request) {
			if !r.Artifact.CreatedAt.IsZero() {
				t.Errorf("CreatedAt = %v, want zero", r.Artifact.CreatedAt)
			}
		}},
		{name: "created_at with fraction and offset", edits: []edit{set("artifact.created_at", "2026-02-16T11:00:00.123+01:00")}, check: func(t *testing.T, r *aah.Request) {
			want := time.Date(2026, 2, 16, 10, 0, 0, 123e6, time.UTC)
			if !r.Artifact.CreatedAt.Equal(want) {
				t.Errorf("CreatedAt = %v, want %v", r.Artifact.CreatedAt, want)
			}
		}},
		{name: "aah_version 0.2", edits: []edit{set("aah_version", "0.2")}},
		{name: "optional sections absent", edits: []edit{del("content.media_type"), del("handoff"), del("lifecycle"), del(dataPath + ".blocking"),
			del(dataPath + ".deadline"), del(dataPath + ".escalation"), del(dataPath + ".context"), del("source.task_id")},
			check: func(t *testing.T, r *aah.Request) {
				if !r.EffectiveDeadline().IsZero() || r.Data.Escalation != nil || r.Data.Blocking != nil || r.Handoff.ExpectsResponse != nil {
					t.Errorf("optional fields not empty: %+v", *r)
				}
			}},
		{name: "optional sections null", edits: []edit{set("handoff", nil), set("lifecycle", nil), set("extensions", nil), set(dataPath+".escalation", nil), set(dataPath+".blocking", nil)}},
		{name: "response_deadline used when data has no deadline", edits: []edit{del(dataPath + ".deadline"), set("handoff.response_deadline", "2026-02-18T08:00:00Z")},
			check: func(t *testing.T, r *aah.Request) {
				if want := time.Date(2026, 2, 18, 8, 0, 0, 0, time.UTC); !r.EffectiveDeadline().Equal(want) {
					t.Errorf("EffectiveDeadline = %v, want %v", r.EffectiveDeadline(), want)
				}
			}},
		{name: "blocking with artifact_id only", edits: []edit{set(dataPath+".blocking", js(`[{"artifact_id":"aah_art_1","description":"Publish"}]`))}, check: func(t *testing.T, r *aah.Request) {
			if want := []aah.BlockingItem{{ArtifactID: "aah_art_1", Description: "Publish"}}; !reflect.DeepEqual(r.Data.Blocking, want) {
				t.Errorf("Blocking = %+v", r.Data.Blocking)
			}
		}},
		{name: "blocking empty list", edits: []edit{set(dataPath+".blocking", js(`[]`))}},
		{name: "escalation ISO duration", edits: []edit{set(esc+".after", "P1DT12H")}, check: func(t *testing.T, r *aah.Request) {
			if s := r.Data.Escalation; len(s) != 1 || s[0].After != 36*time.Hour || s[0].AfterRaw != "P1DT12H" {
				t.Errorf("Escalation = %+v", s)
			}
		}},
		{name: "escalation chain", edits: []edit{set(esc, js(`[{"after":"4h","to":"U0LEAD"},{"after":"1d","to":"manager@example.com"},{"after":"P2W","to":"#vps"}]`))}, check: func(t *testing.T, r *aah.Request) {
			want := []aah.EscalationStep{
				{After: 4 * time.Hour, AfterRaw: "4h", To: "U0LEAD"},
				{After: 24 * time.Hour, AfterRaw: "1d", To: "manager@example.com"},
				{After: 14 * 24 * time.Hour, AfterRaw: "P2W", To: "#vps"},
			}
			if !reflect.DeepEqual(r.Data.Escalation, want) {
				t.Errorf("Escalation = %+v, want %+v", r.Data.Escalation, want)
			}
		}},
		{name: "every priority", edits: []edit{set("handoff.priority", "critical")}},
		{name: "priority low", edits: []edit{set("handoff.priority", "low")}},
		{name: "lifecycle status pending", edits: []edit{set("lifecycle.status", "pending")}},
		{name: "response_url https", edits: []edit{url("https://agent.example.com/callbacks/42?x=1")}, check: urlIs("https://agent.example.com/callbacks/42?x=1")},
		{name: "response_url public IP", edits: []edit{url("https://8.8.8.8/cb")}},
		{name: "response_url upper-case scheme", edits: []edit{url("HTTPS://example.com/cb")}},
		{name: "response_url http allowed when insecure", opts: allowInsecure, edits: []edit{url("http://example.com")}, check: urlIs("http://example.com")},
		{name: "response_url http localhost allowed when insecure", opts: allowInsecure, edits: []edit{url("http://localhost:8080/cb")}},
		{name: "response_url loopback allowed when insecure", opts: allowInsecure, edits: []edit{url("https://127.0.0.1/cb")}, check: urlIs("https://127.0.0.1/cb")},
		{name: "response_url private allowed when insecure", opts: allowInsecure, edits: []edit{url("https://10.0.0.5/cb")}, check: urlIs("https://10.0.0.5/cb")},
		{name: "response_url http private allowed when insecure", opts: allowInsecure, edits: []edit{url("http://10.0.0.5:9000/cb")}},
		{name: "slack hints", edits: []edit{set("extensions.slack", js(`{"channel":"#approvals","reviewers":["U123ABC","W0XYZ12","alice@example.com"]}`))}, check: func(t *testing.T, r *aah.Request) {
			want := aah.SlackHints{Channel: "#approvals", Reviewers: []string{"U123ABC", "W0XYZ12", "alice@example.com"}}
			if !reflect.DeepEqual(r.Slack, want) {
				t.Errorf("Slack = %+v, want %+v", r.Slack, want)
			}
		}},
		{name: "slack channel id", edits: []edit{set("extensions.slack.channel", "C0123ABCD")}},
		{name: "slack channel name without hash", edits: []edit{set("extensions.slack.channel", "team-approvals_2")}},
		{name: "slack 50 reviewers", edits: []edit{set("extensions.slack.reviewers", fiftyOneReviewers().([]any)[:50])}, check: func(t *testing.T, r *aah.Request) {
			if len(r.Slack.Reviewers) != 50 {
				t.Errorf("%d reviewers, want 50", len(r.Slack.Reviewers))
			}
		}},
		{name: "other extensions", edits: []edit{set("extensions.langgraph", js(`{"thread":"t1"}`))}},
	}
}

func TestParseAcceptsGoodRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range goodCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := aah.ParseOptions{Now: seedNow}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			r := mustParse(t, mutated(t, tc.edits...), opts)
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	raw := mutated(t,
		del("aah_version"),
		set("artifact.type", "decision/response"),
		set(decPath(1)+".id", "d1"),
		set(dataPath+".deadline", "soon"),
		set("handoff.target_role", "agent"),
	)
	got := problemsOf(t, raw, aah.ParseOptions{Now: seedNow})
	want := []string{"aah_version", "artifact.type", decPath(1) + ".id", dataPath + ".deadline", "handoff.target_role"}
	if fields := sortedFields(got); !reflect.DeepEqual(fields, sortedFields(fieldErrors(want))) {
		t.Errorf("problem fields = %q, want %q (any order)\n%s", fields, want, formatProblems(got))
	}

	// Problems inside every decision are all reported too.
	var edits []edit
	var wantProblems []problem
	for i := range 4 {
		edits = append(edits, del(decPath(i)+".prompt"))
		wantProblems = append(wantProblems, problem{decPath(i) + ".prompt", "is required"})
	}
	matchProblems(t, problemsOf(t, mutated(t, edits...), aah.ParseOptions{Now: seedNow}), wantProblems)
}

func fieldErrors(fields []string) []aah.FieldError {
	out := make([]aah.FieldError, len(fields))
	for i, f := range fields {
		out[i].Field = f
	}
	return out
}

func TestParseStoredSkipsTimeDependentChecks(t *testing.T) {
	t.Parallel()
	later := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	raw := seedBytes(t)

	matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: later}), []problem{
		{dataPath + ".deadline", "is in the past"},
		{"handoff.response_deadline", "is in the past"},
	})
	req := mustParse(t, raw, aah.ParseOptions{Now: later, Stored: true})
	if want := time.Date(2026, 2, 17, 17, 0, 0, 0, time.UTC); !req.Data.Deadline.Equal(want) {
		t.Errorf("stored deadline = %v, want %v", req.Data.Deadline, want)
	}

	// A stored document that was accepted under CALLBACK_ALLOW_PRIVATE reads back.
	insecure := mutated(t, set("handoff.response_url", "http://10.0.0.5/cb"))
	problemsOf(t, insecure, aah.ParseOptions{Now: seedNow})
	mustParse(t, insecure, aah.ParseOptions{Now: later, Stored: true})

	// Stored does not relax anything else.
	bad := mutated(t, set("lifecycle.status", "resolved"))
	matchProblems(t, problemsOf(t, bad, aah.ParseOptions{Now: later, Stored: true}),
		one("lifecycle.status", `must be "pending"`))
}

func TestParseToleratesUnknownFields(t *testing.T) {
	t.Parallel()
	unknown := func(path string) edit { return set(path+".x_unknown", js(`{"nested":[1,"two",null,{"three":3}]}`)) }
	d := dataPath
	raw := mutated(t,
		set("x_unknown", "top"),
		unknown("artifact"), unknown("source"), unknown("content"), unknown("content.body"),
		unknown(d), unknown(decPath(0)), unknown(decPath(2)), unknown(decPath(2)+".options[1]"),
		unknown(d+".blocking[0]"), unknown(d+".escalation"), unknown("handoff"), unknown("lifecycle"),
		unknown("extensions"), unknown("extensions.slack"), set("extensions.other_framework", js(`{"ui":{"color":"red"}}`)),
		set(decPath(0)+".rendering_hint", "checkbox"),
		set("source.agent_version", js(`3`)),
	)
	req := mustParse(t, raw, aah.ParseOptions{Now: seedNow})
	base := mustParse(t, seedBytes(t), aah.ParseOptions{Now: seedNow})
	if !reflect.DeepEqual(req, base) {
		t.Errorf("unknown fields changed the parsed request:\n got %+v\nwant %+v", *req, *base)
	}
}

func TestParseIsDeterministicAndDoesNotAlias(t *testing.T) {
	t.Parallel()
	raw := seedBytes(t)
	a := mustParse(t, raw, aah.ParseOptions{Now: seedNow})
	a.Data.Decisions[2].Options[0].Value = "changed"
	b := mustParse(t, raw, aah.ParseOptions{Now: seedNow})
	if b.Data.Decisions[2].Options[0].Value != "immediate" {
		t.Errorf("second Parse saw a change made to the first result")
	}
}

func TestValidationErrorMessage(t *testing.T) {
	t.Parallel()
	single := &aah.ValidationError{Problems: []aah.FieldError{{Field: "artifact.title", Message: "is required"}}}
	if got, want := single.Error(), "invalid decision request: artifact.title: is required"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	multi := &aah.ValidationError{Problems: []aah.FieldError{{Field: "a", Message: "x"}, {Field: "b", Message: "y"}}}
	got := multi.Error()
	rest, ok := strings.CutPrefix(got, "invalid decision request: ")
	var decoded []aah.FieldError
	if !ok || json.Unmarshal([]byte(rest), &decoded) != nil || !reflect.DeepEqual(decoded, multi.Problems) {
		t.Errorf("Error() = %q, want the prefix and the problems as JSON", got)
	}
	var err error = single
	var verr *aah.ValidationError
	if !errors.As(err, &verr) {
		t.Errorf("errors.As failed")
	}
}

func TestStatusHelpers(t *testing.T) {
	t.Parallel()
	open := map[aah.Status]bool{aah.StatusPending: true, aah.StatusPartial: true, aah.StatusEscalated: true}
	for _, s := range aah.Statuses {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false", s)
		}
		if s.Open() != open[s] {
			t.Errorf("%q.Open() = %v, want %v", s, s.Open(), open[s])
		}
	}
	for _, s := range []aah.Status{"", "PENDING", "final"} {
		if s.Valid() || s.Open() {
			t.Errorf("%q: Valid %v Open %v, want false false", s, s.Valid(), s.Open())
		}
	}
	if len(aah.DecisionTypes) != 6 {
		t.Errorf("%d decision types, want the spec's 6", len(aah.DecisionTypes))
	}
}

func TestIDHelpers(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"aah_decision_abc123": true, "a": true, "A1:b.c-d_e": true, strings.Repeat("a", 128): true,
		"": false, "_a": false, "a/b": false, "a b": false, strings.Repeat("a", 129): false, "a\n": false,
	} {
		if got := aah.ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", id, got, want)
		}
	}
	for id, want := range map[string]bool{
		"U123ABC": true, "W0XYZ12": true, "U12": true,
		"U1": false, "u123abc": false, "C123ABC": false, "U123abc": false, "": false, "U123ABC ": false,
	} {
		if got := aah.IsSlackUserID(id); got != want {
			t.Errorf("IsSlackUserID(%q) = %v, want %v", id, got, want)
		}
	}
}

func f64(v float64) *float64 { return &v }

func TestCheckText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		c       aah.Constraints
		value   string
		wantErr string // empty: valid
	}{
		{name: "unconstrained empty", value: ""},
		{name: "unconstrained long", value: strings.Repeat("x", 3000)},
		{name: "unconstrained too long", value: strings.Repeat("x", 3001), wantErr: "at most 3000 characters"},
		{name: "too short", c: aah.Constraints{Min: f64(3)}, value: "ab", wantErr: "at least 3 characters"},
		{name: "exactly min", c: aah.Constraints{Min: f64(3)}, value: "abc"},
		{name: "too long", c: aah.Constraints{Max: f64(3)}, value: "abcd", wantErr: "at most 3 characters"},
		{name: "exactly max", c: aah.Constraints{Max: f64(3)}, value: "abc"},
		{name: "runes not bytes", c: aah.Constraints{Max: f64(3)}, value: "日本語"},
		{name: "emoji count as runes", c: aah.Constraints{Min: f64(2)}, value: "👍", wantErr: "at least 2"},
		{name: "pattern matches", c: aah.Constraints{Pattern: `^[A-Z]{3}-\d+$`}, value: "ABC-12"},
		{name: "pattern fails", c: aah.Constraints{Pattern: `^[A-Z]{3}-\d+$`}, value: "abc-12", wantErr: `must match the pattern ^[A-Z]{3}-\d+$`},
		{name: "pattern unanchored", c: aah.Constraints{Pattern: `\d`}, value: "a1b"},
		{name: "pattern invalid", c: aah.Constraints{Pattern: `(`}, value: "x", wantErr: "does not compile"},
		{name: "min checked before pattern", c: aah.Constraints{Min: f64(5), Pattern: `^x$`}, value: "y", wantErr: "at least 5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := aah.CheckText(aah.Decision{Type: aah.TypeText, Constraints: tc.c}, tc.value)
			checkErr(t, err, tc.wantErr)
		})
	}
}

func checkErr(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case wantErr != "" && err == nil:
		t.Errorf("no error, want one containing %q", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Errorf("error %q does not contain %q", err, wantErr)
	}
}

func TestCheckNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		c       aah.Constraints
		value   float64
		wantErr string
	}{
		{name: "unconstrained", value: -1e300},
		{name: "zero", value: 0},
		{name: "NaN", value: math.NaN(), wantErr: "finite"},
		{name: "+Inf", value: math.Inf(1), wantErr: "finite"},
		{name: "-Inf bounded", c: aah.Constraints{Min: f64(0)}, value: math.Inf(-1), wantErr: "finite"},
		{name: "below min", c: aah.Constraints{Min: f64(1.5)}, value: 1.4, wantErr: "must be at least 1.5"},
		{name: "on min", c: aah.Constraints{Min: f64(1.5)}, value: 1.5},
		{name: "above max", c: aah.Constraints{Max: f64(100)}, value: 100.01, wantErr: "must be at most 100"},
		{name: "on max", c: aah.Constraints{Max: f64(100)}, value: 100},
		{name: "within", c: aah.Constraints{Min: f64(-5), Max: f64(5)}, value: -4.99},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkErr(t, aah.CheckNumber(aah.Decision{Type: aah.TypeNumber, Constraints: tc.c}, tc.value), tc.wantErr)
		})
	}
}

func TestCheckSelectionCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		c       aah.Constraints
		n       int
		wantErr string
	}{
		{name: "unconstrained none", n: 0},
		{name: "unconstrained many", n: 100},
		{name: "below min", c: aah.Constraints{Min: f64(2)}, n: 1, wantErr: "must select at least 2 options"},
		{name: "on min", c: aah.Constraints{Min: f64(2)}, n: 2},
		{name: "above max", c: aah.Constraints{Max: f64(2)}, n: 3, wantErr: "must select at most 2 options"},
		{name: "on max", c: aah.Constraints{Max: f64(2)}, n: 2},
		{name: "none with min 1", c: aah.Constraints{Min: f64(1), Max: f64(3)}, n: 0, wantErr: "at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkErr(t, aah.CheckSelectionCount(aah.Decision{Type: aah.TypeMultiChoice, Constraints: tc.c}, tc.n), tc.wantErr)
		})
	}
}

func TestParseDateValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Time // zero: an error is expected
	}{
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{" 2026-03-01 ", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2028-02-29", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"2026-02-17T17:00:00Z", time.Date(2026, 2, 17, 17, 0, 0, 0, time.UTC)},
		{"2026-03-01T09:00:00+02:00", time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)},
		{"2026-03-01T09:00:00.5-05:30", time.Date(2026, 3, 1, 14, 30, 0, 5e8, time.UTC)},
		{"", time.Time{}},
		{"tomorrow", time.Time{}},
		{"2026-02-30", time.Time{}},
		{"2026-2-3", time.Time{}},
		{"03/01/2026", time.Time{}},
		{"2026-03-01T09:00:00", time.Time{}},
		{"2026-03-01 09:00:00Z", time.Time{}},
		{"20260301", time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := aah.ParseDateValue(tc.in)
			if tc.want.IsZero() {
				if err == nil {
					t.Errorf("ParseDateValue(%q) = %v, want an error", tc.in, got)
				} else if !strings.Contains(err.Error(), "must be an ISO 8601 date") {
					t.Errorf("error %q", err)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("ParseDateValue(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseRejectsTrailingBytesAfterSeed(t *testing.T) {
	t.Parallel()
	for _, tail := range []string{"]", "}", " \n]", "}}", "]]}", ",", ":", "null", `{}`, "x"} {
		t.Run(tail, func(t *testing.T) {
			t.Parallel()
			raw := append(seedBytes(t), tail...)
			matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow}), one("", "exactly one JSON object"))
			if _, err := aah.Decode(raw); err == nil {
				t.Errorf("Decode accepted the seed example followed by %q", tail)
			}
		})
	}
	// Trailing white space is fine.
	mustParse(t, append(seedBytes(t), " \r\n\t"...), aah.ParseOptions{Now: seedNow})
}

func TestDecodeAndParseDecoded(t *testing.T) {
	t.Parallel()
	raw := seedBytes(t)
	tree, err := aah.Decode(raw)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		t.Fatalf("Decode returned %T, want map[string]any", tree)
	}
	if _, ok := m["handoff"].(map[string]any)["expects_response"].(bool); !ok {
		t.Errorf("booleans not decoded as bool")
	}
	big, err := aah.Decode([]byte(`{"n": 12345678901234567890.5}`))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if n, ok := big.(map[string]any)["n"].(json.Number); !ok || n.String() != "12345678901234567890.5" {
		t.Errorf("number decoded as %#v, want json.Number kept verbatim", big.(map[string]any)["n"])
	}

	viaTree, err := aah.ParseDecoded(tree, aah.ParseOptions{Now: seedNow})
	if err != nil {
		t.Fatalf("ParseDecoded: %v", err)
	}
	if direct := mustParse(t, raw, aah.ParseOptions{Now: seedNow}); !reflect.DeepEqual(viaTree, direct) {
		t.Errorf("ParseDecoded(Decode(raw)) differs from Parse(raw)")
	}

	for _, bad := range []string{``, `{`, `nul`, `{"a":1}{"a":1}`} {
		_, err := aah.Decode([]byte(bad))
		var verr *aah.ValidationError
		if !errors.As(err, &verr) || len(verr.Problems) != 1 || verr.Problems[0].Field != "" {
			t.Errorf("Decode(%q) error = %v, want one whole-body problem", bad, err)
		}
	}
	// ParseDecoded of a nil tree (the JSON null) reports the body.
	_, err = aah.ParseDecoded(nil, aah.ParseOptions{Now: seedNow})
	var verr *aah.ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 1 || verr.Problems[0].Field != "" ||
		!strings.Contains(verr.Problems[0].Message, "must be a JSON object") {
		t.Errorf("ParseDecoded(nil) error = %v", err)
	}
}
