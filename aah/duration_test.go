package aah_test

import (
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	good := []struct {
		in   string
		want time.Duration
	}{
		// Go style, extended with days and weeks.
		{"30m", 30 * time.Minute},
		{"24h", 24 * time.Hour},
		{"7d", 7 * day},
		{"1d12h", 36 * time.Hour},
		{"2w", 14 * day},
		{"1.5h", 90 * time.Minute},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"1w2d3h4m5s", 7*day + 2*day + 3*time.Hour + 4*time.Minute + 5*time.Second},
		{"500ms", 500 * time.Millisecond},
		{"1m30s", 90 * time.Second},
		{" 24h ", 24 * time.Hour}, // surrounding space is trimmed
		{"3650d", 3650 * day},     // exactly ten years of days: the limit is inclusive
		// ISO 8601 with fixed-length units.
		{"PT24H", 24 * time.Hour},
		{"P1D", day},
		{"P1DT12H", 36 * time.Hour},
		{"PT30M", 30 * time.Minute},
		{"PT1.5S", 1500 * time.Millisecond},
		{"P2W", 14 * day},
		{"PT1H30M", 90 * time.Minute},
		{"P1W1D", 8 * day},
		{"PT36H", 36 * time.Hour},
		// ISO 8601 designators in lower case are accepted (the input is
		// upper-cased before matching), which is a sensible leniency.
		{"pt24h", 24 * time.Hour},
		{"p1dt12h", 36 * time.Hour},
		{"p2w", 14 * day},
	}
	for _, tc := range good {
		t.Run("good/"+tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := aah.ParseDuration(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}

	bad := []struct {
		in, msg string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"24", "is not a duration"},
		{"h", "is not a duration"},
		{"P", "not an ISO 8601 duration"},
		{"PT", "not an ISO 8601 duration"},
		{"P1M", "not an ISO 8601 duration"}, // months have no fixed length
		{"P1Y", "not an ISO 8601 duration"},
		{"P1Y2M3D", "not an ISO 8601 duration"},
		{"P1DT", "not an ISO 8601 duration"},
		{"PT1.5H", "not an ISO 8601 duration"}, // only seconds take a fraction
		{"P-1D", "not an ISO 8601 duration"},
		{"P1D12H", "not an ISO 8601 duration"}, // hours need the T
		{"-5m", "is not a duration"},
		{"+5m", "is not a duration"},
		{"0s", "greater than zero"},
		{"0h0m", "greater than zero"},
		{"PT0S", "greater than zero"},
		{"P0D", "greater than zero"},
		{"1x", "is not a duration"},
		{"24 h", "is not a duration"},
		{"11y", "is not a duration"},
		{"24H", "is not a duration"}, // Go-style units are lower case only
		{"1.h", "is not a duration"},
		{".5h", "is not a duration"},
		{"1e3s", "is not a duration"},
		{"1µs", "is not a duration"},
		{"soon", "is not a duration"},
		{"3651d", "longer than ten years"},
		{"P600W", "longer than ten years"},
	}
	for _, tc := range bad {
		t.Run("bad/"+tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := aah.ParseDuration(tc.in)
			if err == nil {
				t.Fatalf("ParseDuration(%q) = %v, want an error", tc.in, got)
			}
			if got != 0 {
				t.Errorf("ParseDuration(%q) returned %v with its error, want 0", tc.in, got)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("ParseDuration(%q) error %q does not contain %q", tc.in, err, tc.msg)
			}
		})
	}
}
