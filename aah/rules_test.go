package aah_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
)

var update = flag.Bool("update", false, "rewrite docs/validation.md's rule table from validationRules")

// A validationRule is one rule approvalbot enforces on a decision request
// beyond its JSON Schema (aah/schema/decision-request.schema.json). The
// table below is docs/validation.md's table: TestValidationRulesDoc renders
// it into the doc (go test ./aah -run TestValidationRulesDoc -update), and
// TestValidationRules checks every entry's example against the code: the
// seed 000 request with the example's edits is valid under the schema, and
// refused at exactly Want, by aah.Parse or (By: bySlack) by the Slack check
// intake applies after it (blocks.Check).
type validationRule struct {
	Field string // as the doc shows it: Want with [n] as [] and decision keys as <id>
	Rule  string
	Why   string
	By    string // byParse or bySlack
	Edits []ruleEdit
	Want  string // the field path the problem is reported at
}

const (
	byParse = "validator"
	bySlack = "Slack check"
)

// ruleEdit changes the seed 000 request: sets Path to the JSON value Value,
// or (Raw) replaces the text Path by Value in the encoded document.
type ruleEdit struct {
	Path, Value string
	Raw         bool
	Show        string // how the doc shows Value, when not as it is
}

func to(path, jsonValue string) ruleEdit { return ruleEdit{Path: path, Value: jsonValue} }

// str is a JSON string literal.
func str(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

const (
	rd  = "content.body.data"
	rd0 = rd + ".decisions[0]"
	rd2 = rd + ".decisions[2]" // d3, the seed's choice
)

// Decisions the examples turn d3 into.
const (
	textDecision   = `{"id":"d3","type":"text","prompt":"Tagline","required":true}`
	multiDecision  = `{"id":"d3","type":"multi_choice","prompt":"Channels","required":true,"options":[{"value":"email","label":"Email"},{"value":"ads","label":"Ads"}]}`
	numberDecision = `{"id":"d3","type":"number","prompt":"Budget","required":true}`
	dateLiteral    = `{"id":"d3","type":"date","prompt":"Launch","required":true}`
)

// with adds fields to a decision literal: with(textDecision, `"default":"x"`).
func with(decision, fields string) string {
	return strings.TrimSuffix(decision, "}") + "," + fields + "}"
}

func options(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"value":"o%d","label":"Option %d"}`, i, i)
	}
	return b.String() + "]"
}

func manyDecisions(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"q%d","type":"approval","prompt":"Approve item %d?","required":true}`, i, i)
	}
	return b.String() + "]"
}

// review sets the review extension of d1 (extensions.decisions.d1).
func review(fields string) ruleEdit { return to("extensions.decisions", `{"d1":{`+fields+`}}`) }

const scaleAction = `"proposed_action":{"tool_name":"scale_service","parameters":{"replicas":12}}`

var validationRules = []validationRule{
	// The whole document.
	{Field: "any string", Rule: "well-formed Unicode: UTF-8, no lone surrogate escape (\\ud800)",
		Why: "JSON decoders turn both into U+FFFD silently: the stored request and what Slack shows would differ from what the agent sent",
		By:  byParse, Edits: []ruleEdit{{Path: `"Approve Marketing Strategy"`, Value: `"Approve \ud800"`, Raw: true}}, Want: "artifact.title"},

	// artifact.
	{Field: "artifact.title", Rule: "at most 150 characters", Why: "it is the Slack message's header (150 at most); cutting it would change what the reviewer is asked",
		By: bySlack, Edits: []ruleEdit{to("artifact.title", str(strings.Repeat("T", 200)))}, Want: "artifact.title"},
	{Field: "artifact.created_at", Rule: "a date-time that exists (every date-time field)", Why: "the pattern checks the form, not the calendar (2026-02-30)",
		By: byParse, Edits: []ruleEdit{to("artifact.created_at", `"2026-02-30T10:00:00Z"`)}, Want: "artifact.created_at"},

	// content.body.data.
	{Field: rd + ".context", Rule: "at most 20,000 characters", Why: "Slack shows the start and View details the rest; a bound keeps stored requests and modals small",
		By: bySlack, Edits: []ruleEdit{to(rd+".context", str(strings.Repeat("c", 20001)))}, Want: rd + ".context"},
	{Field: rd + ".deadline", Rule: "in the future", Why: "a request whose deadline has passed could never be answered in time",
		By: byParse, Edits: []ruleEdit{to(rd+".deadline", `"2026-02-15T17:00:00Z"`)}, Want: rd + ".deadline"},
	{Field: rd + ".decisions", Rule: "as many as fit one Slack message (50 blocks: about 20 decisions, fewer with reviews)", Why: "the request is one Slack message; split larger ones",
		By: bySlack, Edits: []ruleEdit{ruleEdit{Path: rd + ".decisions", Value: manyDecisions(30), Show: "30 approval decisions"}}, Want: rd + ".decisions"},
	{Field: rd + ".decisions[].id", Rule: "unique within the request", Why: "answers name the decision by id (spec §3: \"unique within this request\")",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[1].id", `"d1"`)}, Want: rd + ".decisions[1].id"},
	{Field: rd + ".decisions[].prompt", Rule: "at most 2,000 characters, counting &, < and > as Slack's escapes", Why: "the prompt is also the label of the answer dialog's input (2,000 at most)",
		By: bySlack, Edits: []ruleEdit{to(rd0+".prompt", str(strings.Repeat("&", 500)))}, Want: rd0 + ".prompt"},
	{Field: rd + ".decisions[].description", Rule: "at most 20,000 characters", Why: "as context: Slack shows the start and View details the rest",
		By: bySlack, Edits: []ruleEdit{to(rd0+".description", str(strings.Repeat("d", 20001)))}, Want: rd0 + ".description"},
	{Field: rd + ".decisions[].options", Rule: "at most 100 options", Why: "a Slack select menu holds at most 100",
		By: bySlack, Edits: []ruleEdit{ruleEdit{Path: rd2 + ".options", Value: options(101), Show: "101 options"}, to(rd2+".default", "null")}, Want: rd2 + ".options"},
	{Field: rd + ".decisions[].options[].value", Rule: "unique within the decision", Why: "the answer names the option by value",
		By: byParse, Edits: []ruleEdit{to(rd2+".options[1].value", `"immediate"`), to(rd2+".default", "null")}, Want: rd2 + ".options[1].value"},
	{Field: rd + ".decisions[].options[].value", Rule: "at most 150 characters", Why: "a Slack option value holds at most 150",
		By: bySlack, Edits: []ruleEdit{to(rd2+".options[0].value", str(strings.Repeat("v", 151)))}, Want: rd2 + ".options[0].value"},
	{Field: rd + ".decisions[].options[].label", Rule: "at most 75 characters", Why: "a Slack option text holds at most 75; cutting it would change the choice",
		By: bySlack, Edits: []ruleEdit{to(rd2+".options[0].label", str(strings.Repeat("l", 76)))}, Want: rd2 + ".options[0].label"},
	{Field: rd + ".decisions[].default", Rule: "choice: one of the option values; multi_choice: option values, as many as constraints allow", Why: "a default is an answer and must be one the reviewer could give",
		By: byParse, Edits: []ruleEdit{to(rd2+".default", `"tomorrow"`)}, Want: rd2 + ".default"},
	{Field: rd + ".decisions[].default", Rule: "text: within the length bounds and matching the pattern", Why: "as above",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(textDecision, `"default":"abc","constraints":{"pattern":"^[0-9]+$"}`))}, Want: rd2 + ".default"},
	{Field: rd + ".decisions[].default", Rule: "number: within min and max", Why: "as above",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(numberDecision, `"default":50,"constraints":{"max":10}`))}, Want: rd2 + ".default"},
	{Field: rd + ".decisions[].default", Rule: "date: a date that exists, within the bounds", Why: "as above",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(dateLiteral, `"default":"2026-04-01","constraints":{"max":"2026-03-31"}`))}, Want: rd2 + ".default"},
	{Field: rd + ".decisions[].constraints", Rule: "min not greater than max", Why: "no answer could meet both",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(numberDecision, `"constraints":{"min":10,"max":5}`))}, Want: rd2 + ".constraints"},
	{Field: rd + ".decisions[].constraints", Rule: "date: min not later than max", Why: "no answer could meet both",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(dateLiteral, `"constraints":{"min":"2026-04-01","max":"2026-03-01"}`))}, Want: rd2 + ".constraints"},
	{Field: rd + ".decisions[].constraints.min", Rule: "date: dates or date-times that exist", Why: "the pattern checks the form, not the calendar",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(dateLiteral, `"constraints":{"min":"2026-02-30"}`))}, Want: rd2 + ".constraints.min"},
	{Field: rd + ".decisions[].constraints.max", Rule: "multi_choice: min and max at most the number of options", Why: "they count selected options",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(multiDecision, `"constraints":{"max":3}`))}, Want: rd2 + ".constraints.max"},
	{Field: rd + ".decisions[].constraints.pattern", Rule: "a valid RE2 regular expression: no lookaround or backreferences", Why: "answers are checked with Go's RE2 engine, which has linear time and no lookbehind",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions[2]", with(textDecision, `"constraints":{"pattern":"(?<=a)b"}`))}, Want: rd2 + ".constraints.pattern"},
	{Field: rd + ".escalation.after", Rule: "a duration: 30m, 24h, 7d, 1d12h, 2w or ISO 8601 (PT24H, P1DT12H)", Why: "a timer is set from it",
		By: byParse, Edits: []ruleEdit{to(rd+".escalation.after", `"2 days"`)}, Want: rd + ".escalation.after"},
	{Field: rd + ".escalation.after", Rule: "no years or months (P1M)", Why: "their length is ambiguous",
		By: byParse, Edits: []ruleEdit{to(rd+".escalation.after", `"P1M"`)}, Want: rd + ".escalation.after"},
	{Field: rd + ".escalation.after", Rule: "greater than zero, at most ten years", Why: "an escalation must come after the request, and a huge value must not wrap around",
		By: byParse, Edits: []ruleEdit{to(rd+".escalation.after", `"3660d"`)}, Want: rd + ".escalation.after"},
	{Field: rd + ".escalation[].after", Rule: "a chain's steps strictly later one after another", Why: "each step escalates further after the previous one",
		By: byParse, Edits: []ruleEdit{to(rd+".escalation", `[{"after":"24h","to":"U0LEAD"},{"after":"12h","to":"U0HEAD"}]`)}, Want: rd + ".escalation[1].after"},
	{Field: rd + ".escalation.to", Rule: "a Slack user id (U…/W…), an email address, a user group id (S…), a channel id (C…/G…) or a channel name (#approvals)", Why: "the forms escalation can resolve in Slack; an agent id or a role names nobody there",
		By: byParse, Edits: []ruleEdit{to(rd+".escalation.to", `"role:finance"`)}, Want: rd + ".escalation.to"},

	// handoff.
	{Field: "handoff.target_role", Rule: "human (or absent)", Why: "approvalbot hands decisions to people in Slack; a request for an agent would wait for no one",
		By: byParse, Edits: []ruleEdit{to("handoff.target_role", `"agent"`)}, Want: "handoff.target_role"},
	{Field: "handoff.response_deadline", Rule: "in the future", Why: "as data.deadline; the earlier of the two governs",
		By: byParse, Edits: []ruleEdit{to("handoff.response_deadline", `"2026-02-15T17:00:00Z"`)}, Want: "handoff.response_deadline"},
	{Field: "handoff.response_url", Rule: "https, no credentials, a public address (http and private addresses only with CALLBACK_ALLOW_PRIVATE=true)", Why: "the signed response must not travel in clear, nor be aimed at the server's own network",
		By: byParse, Edits: []ruleEdit{to("handoff.response_url", `"https://10.0.0.1/decisions"`)}, Want: "handoff.response_url"},
	{Field: "handoff.parent_artifact_ids[]", Rule: "no id twice", Why: "each names one earlier artifact",
		By: byParse, Edits: []ruleEdit{to("handoff.parent_artifact_ids", `["req_1","req_1"]`)}, Want: "handoff.parent_artifact_ids[1]"},

	// extensions.
	{Field: "extensions.events.url", Rule: "checked as handoff.response_url", Why: "events are POSTed there, signed as the response is",
		By: byParse, Edits: []ruleEdit{to("extensions.events", `{"url":"http://agent.example.com/events"}`)}, Want: "extensions.events.url"},
	{Field: "extensions.slack.reminders.every", Rule: "a duration of at least 1m", Why: "reminders are for people",
		By: byParse, Edits: []ruleEdit{to("extensions.slack.reminders", `{"every":"30s","max":3}`)}, Want: "extensions.slack.reminders.every"},
	{Field: "extensions.slack.reviewers[]", Rule: "a Slack user id or a bare email address (no display name), none twice", Why: "each must resolve to one Slack user",
		By: byParse, Edits: []ruleEdit{to("extensions.slack.reviewers", `["Alice <alice@example.com>"]`)}, Want: "extensions.slack.reviewers[0]"},
	{Field: "extensions.slack.quorum", Rule: "no more than the people named who may approve: reviewers, roles' members and escalation targets (when no reviewer group is given)", Why: "a quorum nobody could reach would leave the request open forever",
		By: byParse, Edits: []ruleEdit{to("extensions.slack", `{"reviewers":["U0ALICE","U0BOB"],"quorum":4}`)}, Want: "extensions.slack.quorum"},
	{Field: "extensions.slack.quorum", Rule: "quorum and required_roles need an approval decision", Why: "they count approvals",
		By: byParse, Edits: []ruleEdit{to(rd+".decisions", "["+textDecision+"]"), to("extensions.slack", `{"quorum":2}`)}, Want: "extensions.slack.quorum"},
	{Field: "extensions.slack.required_roles[].role", Rule: "no role twice", Why: "each role signs off once",
		By: byParse, Edits: []ruleEdit{to("extensions.slack.required_roles", `[{"role":"legal","members":["U0A"]},{"role":"legal","members":["U0B"]}]`)}, Want: "extensions.slack.required_roles[1].role"},
	{Field: "extensions.decisions.<id>", Rule: "the key is a decision id of the request", Why: "the review describes that decision",
		By: byParse, Edits: []ruleEdit{to("extensions.decisions", `{"d9":{}}`)}, Want: "extensions.decisions.d9"},
	{Field: "extensions.decisions.<id>.responses[]", Rule: "approve, reject and modify on approval decisions only", Why: "they answer a yes/no question",
		By: byParse, Edits: []ruleEdit{to("extensions.decisions", `{"d3":{"responses":["approve","defer"]}}`)}, Want: "extensions.decisions.d3.responses[0]"},
	{Field: "extensions.decisions.<id>.responses[]", Rule: "modify needs proposed_action.parameters and at least one editable parameter", Why: "modify edits parameters",
		By: byParse, Edits: []ruleEdit{review(`"responses":["approve","modify"]`)}, Want: "extensions.decisions.d1.responses[1]"},
	{Field: "extensions.decisions.<id>.reject_reasons", Rule: "approval decisions only, and only when responses includes reject", Why: "they are offered when rejecting",
		By: byParse, Edits: []ruleEdit{review(`"responses":["approve"],"reject_reasons":["Too costly"]`)}, Want: "extensions.decisions.d1.reject_reasons"},
	{Field: "extensions.decisions.<id>.precision", Rule: "date decisions only", Why: "it chooses a date or a date-and-time picker",
		By: byParse, Edits: []ruleEdit{review(`"precision":"datetime"`)}, Want: "extensions.decisions.d1.precision"},
	{Field: "extensions.decisions.<id>.proposed_action", Rule: "at most 8 KB as JSON", Why: "it is shown in Slack and stored with every request; send large inputs as an artifact",
		By: byParse, Edits: []ruleEdit{review(`"proposed_action":{"parameters":{"script":` + str(strings.Repeat("s", 9000)) + `}}`)}, Want: "extensions.decisions.d1.proposed_action"},
	{Field: "extensions.decisions.<id>.proposed_action.expected_outcome", Rule: "at most 3,000 characters", Why: "a Slack section holds 3,000",
		By: byParse, Edits: []ruleEdit{review(`"proposed_action":{"expected_outcome":` + str(strings.Repeat("o", 3001)) + `}`)}, Want: "extensions.decisions.d1.proposed_action.expected_outcome"},
	{Field: "extensions.decisions.<id>.proposed_action.parameters.<key>", Rule: "names 1 to 128 characters, not blank", Why: "shown as a field label and used as an input id",
		By: byParse, Edits: []ruleEdit{review(`"proposed_action":{"parameters":{" ":1}}`)}, Want: "extensions.decisions.d1.proposed_action.parameters. "},
	{Field: "extensions.decisions.<id>.editable", Rule: "approval decisions only", Why: "modify answers an approval",
		By: byParse, Edits: []ruleEdit{to("extensions.decisions", `{"d3":{"editable":{}}}`)}, Want: "extensions.decisions.d3.editable"},
	{Field: "extensions.decisions.<id>.editable.<key>", Rule: "names a parameter of proposed_action.parameters whose proposed value meets the type and bounds", Why: "approving unedited must be a valid answer",
		By: byParse, Edits: []ruleEdit{review(scaleAction + `,"editable":{"replicas":{"type":"integer","maximum":10}}`)}, Want: "extensions.decisions.d1.editable.replicas"},
	{Field: "extensions.decisions.<id>.editable.<key>.type", Rule: "the proposed value has that type", Why: "as above",
		By: byParse, Edits: []ruleEdit{review(scaleAction + `,"editable":{"replicas":{"type":"string"}}`)}, Want: "extensions.decisions.d1.editable.replicas.type"},
	{Field: "extensions.decisions.<id>.editable.<key>.maximum", Rule: "not less than minimum (and max_length not less than min_length)", Why: "no edit could meet both",
		By: byParse, Edits: []ruleEdit{review(scaleAction + `,"editable":{"replicas":{"type":"integer","minimum":20,"maximum":10}}`)}, Want: "extensions.decisions.d1.editable.replicas.maximum"},
	{Field: "extensions.decisions.<id>.editable.<key>.pattern", Rule: "a valid RE2 regular expression", Why: "edits are checked with Go's RE2 engine",
		By: byParse, Edits: []ruleEdit{review(`"proposed_action":{"parameters":{"region":"eu"}},"editable":{"region":{"type":"string","pattern":"(?!x)"}}`)}, Want: "extensions.decisions.d1.editable.region.pattern"},
}

// ruleDoc is the edited seed request of a rule's example.
func ruleDoc(t testing.TB, r validationRule) []byte {
	t.Helper()
	doc := decodeDoc(t, seedBytes(t))
	var raws []ruleEdit
	for _, e := range r.Edits {
		if e.Raw {
			raws = append(raws, e)
			continue
		}
		set(e.Path, js(e.Value))(t, doc)
	}
	raw := encodeDoc(t, doc)
	for _, e := range raws {
		if !bytes.Contains(raw, []byte(e.Path)) {
			t.Fatalf("raw edit: %s not in the document", e.Path)
		}
		raw = bytes.Replace(raw, []byte(e.Path), []byte(e.Value), 1)
	}
	return raw
}

var indexPattern = regexp.MustCompile(`\[[0-9]+\]`)

func TestValidationRules(t *testing.T) {
	t.Parallel()
	for _, r := range validationRules {
		t.Run(r.Want+" "+r.Rule, func(t *testing.T) {
			t.Parallel()
			general := indexPattern.ReplaceAllString(r.Want, "[]")
			if r.Field != "any string" && !fieldMatches(r.Field, general) {
				t.Errorf("Field %q does not describe %q", r.Field, r.Want)
			}
			raw := ruleDoc(t, r)
			if err := schema.ValidateRequest(raw); err != nil {
				t.Errorf("the schema refuses the example already, so the rule is not beyond it: %v", err)
			}
			req, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
			var got []aah.FieldError
			switch r.By {
			case byParse:
				if err == nil {
					t.Fatalf("aah.Parse accepts the example")
				}
				got = problemsOf(t, raw, aah.ParseOptions{Now: seedNow})
			case bySlack:
				if err != nil {
					t.Fatalf("aah.Parse refuses the example, the Slack check never sees it: %v", err)
				}
				got = blocks.Check(req)
			default:
				t.Fatalf("By = %q", r.By)
			}
			for _, p := range got {
				if p.Field == r.Want {
					return
				}
			}
			t.Errorf("no problem at %q; got:\n%s", r.Want, formatProblems(got))
		})
	}
}

// fieldMatches reports whether the doc's field pattern describes a path
// with indexes as []: <id> and <key> stand for one key.
func fieldMatches(pattern, path string) bool {
	re := regexp.QuoteMeta(pattern)
	re = strings.NewReplacer(`<id>`, `[^.]+`, `<key>`, `[^.]+`).Replace(re)
	return regexp.MustCompile(`^` + re + `$`).MatchString(path)
}

const (
	rulesBegin = "<!-- rules:begin (generated by go test ./aah -run TestValidationRulesDoc -update; do not edit) -->\n"
	rulesEnd   = "<!-- rules:end -->\n"
	rulesDoc   = "../docs/validation.md"
)

// renderRules is the Markdown table of validationRules.
func renderRules() string {
	var b strings.Builder
	b.WriteString("| Field | Rule | Why | Checked by | Refused example (edit of seed 000's request) |\n")
	b.WriteString("|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range validationRules {
		var ex []string
		for _, e := range r.Edits {
			v := "`" + e.Value + "`"
			var text string
			switch {
			case e.Show != "":
				v = e.Show
			case json.Unmarshal([]byte(e.Value), &text) == nil && len([]rune(text)) > 40:
				r := []rune(text)
				v = fmt.Sprintf("`%s…` (%d characters)", str(string(r[:10])), len(r))
			}
			if e.Raw {
				ex = append(ex, fmt.Sprintf("replace `%s` by %s", e.Path, v))
			} else {
				ex = append(ex, fmt.Sprintf("`%s` = %s", e.Path, v))
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", cell(r.Field), cell(r.Rule), cell(r.Why), r.By, cell(strings.Join(ex, "; ")))
	}
	return b.String()
}

func TestValidationRulesDoc(t *testing.T) {
	raw, err := os.ReadFile(rulesDoc)
	if err != nil {
		t.Fatalf("read %s: %v", rulesDoc, err)
	}
	doc := string(raw)
	start, end := strings.Index(doc, rulesBegin), strings.Index(doc, rulesEnd)
	if start < 0 || end < start {
		t.Fatalf("%s lacks the markers %q and %q", rulesDoc, rulesBegin, rulesEnd)
	}
	want := doc[:start+len(rulesBegin)] + renderRules() + doc[end:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(rulesDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's rule table differs from validationRules; run go test ./aah -run TestValidationRulesDoc -update", rulesDoc)
}

// Values the sweep below writes.
var sweepValues = []string{
	`null`, `""`, `"x"`, `"agent"`, `"resolved"`, `"P1M"`, `"0s"`, `"2026-02-15T17:00:00Z"`, `"2026-02-30"`,
	`"2026-02-30T10:00:00Z"`, `"Alice <a@b.co>"`, `"https://10.0.0.1/cb"`, `"(?<=a)b"`, `"d1"`, `"immediate"`,
	`"modify"`, `"datetime"`, `0`, `3`, `11`, `0.5`, `true`, `[]`, `["x"]`, `["x","x"]`, `{}`, `{"min":5,"max":1}`,
	`{"after":"24h","to":"x"}`, `{"every":"30s","max":1}`,
}

// pathsOf lists every field path of a decoded document, in the form the
// validator reports them.
func pathsOf(v any, prefix string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			*out = append(*out, p)
			pathsOf(e, p, out)
		}
	case []any:
		for i, e := range x {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			*out = append(*out, p)
			pathsOf(e, p, out)
		}
	}
}

// Every refusal of a request the schema accepts is at a field a rule of
// docs/validation.md covers: the sweep sets every field of the repository's
// request examples to each of sweepValues. A new rule in the code without
// its row in the table fails here, at least for the values swept.
func TestEveryRefusalBeyondTheSchemaIsDocumented(t *testing.T) {
	t.Parallel()
	bases := [][]byte{seedBytes(t)}
	// The seed and the example using the review extension hold every
	// section (marketing-strategy.json is the seed's).
	for _, f := range []string{"../examples/scale-service.json"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, raw)
	}
	if testing.Short() {
		bases = bases[:1]
	}
	undocumented := map[string]string{}
	for _, rawBase := range bases {
		base := decodeDoc(t, rawBase)
		var paths []string
		pathsOf(base, "", &paths)
		paths = append(paths, "handoff.target_role", "handoff.parent_artifact_ids", "extensions.on_deadline",
			"extensions.slack.reminders", "extensions.slack.reviewers", "extensions.slack.quorum", "extensions.events")
		for _, path := range paths {
			for _, v := range sweepValues {
				doc := deepCopy(base).(map[string]any)
				if !applies(t, doc, set(path, js(v))) {
					continue
				}
				raw := encodeDoc(t, doc)
				_, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
				var verr *aah.ValidationError
				if !errors.As(err, &verr) || schema.ValidateRequest(raw) != nil {
					continue
				}
				for _, p := range verr.Problems {
					if !documented(p.Field) {
						undocumented[indexPattern.ReplaceAllString(p.Field, "[]")] = fmt.Sprintf("%s = %s: %s", path, v, p.Message)
					}
				}
			}
		}
	}
	for f, ex := range undocumented {
		t.Errorf("refused at %s beyond the schema, with no rule in docs/validation.md (e.g. %s)", f, ex)
	}
}

// applies applies e, reporting false when the path cannot be set.
func applies(t testing.TB, doc map[string]any, e edit) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	e(panicTB{t}, doc)
	return true
}

type panicTB struct{ testing.TB }

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

func (panicTB) Helper()                        {}
func (panicTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
