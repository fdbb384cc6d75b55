package aah

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxDuration bounds every duration an agent may write.
const maxDuration = 10 * 365 * 24 * time.Hour

// isoDuration matches the ISO 8601 durations that have a fixed length:
// weeks, days, hours, minutes and seconds (years and months do not).
var isoDuration = regexp.MustCompile(`^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// simpleDuration matches Go-style durations extended with days and weeks:
// "30m", "24h", "7d", "1d12h", "2w".
var simpleDuration = regexp.MustCompile(`^(?:\d+(?:\.\d+)?(?:w|d|h|m|s|ms))+$`)

var simpleUnit = regexp.MustCompile(`(\d+(?:\.\d+)?)(ms|w|d|h|m|s)`)

// ParseDuration parses the escalation and reminder durations agents write:
// Go-style with day and week units ("30m", "24h", "7d", "1d12h") or ISO 8601
// ("PT24H", "P1D", "P1DT12H", "P2W"). The result must be positive. Calendar
// units (years, months) are refused because their length is ambiguous.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("duration is empty")
	}
	// Sum in float64 and bound the total before converting: a huge value
	// must be refused, not wrapped around to a small duration.
	var total float64
	switch {
	case strings.HasPrefix(strings.ToUpper(s), "P"):
		m := isoDuration.FindStringSubmatch(strings.ToUpper(s))
		if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
			return 0, fmt.Errorf("%q is not an ISO 8601 duration of weeks, days, hours, minutes and seconds (e.g. PT24H, P1DT12H)", s)
		}
		units := []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}
		for i, u := range units {
			if m[i+1] == "" {
				continue
			}
			f, err := strconv.ParseFloat(m[i+1], 64)
			if err != nil {
				return 0, fmt.Errorf("%q: %w", s, err)
			}
			total += f * float64(u)
		}
	case simpleDuration.MatchString(s):
		units := map[string]time.Duration{"w": 7 * 24 * time.Hour, "d": 24 * time.Hour, "h": time.Hour, "m": time.Minute, "s": time.Second, "ms": time.Millisecond}
		for _, m := range simpleUnit.FindAllStringSubmatch(s, -1) {
			f, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return 0, fmt.Errorf("%q: %w", s, err)
			}
			total += f * float64(units[m[2]])
		}
	default:
		return 0, fmt.Errorf("%q is not a duration; use e.g. 30m, 24h, 7d or PT24H", s)
	}
	if total > float64(maxDuration) {
		return 0, fmt.Errorf("duration %q is longer than ten years", s)
	}
	if d := time.Duration(total); d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("duration %q must be greater than zero", s)
}
