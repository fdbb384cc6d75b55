package aah_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

func TestDecisionAccepts(t *testing.T) {
	t.Parallel()
	req := reviewRequest(t)
	deploy, _ := req.Decision("deploy")
	plain, _ := req.Decision("plain")
	choice := aah.Decision{Type: aah.TypeChoice}
	choiceDefer := aah.Decision{Type: aah.TypeChoice, Review: &aah.Review{Responses: []aah.Verb{aah.VerbDefer}}}
	noEditable := aah.Decision{Type: aah.TypeApproval, Review: &aah.Review{Responses: []aah.Verb{aah.VerbApprove, aah.VerbModify}}}
	for _, tc := range []struct {
		name string
		d    aah.Decision
		want []aah.Verb
	}{
		{"review with responses", deploy, []aah.Verb{aah.VerbApprove, aah.VerbReject, aah.VerbModify, aah.VerbDefer, aah.VerbChangePlan, aah.VerbAbort}},
		{"approval without review", plain, []aah.Verb{aah.VerbApprove, aah.VerbReject}},
		{"choice without review", choice, nil},
		{"choice with defer", choiceDefer, []aah.Verb{aah.VerbDefer}},
		{"modify without editable", noEditable, []aah.Verb{aah.VerbApprove}},
	} {
		var got []aah.Verb
		for _, v := range aah.Verbs {
			if tc.d.Accepts(v) {
				got = append(got, v)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: accepts %v, want %v", tc.name, got, tc.want)
		}
	}
	if !req.Accepts(aah.VerbDefer) || req.Accepts(aah.VerbEscalate) {
		t.Errorf("Request.Accepts: defer %v (want true), escalate %v (want false)", req.Accepts(aah.VerbDefer), req.Accepts(aah.VerbEscalate))
	}
	if seedRequest(t).Accepts(aah.VerbDefer) {
		t.Error("a request without the extension offers defer")
	}
}

func TestReviewFlags(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	for _, tc := range []struct {
		name               string
		d                  aah.Decision
		irreversible, crit bool
		key                string
	}{
		{"no review", aah.Decision{Type: aah.TypeApproval}, false, false, ""},
		{"reversible false", aah.Decision{Type: aah.TypeApproval, Review: &aah.Review{Action: &aah.ProposedAction{Reversible: &no}, ActionKey: "k"}}, true, false, "k"},
		{"reversible true", aah.Decision{Type: aah.TypeApproval, Review: &aah.Review{Action: &aah.ProposedAction{Reversible: &yes}}}, false, false, ""},
		{"risk irreversible", aah.Decision{Type: aah.TypeApproval, Review: &aah.Review{Risk: &aah.RiskAssessment{Level: aah.RiskCritical, Reversibility: aah.Irreversible}}}, true, true, ""},
		{"risk partially high", aah.Decision{Type: aah.TypeApproval, Review: &aah.Review{Risk: &aah.RiskAssessment{Level: aah.RiskHigh, Reversibility: aah.ReversiblePartially}}}, false, false, ""},
		{"key on a choice", aah.Decision{Type: aah.TypeChoice, Review: &aah.Review{ActionKey: "k"}}, false, false, ""},
	} {
		if got := tc.d.Irreversible(); got != tc.irreversible {
			t.Errorf("%s: Irreversible = %v", tc.name, got)
		}
		if got := tc.d.CriticalRisk(); got != tc.crit {
			t.Errorf("%s: CriticalRisk = %v", tc.name, got)
		}
		if got := tc.d.ActionKey(); got != tc.key {
			t.Errorf("%s: ActionKey = %q, want %q", tc.name, got, tc.key)
		}
	}
}

func TestCheckParameters(t *testing.T) {
	t.Parallel()
	req := mustParse(t, mutated(t, set(r1, js(validReview))), aah.ParseOptions{Now: seedNow})
	d, _ := req.Decision("d1")
	orig := d.Review.Action.Parameters
	full, err := aah.CheckParameters(d, map[string]any{"replicas": 4, "service": "web", "dry_run": true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"service": "web", "replicas": 4.0, "ratio": 0.5, "dry_run": true, "tags": []any{"a", 1.0}}
	if !reflect.DeepEqual(full, want) {
		t.Errorf("full = %v, want %v", full, want)
	}
	if orig["replicas"] != 6.0 {
		t.Error("CheckParameters changed the proposed action's parameters")
	}
	changes := aah.ChangedParameters(orig, full)
	wantChanges := []aah.ParamChange{{Name: "dry_run", From: false, To: true}, {Name: "replicas", From: 6.0, To: 4.0}, {Name: "service", From: "api", To: "web"}}
	if !reflect.DeepEqual(changes, wantChanges) {
		t.Errorf("ChangedParameters = %v, want %v", changes, wantChanges)
	}
	if same, _ := aah.CheckParameters(d, map[string]any{"replicas": 6.0}); aah.ChangedParameters(orig, same) != nil {
		t.Error("identical values count as a change")
	}
	for _, tc := range []struct {
		name   string
		edited map[string]any
		param  string
		msg    string
	}{
		{"not editable", map[string]any{"tags": []any{}}, "tags", "is not editable"},
		{"unknown", map[string]any{"nope": 1.0}, "nope", "is not a parameter of the proposed action"},
		{"above maximum", map[string]any{"replicas": 11.0}, "replicas", "must be at most 10"},
		{"below minimum", map[string]any{"ratio": -0.5}, "ratio", "must be at least 0"},
		{"not whole", map[string]any{"replicas": 2.5}, "replicas", "must be an integer"},
		{"string for integer", map[string]any{"replicas": "4"}, "replicas", "must be an integer"},
		{"outside enum", map[string]any{"service": "db"}, "service", "must be one of api, web"},
		{"boolean text", map[string]any{"dry_run": "true"}, "dry_run", "must be a boolean"},
		{"first in order", map[string]any{"service": "db", "dry_run": 1.0}, "dry_run", "must be a boolean"},
	} {
		_, err := aah.CheckParameters(d, tc.edited)
		var pe *aah.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param || pe.Message != tc.msg {
			t.Errorf("%s: err = %v, want ParamError{%s, %s}", tc.name, err, tc.param, tc.msg)
		}
	}
	if _, err := aah.CheckParameters(aah.Decision{Type: aah.TypeApproval}, map[string]any{"a": 1.0}); err == nil {
		t.Error("edits accepted on a decision without parameters")
	}
}

func TestCheckParamStrings(t *testing.T) {
	t.Parallel()
	two, four := 2, 4
	e := aah.EditableParam{Name: "s", Type: aah.ParamString, MinLength: &two, MaxLength: &four, Pattern: "^[a-z]+$"}
	for in, want := range map[string]string{"ab": "", "abcd": "", "a": "must be at least 2 characters long",
		"abcde": "must be at most 4 characters long", "AB": "must match the pattern ^[a-z]+$", "éé": "must match the pattern"} {
		checkErr(t, aah.CheckParam(e, in), want)
	}
}

func TestParseParamInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ, in string
		want    any
		wantErr string
	}{
		{aah.ParamInteger, " 4 ", 4.0, ""},
		{aah.ParamInteger, "4.0", 4.0, ""},
		{aah.ParamInteger, "4.5", nil, "must be a whole number"},
		{aah.ParamInteger, "four", nil, "must be a number"},
		{aah.ParamNumber, "-2.5e1", -25.0, ""},
		{aah.ParamNumber, "0x10", nil, "must be a number"},
		{aah.ParamNumber, "Inf", nil, "must be a number"},
		{aah.ParamNumber, "NaN", nil, "must be a number"},
		{aah.ParamNumber, "1e999", nil, "must be a number"},
		{aah.ParamNumber, "", nil, "must be a number"},
		{aah.ParamBoolean, "true", true, ""},
		{aah.ParamBoolean, " False", false, ""},
		{aah.ParamBoolean, "yes", nil, "must be true or false"},
		{aah.ParamString, " as typed ", " as typed ", ""},
	} {
		got, err := aah.ParseParamInput(aah.EditableParam{Name: "p", Type: tc.typ}, tc.in)
		checkErr(t, err, tc.wantErr)
		if tc.wantErr == "" && got != tc.want {
			t.Errorf("ParseParamInput(%s, %q) = %#v, want %#v", tc.typ, tc.in, got, tc.want)
		}
	}
	if e, ok := reviewRequest(t).Data.Decisions[0].Review.EditableParam("replicas"); !ok || e.Type != aah.ParamInteger {
		t.Errorf("EditableParam(replicas) = %+v, %v", e, ok)
	}
	if _, ok := reviewRequest(t).Data.Decisions[0].Review.EditableParam("service"); ok {
		t.Error("EditableParam found a parameter that is not editable")
	}
}
