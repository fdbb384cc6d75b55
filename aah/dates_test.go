package aah_test

import (
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

func TestParseDateConstraints(t *testing.T) {
	t.Parallel()
	d0 := decPath(0)
	dateWith := func(extra string) edit { return set(d0, decision("date", extra)) }
	good := []struct {
		name     string
		extra    string
		min, max string
	}{
		{"dates", `,"constraints":{"min":"2026-03-01","max":"2026-03-31"}`, "2026-03-01", "2026-03-31"},
		{"date-times", `,"constraints":{"min":"2026-03-01T09:00:00+02:00","max":"2026-03-01T08:00:00Z"}`, "2026-03-01T09:00:00+02:00", "2026-03-01T08:00:00Z"},
		{"min only, default on it", `,"constraints":{"min":"2026-03-01"},"default":"2026-03-01T23:00:00-05:00"}`, "2026-03-01", ""},
		{"same day mixed", `,"constraints":{"min":"2026-03-01T18:00:00Z","max":"2026-03-01"}`, "2026-03-01T18:00:00Z", "2026-03-01"},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := mustParse(t, mutated(t, dateWith(tc.extra)), aah.ParseOptions{Now: seedNow})
			c := req.Data.Decisions[0].Constraints
			if c.MinDate != tc.min || c.MaxDate != tc.max || c.Min != nil || c.Max != nil {
				t.Errorf("constraints = %+v, want MinDate %q MaxDate %q", c, tc.min, tc.max)
			}
		})
	}
	bad := []struct {
		name, extra string
		want        []problem
	}{
		{"min after max", `,"constraints":{"min":"2026-04-01","max":"2026-03-01"}`, one(d0+".constraints", "min (2026-04-01) is later than max (2026-03-01)")},
		{"instants reversed", `,"constraints":{"min":"2026-03-01T09:00:00Z","max":"2026-03-01T10:00:00+02:00"}`, one(d0+".constraints", "is later than max")},
		{"not a date", `,"constraints":{"max":"next week"}`, one(d0+".constraints.max", "must be an ISO 8601 date")},
		{"empty", `,"constraints":{"min":""}`, one(d0+".constraints.min", "must not be empty")},
		{"pattern", `,"constraints":{"pattern":"x"}`, one(d0+".constraints.pattern", "only text decisions take a pattern")},
		{"default before min", `,"constraints":{"min":"2026-03-01"},"default":"2026-02-28"}`, one(d0+".default", "must be on or after 2026-03-01")},
		{"default after max instant", `,"constraints":{"max":"2026-03-01T12:00:00Z"},"default":"2026-03-01T13:00:00+00:00"}`, one(d0+".default", "must be on or before 2026-03-01T12:00:00Z")},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			matchProblems(t, problemsOf(t, mutated(t, dateWith(tc.extra)), aah.ParseOptions{Now: seedNow}), tc.want)
		})
	}
}

func TestParsePrecision(t *testing.T) {
	t.Parallel()
	d0 := decPath(0)
	withDate := set(d0, decision("date", ""))
	req := mustParse(t, mutated(t, withDate, set("extensions.decisions.x", js(`{"precision":"datetime"}`))), aah.ParseOptions{Now: seedNow})
	if d := req.Data.Decisions[0]; d.Review == nil || !d.Review.DateTime {
		t.Errorf("precision datetime not parsed: %+v", d.Review)
	}
	req = mustParse(t, mutated(t, withDate, set("extensions.decisions.x", js(`{"precision":"date"}`))), aah.ParseOptions{Now: seedNow})
	if d := req.Data.Decisions[0]; d.Review == nil || d.Review.DateTime {
		t.Errorf("precision date parsed as datetime: %+v", d.Review)
	}
	matchProblems(t, problemsOf(t, mutated(t, withDate, set("extensions.decisions.x", js(`{"precision":"hour"}`))), aah.ParseOptions{Now: seedNow}),
		one("extensions.decisions.x.precision", `must be "date" or "datetime", got "hour"`))
}

func dateDecision(min, max string, dateTime bool) aah.Decision {
	d := aah.Decision{ID: "d", Type: aah.TypeDate, Constraints: aah.Constraints{MinDate: min, MaxDate: max}}
	if dateTime {
		d.Review = &aah.Review{DateTime: true}
	}
	return d
}

func TestCheckAnswerDates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		d       aah.Decision
		in      string
		want    string
		wantErr string
	}{
		{"no bounds", dateDecision("", "", false), "2026-03-01", "2026-03-01", ""},
		{"date on min", dateDecision("2026-03-01", "2026-03-31", false), "2026-03-01", "2026-03-01", ""},
		{"date before min", dateDecision("2026-03-01", "", false), "2026-02-28", "", "must be on or after 2026-03-01"},
		{"date after max", dateDecision("", "2026-03-31", false), "2026-04-01", "", "must be on or before 2026-03-31"},
		{"date vs date-time bound compares days", dateDecision("2026-03-01T18:00:00Z", "", false), "2026-03-01", "2026-03-01", ""},
		{"date-time vs date bound compares days", dateDecision("", "2026-03-01", false), "2026-03-01T23:59:00Z", "2026-03-01T23:59:00Z", ""},
		{"date-time instant before min", dateDecision("2026-03-01T09:00:00+02:00", "", false), "2026-03-01T06:59:59Z", "", "must be on or after"},
		{"date-time instant on min", dateDecision("2026-03-01T09:00:00+02:00", "", false), "2026-03-01T07:00:00Z", "2026-03-01T07:00:00Z", ""},
		{"not a date", dateDecision("", "", false), "soon", "", "must be an ISO 8601 date"},
		{"datetime normalised to UTC seconds", dateDecision("", "", true), "2026-03-01T09:30:15.75+02:00", "2026-03-01T07:30:15Z", ""},
		{"datetime refuses a date", dateDecision("", "", true), "2026-03-01", "", "must be an ISO 8601 date-time with a time zone"},
		{"datetime after max", dateDecision("", "2026-03-01T07:00:00Z", true), "2026-03-01T09:30:00+02:00", "", "must be on or before 2026-03-01T07:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := aah.CheckAnswer(tc.d, tc.in)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr == "" && got != tc.want {
				t.Errorf("CheckAnswer = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := aah.CheckAnswer(dateDecision("", "", false), 5.0); err == nil {
		t.Error("a number was accepted as a date")
	}
}

func TestPreselectedDefaultDateTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		def      string
		dateTime bool
		want     string
	}{
		{"2026-03-01T09:30:15.5+02:00", true, "2026-03-01T07:30:15Z"},
		{"2026-03-01", true, "2026-03-01T00:00:00Z"},
		{"2026-03-01T23:30:00-05:00", false, "2026-03-01"},
	} {
		d := dateDecision("", "", tc.dateTime)
		d.Default = tc.def
		got, ok := d.PreselectedDefault()
		if !ok || got != tc.want {
			t.Errorf("PreselectedDefault(%q, datetime %v) = %v, %v; want %q", tc.def, tc.dateTime, got, ok, tc.want)
		}
		if tc.dateTime { // what the picker shows is a valid answer, unchanged
			if norm, err := aah.CheckAnswer(d, got); err != nil || norm != got {
				t.Errorf("CheckAnswer(preselected %v) = %v, %v", got, norm, err)
			}
		}
	}
}
