package aah_test

// Regression tests for bugs the fuzzer and the validation table found; each
// comment says what went wrong.

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// ParseDuration once added time.Duration(f * float64(unit)) per component without
// bounding f first. An out-of-range float→int64 conversion yields
// math.MinInt64 on amd64, and two of them wrap around to 0, so a huge
// duration plus a small one comes out as just the small one and passes the
// "positive and at most ten years" checks.
func TestParseDurationOverflowWraps(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"P99999999999999999999W99999999999999999999DT1H",
		"99999999999999999999w99999999999999999999d1h",
		"99999999999999999999h99999999999999999999h30m",
		"PT9223372036854775807H9223372036854775807M1S",
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			if d, err := aah.ParseDuration(in); err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error (longer than ten years)", in, d)
			} else if !strings.Contains(err.Error(), "longer than ten years") {
				t.Errorf("ParseDuration(%q) error %q, want it to say longer than ten years", in, err)
			}
		})
	}
	// A single overflowing component is refused, but with a misleading message.
	if _, err := aah.ParseDuration("99999999999999999999h"); err == nil || !strings.Contains(err.Error(), "longer than ten years") {
		t.Errorf(`ParseDuration("99999999999999999999h") error = %v, want "longer than ten years"`, err)
	}
}

// The multi_choice bound check once converted the bound with int(*b.v) before
// comparing it with the option count; a bound beyond the int range converts
// to math.MinInt64 on amd64 and passes. blocks then renders
// MaxSelectedItems = int(1e20), a negative number Slack refuses.
func TestMultiChoiceHugeMaxRefused(t *testing.T) {
	t.Parallel()
	for _, max := range []string{"1e20", "9223372036854775808", "1e300"} {
		t.Run(max, func(t *testing.T) {
			t.Parallel()
			raw := mutated(t, set(decPath(0), decision("multi_choice", abcOptions+`,"constraints":{"max":`+max+`}`)))
			req, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
			if err == nil {
				t.Fatalf("multi_choice with 3 options and max %s accepted (Max = %v); want problem at %s.constraints.max",
					max, *req.Data.Decisions[0].Constraints.Max, decPath(0))
			}
			matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow}),
				one(decPath(0)+".constraints.max", "counts selected options: a whole number from 0 to 3"))
		})
	}
}

// defaultValue once skipped ParseDateValue when the string is empty (the guard is
// meant for a non-string default, which p.str already reported), so
// "default": "" on a date decision is accepted and becomes the typed default
// "" (HasDefault true): the Slack message then shows an empty default and a
// request that resolves on its default answers the date "".
func TestDateDefaultEmptyRefused(t *testing.T) {
	t.Parallel()
	for _, def := range []string{`""`} {
		t.Run(def, func(t *testing.T) {
			t.Parallel()
			raw := mutated(t, set(decPath(0), decision("date", `,"default":`+def)))
			req, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
			if err == nil {
				t.Fatalf("date default %s accepted as %#v (HasDefault %v); want problem at %s.default",
					def, req.Data.Decisions[0].Default, req.Data.Decisions[0].HasDefault(), decPath(0))
			}
			matchProblems(t, problemsOf(t, raw, aah.ParseOptions{Now: seedNow}),
				one(decPath(0)+".default", "must be an ISO 8601 date"))
		})
	}
}

// A field that failed its type or blank check was reported a second time by a
// follow-up check that runs on the zero or blank value: artifact.id 5 also gets
// "must not be empty; omit it to have one generated" (parse.go, artifact), and
// blank strings in fields with a fixed value also get "must be …/unsupported".
func TestProblemReportedOncePerField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  edit
		field string
		msg   string
	}{
		{"artifact.id a number", set("artifact.id", js(`5`)), "artifact.id", "must be a string, got a number"},
		{"artifact.id false", set("artifact.id", false), "artifact.id", "must be a string, got a boolean"},
		{"aah_version blank", set("aah_version", " "), "aah_version", "must not be empty"},
		{"artifact.type blank", set("artifact.type", " "), "artifact.type", "must not be empty"},
		{"schema blank", set("content.body.schema", " "), "content.body.schema", "must not be empty"},
		{"decision type blank", set(decPath(0)+".type", " "), decPath(0) + ".type", "must not be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			matchProblems(t, problemsOf(t, mutated(t, tc.edit), aah.ParseOptions{Now: seedNow}), one(tc.field, tc.msg))
		})
	}
}

// extensions.on_deadline and extensions.slack.reminders are validated like
// every other field.
func TestTimingExtensions(t *testing.T) {
	t.Parallel()
	parse := func(ext string) (*aah.Request, error) {
		raw := mutated(t, set("extensions", js(ext)))
		return aah.Parse(raw, aah.ParseOptions{Now: seedNow})
	}
	req, err := parse(`{"on_deadline":"apply_defaults","slack":{"reminders":{"every":"PT2H","max":3}}}`)
	if err != nil || req.OnDeadline != aah.DeadlineApplyDefaults || req.Slack.Reminders == nil ||
		req.Slack.Reminders.Every != 2*time.Hour || req.Slack.Reminders.Max != 3 {
		t.Fatalf("valid extensions: %+v %v", req, err)
	}
	if req, _ := parse(`{}`); req.OnDeadline != aah.DeadlineExpire || req.Slack.Reminders != nil {
		t.Errorf("defaults: on_deadline %q, reminders %+v", req.OnDeadline, req.Slack.Reminders)
	}
	for ext, field := range map[string]string{
		`{"on_deadline":"ignore"}`:                         "extensions.on_deadline",
		`{"slack":{"reminders":{"every":"10s","max":1}}}`:  "extensions.slack.reminders.every",
		`{"slack":{"reminders":{"every":"1h","max":11}}}`:  "extensions.slack.reminders.max",
		`{"slack":{"reminders":{"every":"1h"}}}`:           "extensions.slack.reminders.max",
		`{"slack":{"reminders":{"every":"soon","max":2}}}`: "extensions.slack.reminders.every",
		`{"slack":{"reminders":{"every":"1h","max":1.5}}}`: "extensions.slack.reminders.max",
	} {
		_, err := parse(ext)
		var verr *aah.ValidationError
		if !errors.As(err, &verr) || verr.Problems[0].Field != field {
			t.Errorf("%s: %v, want a problem at %s", ext, err, field)
		}
	}
}
