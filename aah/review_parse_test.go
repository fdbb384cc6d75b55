package aah_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// validReview is a review of the seed's approval decision d1 that uses
// every field.
const validReview = `{
  "proposed_action": {"action_type": "tool_call", "tool_name": "scale_service",
    "parameters": {"service": "api", "replicas": 6, "ratio": 0.5, "dry_run": false, "tags": ["a", 1]},
    "expected_outcome": "Six replicas", "reversible": true, "estimated_cost": 12.5, "cost_unit": "USD",
    "x_future": 1},
  "risk_assessment": {"risk_level": "high", "risk_factors": ["load"], "potential_consequences": ["outage"],
    "reversibility": "partially", "confidence": 0.8},
  "responses": ["modify", "approve", "reject", "defer", "change_plan", "escalate", "abort"],
  "editable": {"service": {"type": "string", "enum": ["api", "web"]},
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1},
    "dry_run": {"type": "boolean"}},
  "reject_reasons": ["Too expensive", "Wrong service"],
  "x_unknown": {"ignored": true}
}`

// reviewWith is validReview with the JSON value at key (a top-level field
// of the review, or "proposed_action.<field>", "editable.<name>") replaced.
func reviewWith(key string, value string) []edit {
	base := "extensions.decisions.d1"
	return []edit{set(base, js(validReview)), set(base+"."+key, js(value))}
}

const r1 = "extensions.decisions.d1"

func TestParseReviewAcceptsAndFills(t *testing.T) {
	t.Parallel()
	req := mustParse(t, mutated(t, set(r1, js(validReview))), aah.ParseOptions{Now: seedNow})
	d, _ := req.Decision("d1")
	rv := d.Review
	if rv == nil {
		t.Fatal("d1 has no review")
	}
	cost, conf, lo, hi, zero, one := 12.5, 0.8, 1.0, 10.0, 0.0, 1.0
	rev := true
	want := &aah.Review{
		Action: &aah.ProposedAction{ActionType: "tool_call", ToolName: "scale_service",
			Parameters:      map[string]any{"service": "api", "replicas": 6.0, "ratio": 0.5, "dry_run": false, "tags": []any{"a", 1.0}},
			ParameterOrder:  []string{"dry_run", "ratio", "replicas", "service", "tags"},
			ExpectedOutcome: "Six replicas", Reversible: &rev, EstimatedCost: &cost, CostUnit: "USD"},
		Risk: &aah.RiskAssessment{Level: "high", Factors: []string{"load"}, Consequences: []string{"outage"},
			Reversibility: "partially", Confidence: &conf},
		Responses: aah.Verbs,
		Editable: []aah.EditableParam{
			{Name: "dry_run", Type: "boolean"},
			{Name: "ratio", Type: "number", Minimum: &zero, Maximum: &one},
			{Name: "replicas", Type: "integer", Minimum: &lo, Maximum: &hi},
			{Name: "service", Type: "string", Enum: []string{"api", "web"}},
		},
		RejectReasons: []string{"Too expensive", "Wrong service"},
		ActionKey:     "scale_service",
	}
	if !reflect.DeepEqual(rv, want) {
		t.Errorf("review:\n got %+v\nwant %+v", rv, want)
	}
	if other, _ := req.Decision("d2"); other.Review != nil {
		t.Errorf("d2 got a review it was not given: %+v", other.Review)
	}
	// Stored parsing reads it back the same.
	again := mustParse(t, mutated(t, set(r1, js(validReview))), aah.ParseOptions{Now: seedNow.AddDate(5, 0, 0), Stored: true})
	if !reflect.DeepEqual(again, req) {
		t.Error("stored parse differs")
	}
}

func TestParseReviewAccepted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		edits []edit
		check func(t *testing.T, d aah.Decision)
	}{
		{"explicit action key", reviewWith("action_key", `"deploy:prod/api-1.2"`), func(t *testing.T, d aah.Decision) {
			if d.ActionKey() != "deploy:prod/api-1.2" {
				t.Errorf("ActionKey = %q", d.ActionKey())
			}
		}},
		{"tool name not a key", reviewWith("proposed_action.tool_name", `"scale service"`), func(t *testing.T, d aah.Decision) {
			if d.ActionKey() != "" {
				t.Errorf("ActionKey = %q, want none", d.ActionKey())
			}
		}},
		{"responses absent", []edit{set(r1, js(`{"proposed_action":{"tool_name":"x"}}`))}, func(t *testing.T, d aah.Decision) {
			if d.Review.Responses != nil || !d.Accepts(aah.VerbApprove) || !d.Accepts(aah.VerbReject) || d.Accepts(aah.VerbDefer) {
				t.Errorf("responses %v", d.Review.Responses)
			}
		}},
		{"only request verbs on a choice", []edit{set("extensions.decisions.d3", js(`{"responses":["defer","abort"]}`))}, nil},
		{"pattern and lengths on a string", reviewWith("editable.service", `{"type":"string","pattern":"^[a-z]+$","min_length":1,"max_length":10}`), nil},
		{"integer bounds", reviewWith("editable.replicas", `{"type":"integer","minimum":6,"maximum":6}`), nil},
		{"no modify, no editable", []edit{set(r1, js(`{"responses":["approve","reject"],"reject_reasons":["x"]}`))}, nil},
		{"100 enum values", reviewWith("editable.service", `{"type":"string","enum":[`+quotedList(100, "api")+`]}`), nil},
		{"75-character reason", reviewWith("reject_reasons", `["`+strings.Repeat("é", 75)+`"]`), nil},
		{"empty review", []edit{set(r1, js(`{}`))}, func(t *testing.T, d aah.Decision) {
			if d.Review == nil || d.Review.Action != nil {
				t.Errorf("review %+v", d.Review)
			}
		}},
		{"cost zero", reviewWith("proposed_action.estimated_cost", `0`), nil},
		// Empty or null means absent, as the schema says of optional strings.
		{"empty action key defaults", reviewWith("action_key", `""`), func(t *testing.T, d aah.Decision) {
			if d.ActionKey() != "scale_service" {
				t.Errorf("ActionKey = %q, want the tool name", d.ActionKey())
			}
		}},
		{"null and empty optional fields", []edit{set(r1, js(`{"proposed_action":null,"risk_assessment":{"risk_level":"","reversibility":null},`+
			`"responses":null,"editable":null,"reject_reasons":null,"action_key":null,"precision":""}`))}, func(t *testing.T, d aah.Decision) {
			if d.Review.Action != nil || d.Review.Risk == nil || d.Review.Risk.Level != "" || d.Review.Responses != nil || d.ActionKey() != "" {
				t.Errorf("review %+v", d.Review)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := mustParse(t, mutated(t, tc.edits...), aah.ParseOptions{Now: seedNow})
			d, _ := req.Decision("d1")
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}
}

// quotedList is n distinct JSON strings, the first one first.
func quotedList(n int, first string) string {
	items := []string{`"` + first + `"`}
	for i := 1; i < n; i++ {
		items = append(items, `"v`+strings.Repeat("x", i%70)+string(rune('a'+i%26))+`"`)
	}
	return strings.Join(dedupe(items), ",")
}

func dedupe(items []string) []string {
	seen := map[string]bool{}
	out := items[:0]
	for i, s := range items {
		for seen[s] {
			s = `"` + strings.Trim(s, `"`) + string(rune('A'+i%26)) + `"`
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

func TestParseReviewRefused(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 8200) + `"`
	fiftyOne := make([]string, 51)
	for i := range fiftyOne {
		fiftyOne[i] = `"p` + string(rune('A'+i%26)) + string(rune('a'+i/26)) + `":1`
	}
	e := r1 + ".editable"
	cases := []struct {
		name  string
		edits []edit
		want  []problem
	}{
		{"unknown decision", []edit{set("extensions.decisions.nope", js(`{}`))}, one("extensions.decisions.nope", "names no decision of this request")},
		{"review not an object", []edit{set(r1, js(`[]`))}, one(r1, "must be an object, got an array")},
		{"extension not an object", []edit{set("extensions.decisions", js(`"x"`))}, one("extensions.decisions", "must be an object")},
		{"responses empty", reviewWith("responses", `[]`), one(r1+".responses", "must list at least one response")},
		{"responses unknown", reviewWith("responses", `["approve","reject","ok"]`), one(r1+".responses[2]", `unknown response "ok"`)},
		{"responses twice", reviewWith("responses", `["approve","reject","approve"]`), one(r1+".responses[2]", `lists "approve" twice`)},
		{"approve on a choice", []edit{set("extensions.decisions.d3", js(`{"responses":["approve","defer"]}`))},
			one("extensions.decisions.d3.responses[0]", "approve answers approval decisions only; this is a choice decision")},
		{"modify without parameters", []edit{set(r1, js(`{"responses":["modify"],"proposed_action":{"tool_name":"x"}}`))},
			one(r1+".responses[0]", "modify needs proposed_action.parameters")},
		{"modify without editable", []edit{set(r1, js(`{"responses":["modify"],"proposed_action":{"parameters":{"a":1}}}`))},
			one(r1+".responses[0]", "modify needs at least one editable parameter")},
		{"editable names no parameter", reviewWith("editable.nope", `{"type":"string"}`), one(e+".nope", "names no parameter of proposed_action.parameters")},
		{"editable bad type", reviewWith("editable.replicas", `{"type":"int"}`), one(e+".replicas.type", `must be string, number, integer or boolean; got "int"`)},
		{"editable type missing", reviewWith("editable.replicas", `{}`), one(e+".replicas.type", "is required")},
		{"value not an integer", reviewWith("proposed_action.parameters.replicas", `6.5`), one(e+".replicas.type", "the proposed value 6.5 is not an integer")},
		{"value not a string", reviewWith("proposed_action.parameters.service", `3`), one(e+".service.type", "the proposed value 3 is not a string")},
		{"value not a boolean", reviewWith("proposed_action.parameters.dry_run", `"no"`), one(e+".dry_run.type", `the proposed value "no" is not a boolean`)},
		{"value outside bounds", reviewWith("proposed_action.parameters.replicas", `20`), one(e+".replicas", "the proposed value 20 does not meet the constraints: must be at most 10")},
		{"value outside enum", reviewWith("proposed_action.parameters.service", `"db"`), one(e+".service", "must be one of api, web")},
		{"enum on a number", reviewWith("editable.replicas", `{"type":"integer","enum":["1"]}`), one(e+".replicas.enum", "applies to string parameters only; this one is an integer")},
		{"enum empty", reviewWith("editable.service", `{"type":"string","enum":[]}`), one(e+".service.enum", "must list at least one value")},
		{"enum 101", reviewWith("editable.service", `{"type":"string","enum":[`+quotedList(101, "api")+`]}`), one(e+".service.enum", "lists 101 values; at most 100")},
		{"enum value too long", reviewWith("editable.service", `{"type":"string","enum":["api","`+strings.Repeat("x", 76)+`"]}`), one(e+".service.enum[1]", "is 76 characters long; at most 75")},
		{"enum value twice", reviewWith("editable.service", `{"type":"string","enum":["api","api"]}`), one(e+".service.enum[1]", `lists "api" twice`)},
		{"minimum on a string", reviewWith("editable.service", `{"type":"string","minimum":1}`), one(e+".service.minimum", "applies to number and integer parameters only")},
		{"min over max", reviewWith("editable.replicas", `{"type":"integer","minimum":8,"maximum":2}`), []problem{
			{e + ".replicas.maximum", "is less than minimum (2 < 8)"}}},
		{"maximum not finite", reviewWith("editable.replicas", `{"type":"integer","maximum":1e400}`), one(e+".replicas.maximum", "must be a finite number")},
		{"maximum a string", reviewWith("editable.replicas", `{"type":"integer","maximum":"10"}`), one(e+".replicas.maximum", "must be a number, got a string")},
		{"max_length on a number", reviewWith("editable.ratio", `{"type":"number","max_length":3}`), one(e+".ratio.max_length", "applies to string parameters only")},
		{"max_length zero", reviewWith("editable.service", `{"type":"string","max_length":0}`), one(e+".service.max_length", "must allow at least one character")},
		{"min_length over max_length", reviewWith("editable.service", `{"type":"string","min_length":5,"max_length":4}`), one(e+".service.max_length", "is less than min_length (4 < 5)")},
		{"length fractional", reviewWith("editable.service", `{"type":"string","min_length":1.5}`), one(e+".service.min_length", "a whole number from 0 to 3000")},
		{"pattern bad RE2", reviewWith("editable.service", `{"type":"string","pattern":"(?=x)"}`), one(e+".service.pattern", "is not a valid RE2 regular expression")},
		{"pattern on boolean", reviewWith("editable.dry_run", `{"type":"boolean","pattern":"x"}`), one(e+".dry_run.pattern", "applies to string parameters only")},
		{"value fails pattern", reviewWith("editable.service", `{"type":"string","pattern":"^w"}`), one(e+".service", "must match the pattern ^w")},
		{"editable on a choice", []edit{set("extensions.decisions.d3", js(`{"editable":{"a":{"type":"string"}}}`))},
			one("extensions.decisions.d3.editable", "only approval decisions have parameters to edit")},
		{"editable entry not an object", reviewWith("editable.replicas", `"integer"`), one(e+".replicas", "must be an object, got a string")},
		{"reject reasons on a choice", []edit{set("extensions.decisions.d3", js(`{"reject_reasons":["x"]}`))},
			one("extensions.decisions.d3.reject_reasons", "only approval decisions can be rejected")},
		{"reject reasons without reject", []edit{set(r1, js(`{"responses":["approve"],"reject_reasons":["x"]}`))}, one(r1+".reject_reasons", "responses does not include reject")},
		{"reject reasons eleven", reviewWith("reject_reasons", `[`+quotedList(11, "a")+`]`), one(r1+".reject_reasons", "lists 11 reasons; at most 10")},
		{"reject reason blank", reviewWith("reject_reasons", `["a","  "]`), one(r1+".reject_reasons[1]", "must not be empty")},
		{"reject reason twice", reviewWith("reject_reasons", `["a","a"]`), one(r1+".reject_reasons[1]", `lists "a" twice`)},
		{"reject reason too long", reviewWith("reject_reasons", `["`+strings.Repeat("é", 76)+`"]`), one(r1+".reject_reasons[0]", "is 76 characters long; at most 75")},
		{"reject reasons empty", reviewWith("reject_reasons", `[]`), one(r1+".reject_reasons", "must list at least one reason")},
		{"action key spaces", reviewWith("action_key", `"scale it"`), one(r1+".action_key", "must be 1-128 characters of letters, digits and _ . : / -")},
		{"action key long", reviewWith("action_key", `"`+strings.Repeat("k", 129)+`"`), one(r1+".action_key", "must be 1-128 characters")},
		{"action key a number", reviewWith("action_key", `7`), one(r1+".action_key", "must be a string, got a number")},
		{"precision a number", []edit{set("extensions.decisions.d3", js(`{"precision":1}`))}, one("extensions.decisions.d3.precision", "must be a string, got a number")},
		{"precision on approval", reviewWith("precision", `"datetime"`), one(r1+".precision", "only date decisions take a precision")},
		{"risk level unknown", reviewWith("risk_assessment.risk_level", `"extreme"`), one(r1+".risk_assessment.risk_level", `must be low, medium, high or critical; got "extreme"`)},
		{"reversibility unknown", reviewWith("risk_assessment.reversibility", `"mostly"`), one(r1+".risk_assessment.reversibility", `must be fully, partially or irreversible; got "mostly"`)},
		{"confidence over 1", reviewWith("risk_assessment.confidence", `1.01`), one(r1+".risk_assessment.confidence", "must be a number from 0 to 1")},
		{"confidence negative", reviewWith("risk_assessment.confidence", `-0.1`), one(r1+".risk_assessment.confidence", "must be a number from 0 to 1")},
		{"risk factor blank", reviewWith("risk_assessment.risk_factors", `[""]`), one(r1+".risk_assessment.risk_factors[0]", "must not be empty")},
		{"risk factors too many", reviewWith("risk_assessment.potential_consequences", `[`+quotedList(21, "a")+`]`), one(r1+".risk_assessment.potential_consequences", "lists 21 items; at most 20")},
		{"cost negative", reviewWith("proposed_action.estimated_cost", `-1`), one(r1+".proposed_action.estimated_cost", "must be a finite number of at least 0")},
		{"cost infinite", reviewWith("proposed_action.estimated_cost", `1e999`), one(r1+".proposed_action.estimated_cost", "must be a finite number")},
		{"reversible a string", reviewWith("proposed_action.reversible", `"no"`), one(r1+".proposed_action.reversible", "must be true or false")},
		{"tool name too long", reviewWith("proposed_action.tool_name", `"`+strings.Repeat("t", 129)+`"`), one(r1+".proposed_action.tool_name", "is 129 characters long; at most 128")},
		{"expected outcome too long", reviewWith("proposed_action.expected_outcome", `"`+strings.Repeat("o", 3001)+`"`), one(r1+".proposed_action.expected_outcome", "at most 3000")},
		{"parameters not an object", reviewWith("proposed_action.parameters", `[1]`), []problem{
			{r1 + ".proposed_action.parameters", "must be an object, got an array"},
			{r1 + ".responses[0]", "modify needs proposed_action.parameters"},
			{e + ".dry_run", "names no parameter"}, {e + ".ratio", "names no parameter"},
			{e + ".replicas", "names no parameter"}, {e + ".service", "names no parameter"}}},
		{"51 parameters", []edit{set(r1, js(`{"proposed_action":{"parameters":{`+strings.Join(fiftyOne, ",")+`}}}`))},
			one(r1+".proposed_action.parameters", "holds 51 parameters; at most 50")},
		{"parameter not finite", reviewWith("proposed_action.parameters.tags", `[1e999]`), one(r1+".proposed_action.parameters.tags", "not finite")},
		{"action over 8 KB in parameters", reviewWith("proposed_action.parameters.tags", big), one(r1+".proposed_action", "bytes as JSON; at most 8192 (8 KB)")},
		{"parent ids not a list", []edit{set("handoff.parent_artifact_ids", js(`"aah_x"`))}, one("handoff.parent_artifact_ids", "must be an array")},
		{"parent id invalid", []edit{set("handoff.parent_artifact_ids", js(`["ok","bad id"]`))}, one("handoff.parent_artifact_ids[1]", "must be an artifact id")},
		{"parent id twice", []edit{set("handoff.parent_artifact_ids", js(`["a","a"]`))}, one("handoff.parent_artifact_ids[1]", `lists "a" twice`)},
		{"parent ids 21", []edit{set("handoff.parent_artifact_ids", js(`[`+quotedList(21, "a")+`]`))}, one("handoff.parent_artifact_ids", "lists 21 artifacts; at most 20")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			matchProblems(t, problemsOf(t, mutated(t, tc.edits...), aah.ParseOptions{Now: seedNow}), tc.want)
		})
	}
}

func TestParseParentArtifactIDs(t *testing.T) {
	t.Parallel()
	req := mustParse(t, mutated(t, set("handoff.parent_artifact_ids", js(`["aah_decision_1","req:2"]`))), aah.ParseOptions{Now: seedNow})
	if want := []string{"aah_decision_1", "req:2"}; !reflect.DeepEqual(req.Handoff.ParentArtifactIDs, want) {
		t.Errorf("ParentArtifactIDs = %v, want %v", req.Handoff.ParentArtifactIDs, want)
	}
}
