package aah

import (
	"fmt"
	"strings"
	"time"
)

// The shape of an RFC 3339 date-time (isRFC3339Form: two-digit months,
// days, hours, minutes, seconds and offset, "." before a fraction) is
// checked before time.Parse, which alone also takes one-digit hours, a ","
// before the fraction and offsets such as +24:00; the ranges of the fields
// are time.Parse's check.

// IsRFC3339 reports whether s is an RFC 3339 date-time with a time zone
// (2026-02-17T17:00:00Z), written as the RFC writes it and naming a real
// moment (no February 30th, no hour 24).
func IsRFC3339(s string) bool {
	if !isRFC3339Form(s) {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// isDateValueForm reports whether s is written exactly as a date value
// must be at intake: a calendar date (2026-02-17) or an RFC 3339 date-time,
// without surrounding space.
func isDateValueForm(s string) bool {
	if isDateOnlyForm(s) {
		_, err := time.Parse(DateOnlyLayout, s)
		return err == nil
	}
	return IsRFC3339(s)
}

// dateFormMessage is the problem of a date value not written as
// isDateValueForm wants.
const dateFormMessage = "must be an ISO 8601 date (2026-02-17) or an RFC 3339 date-time with a time zone (2026-02-17T17:00:00Z): two-digit months, days and hours, no surrounding space"

// dateValue is a date answer, bound or default: a calendar date, or an
// instant given as a date-time.
type dateValue struct {
	t        time.Time
	dateOnly bool
}

func parseDateBound(s string) (dateValue, error) {
	t, err := ParseDateValue(s)
	if err != nil {
		return dateValue{}, err
	}
	_, dateErr := time.Parse(DateOnlyLayout, strings.TrimSpace(s))
	return dateValue{t: t, dateOnly: dateErr == nil}, nil
}

// compare orders a and b: by calendar date (each as it is written) when
// either is only a date, by instant when both are date-times.
func (a dateValue) compare(b dateValue) int {
	if a.dateOnly || b.dateOnly {
		return strings.Compare(a.t.Format(DateOnlyLayout), b.t.Format(DateOnlyLayout))
	}
	return a.t.Compare(b.t)
}

// CheckDate validates a date answer (a date or a date-time, see
// ParseDateValue) against the decision's constraints.min and max
// (Constraints.MinDate, MaxDate): a date answer is compared by date, a
// date-time answer by instant with date-time bounds and by its calendar
// date with date bounds.
func CheckDate(d Decision, s string) error {
	v, err := parseDateBound(s)
	if err != nil {
		return err
	}
	if d.Constraints.MinDate != "" {
		if lo, err := parseDateBound(d.Constraints.MinDate); err == nil && v.compare(lo) < 0 {
			return fmt.Errorf("must be on or after %s", d.Constraints.MinDate)
		}
	}
	if d.Constraints.MaxDate != "" {
		if hi, err := parseDateBound(d.Constraints.MaxDate); err == nil && v.compare(hi) > 0 {
			return fmt.Errorf("must be on or before %s", d.Constraints.MaxDate)
		}
	}
	return nil
}

// NormalizeDateTime parses an RFC 3339 date-time and writes it as the
// answer of a date-time decision holds it: UTC, to the second
// (2026-03-01T07:30:00Z), what a Block Kit datetimepicker (Unix seconds)
// gives too.
func NormalizeDateTime(s string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("must be an ISO 8601 date-time with a time zone, e.g. 2026-02-17T17:00:00Z, got %q", s)
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339), nil
}

// checkDateAnswer is CheckAnswer for a date decision.
func checkDateAnswer(d Decision, v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("a date answer is an ISO 8601 date")
	}
	if d.Review != nil && d.Review.DateTime {
		norm, err := NormalizeDateTime(s)
		if err != nil {
			return s, err
		}
		s = norm
	}
	if _, err := ParseDateValue(s); err != nil {
		return s, err
	}
	return s, CheckDate(d, s)
}

// dateConstraints parses a date decision's constraints: min and max as ISO
// 8601 dates or date-times, min not after max.
func (p *parser) dateConstraints(cn node, d *Decision) {
	if pn := cn.field("pattern"); !pn.absent() {
		p.fail(pn, "only text decisions take a pattern")
	}
	var bounds [2]*dateValue
	for i, name := range []string{"min", "max"} {
		bn := cn.field(name)
		if !bn.absent() {
			if _, isString := bn.v.(string); !isString {
				p.fail(bn, "bounds a date: an ISO 8601 date (2026-02-17) or date-time, got %s", typeName(bn.v))
				continue
			}
		}
		s := p.str(bn, false)
		if s == "" {
			if _, isString := bn.v.(string); isString {
				p.fail(bn, "must not be empty; omit it for no bound")
			}
			continue
		}
		v, err := parseDateBound(s)
		if err != nil {
			p.fail(bn, "%v", err)
			continue
		}
		if !p.opts.Stored && !isDateValueForm(s) {
			p.fail(bn, dateFormMessage)
			continue
		}
		bounds[i] = &v
		if i == 0 {
			d.Constraints.MinDate = s
		} else {
			d.Constraints.MaxDate = s
		}
	}
	if bounds[0] != nil && bounds[1] != nil && bounds[0].compare(*bounds[1]) > 0 {
		p.fail(cn, "min (%s) is later than max (%s)", d.Constraints.MinDate, d.Constraints.MaxDate)
	}
}
