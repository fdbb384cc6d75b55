package aah_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// topLevelKeys are the document keys every field path starts with.
var topLevelKeys = []string{"aah_version", "artifact", "source", "content", "handoff", "lifecycle", "extensions"}

func knownField(field string) bool {
	if field == "" {
		return true
	}
	for _, k := range topLevelKeys {
		if rest, ok := strings.CutPrefix(field, k); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// minimalRequest is a small valid request holding the given decisions.
func minimalRequest(decisions string) string {
	return `{"aah_version":"0.1","artifact":{"type":"decision/request","title":"T"},"source":{"agent_id":"a"},` +
		`"content":{"body":{"schema":"aah:decision/request@1.0","data":{"decisions":[` + decisions + `]}}}}`
}

func fuzzSeeds(f *testing.F) {
	f.Add(seedBytes(f))
	for _, d := range []string{
		`{"id":"a","type":"approval","prompt":"P","required":true,"default":false}`,
		`{"id":"c","type":"choice","prompt":"P","required":false,"options":[{"value":"x","label":"X"}],"default":"x"}`,
		`{"id":"m","type":"multi_choice","prompt":"P","required":true,"options":[{"value":"x","label":"X"},{"value":"y","label":"Y"}],"constraints":{"min":0,"max":2},"default":[]}`,
		`{"id":"t","type":"text","prompt":"P","required":true,"constraints":{"min":1,"max":10,"pattern":"^[a-z]+$"},"default":"abc"}`,
		`{"id":"n","type":"number","prompt":"P","required":true,"constraints":{"min":-1.5,"max":1e3},"default":2}`,
		`{"id":"d","type":"date","prompt":"P","required":false,"default":"2026-03-01T09:00:00+02:00"}`,
		`{"id":"a","type":"approval","prompt":"P","required":true},{"id":"a","type":"approval","prompt":"P","required":true}`,
		`{"id":"t","type":"text","prompt":"P","required":true,"constraints":{"pattern":"(?=x)"}}`,
		`"not an object"`,
	} {
		f.Add([]byte(minimalRequest(d)))
	}
	f.Add([]byte(`{"aah_version":"0.1","artifact":{"type":"decision/request","title":"T"},"source":{"agent_id":"a"},` +
		`"content":{"body":{"schema":"aah:decision/request@1.0","data":{"decisions":[{"id":"a","type":"approval","prompt":"P","required":true}],` +
		`"deadline":"2099-01-01T00:00:00Z","escalation":[{"after":"PT1H","to":"x"},{"after":"2d","to":"y"}]}}},` +
		`"handoff":{"priority":"urgent","response_url":"https://10.0.0.1/cb"},"extensions":{"slack":{"channel":"#a","reviewers":["U123","a@b.co"]}}}`))
	// The review extension, date bounds and lineage.
	f.Add([]byte(`{"aah_version":"0.1","artifact":{"type":"decision/request","title":"T"},"source":{"agent_id":"a"},` +
		`"content":{"body":{"schema":"aah:decision/request@1.0","data":{"decisions":[{"id":"a","type":"approval","prompt":"P","required":true},` +
		`{"id":"d","type":"date","prompt":"P","required":false,"constraints":{"min":"2026-03-01","max":"2026-03-02T10:00:00Z"},"default":"2026-03-02"}]}}},` +
		`"handoff":{"parent_artifact_ids":["aah_1"]},"extensions":{"decisions":{"a":{"proposed_action":{"tool_name":"t","parameters":{"n":2,"s":"x"},"reversible":false},` +
		`"risk_assessment":{"risk_level":"critical","confidence":0.5},"responses":["approve","modify","abort"],` +
		`"editable":{"n":{"type":"integer","minimum":1,"maximum":3},"s":{"type":"string","enum":["x","y"]}},"action_key":"t:x"},` +
		`"d":{"precision":"datetime"}}}}`))
	for _, s := range []string{``, `{}`, `[]`, `null`, `{"aah_version":"0.1"}]`, `{"a":1} {"a":2}`, `{"aah_version":"2"}`, "\xff", "{\"x\xff\":\"\\ud800\"}"} {
		f.Add([]byte(s))
	}
}

// checkTypedDefault reports a default whose Go type does not match Decision.Default's doc.
func checkTypedDefault(d aah.Decision) error {
	if d.Default == nil {
		return nil
	}
	var ok bool
	switch d.Type {
	case aah.TypeApproval:
		_, ok = d.Default.(bool)
	case aah.TypeChoice, aah.TypeText, aah.TypeDate:
		_, ok = d.Default.(string)
	case aah.TypeMultiChoice:
		_, ok = d.Default.([]string)
	case aah.TypeNumber:
		_, ok = d.Default.(float64)
	}
	if !ok {
		return fmt.Errorf("decision %q of type %s has default %#v (%T)", d.ID, d.Type, d.Default, d.Default)
	}
	return nil
}

// checkReview reports a parsed review that breaks the extension's rules:
// an approval's verbs on another decision, modify with nothing to edit, an
// editable parameter whose proposed value is not a valid edit, a parameter
// set that does not encode.
func checkReview(d aah.Decision) error {
	rv := d.Review
	if rv == nil {
		return nil
	}
	for _, v := range rv.Responses {
		if (v == aah.VerbApprove || v == aah.VerbReject || v == aah.VerbModify) && d.Type != aah.TypeApproval {
			return fmt.Errorf("decision %q (%s) accepts %s", d.ID, d.Type, v)
		}
	}
	if slices.Contains(rv.Responses, aah.VerbModify) && (rv.Action == nil || len(rv.Editable) == 0) {
		return fmt.Errorf("decision %q accepts modify with nothing to edit", d.ID)
	}
	if len(rv.Editable) > 0 {
		current := map[string]any{}
		for _, e := range rv.Editable {
			current[e.Name] = rv.Action.Parameters[e.Name]
		}
		full, err := aah.CheckParameters(d, current)
		if err != nil || !reflect.DeepEqual(full, rv.Action.Parameters) {
			return fmt.Errorf("decision %q: its proposed values are not a valid edit: %v", d.ID, err)
		}
	}
	if rv.Action != nil {
		if _, err := json.Marshal(rv.Action.Parameters); err != nil {
			return fmt.Errorf("decision %q: parameters do not encode: %v", d.ID, err)
		}
	}
	if rv.ActionKey != "" && !aah.ValidActionKey(rv.ActionKey) {
		return fmt.Errorf("decision %q: invalid action key %q", d.ID, rv.ActionKey)
	}
	return nil
}

func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		opts := aah.ParseOptions{Now: seedNow}
		req, err := aah.Parse(raw, opts)
		req2, err2 := aah.Parse(raw, opts)
		if !reflect.DeepEqual(req, req2) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("Parse is not deterministic:\n%+v, %v\n%+v, %v", req, err, req2, err2)
		}

		if err != nil {
			if req != nil {
				t.Fatalf("Parse returned both a request and error %v", err)
			}
			var verr *aah.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error is %T, want *aah.ValidationError: %v", err, err)
			}
			if len(verr.Problems) == 0 {
				t.Fatalf("ValidationError without problems")
			}
			for _, p := range verr.Problems {
				// Text that is not Unicode is named wherever it is, in
				// fields the document does not define too.
				if !knownField(p.Field) && !strings.Contains(p.Message, "UTF-8") {
					t.Errorf("problem field %q does not start with a top-level key", p.Field)
				}
				if p.Message == "" {
					t.Errorf("problem at %q has no message", p.Field)
				}
			}
			return
		}

		if req == nil {
			t.Fatalf("Parse returned neither a request nor an error")
		}
		if !json.Valid(raw) {
			t.Fatalf("Parse accepted a body that is not one JSON value: %q", raw)
		}
		if req.Artifact.Type != aah.ArtifactTypeRequest || strings.TrimSpace(req.Artifact.Title) == "" || req.Source.AgentID == "" {
			t.Errorf("accepted a request without its required header: %+v %+v", req.Artifact, req.Source)
		}
		if req.Artifact.ID != "" && !aah.ValidRequestID(req.Artifact.ID) {
			t.Errorf("accepted invalid artifact id %q", req.Artifact.ID)
		}
		if len(req.Data.Decisions) == 0 {
			t.Errorf("accepted a request without decisions")
		}
		ids := map[string]bool{}
		for _, d := range req.Data.Decisions {
			if d.ID == "" {
				t.Errorf("accepted a decision with an empty id")
			}
			if ids[d.ID] {
				t.Errorf("accepted duplicate decision id %q", d.ID)
			}
			ids[d.ID] = true
			if err := checkTypedDefault(d); err != nil {
				t.Error(err)
			}
			if err := checkReview(d); err != nil {
				t.Error(err)
			}
		}
		var prev int64
		for i, s := range req.Data.Escalation {
			if int64(s.After) <= prev {
				t.Errorf("escalation step %d after %v is not later than the previous step", i, s.After)
			}
			prev = int64(s.After)
		}

		// Decode + ParseDecoded is the same as Parse, and Stored only relaxes.
		tree, err := aah.Decode(raw)
		if err != nil {
			t.Fatalf("Decode failed on a body Parse accepted: %v", err)
		}
		viaTree, err := aah.ParseDecoded(tree, opts)
		if err != nil || !reflect.DeepEqual(viaTree, req) {
			t.Errorf("ParseDecoded(Decode(raw)) = %+v, %v; want Parse's result", viaTree, err)
		}
		stored, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow.AddDate(50, 0, 0), Stored: true})
		if err != nil || !reflect.DeepEqual(stored, req) {
			t.Errorf("Stored parse 50 years later = %v; want the same request", err)
		}
	})
}
