package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
)

// RETENTION reads Go durations and days; 0 (the default) keeps
// everything; negative and too short values are refused, naming it.
func TestConfigRetention(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"":      0,
		"0":     0,
		"90d":   90 * 24 * time.Hour,
		"1d12h": 36 * time.Hour,
		"720h":  720 * time.Hour,
		"1h":    time.Hour,
	} {
		t.Run("ok "+value, func(t *testing.T) {
			clearEnv(t)
			if value != "" {
				t.Setenv("RETENTION", value)
			}
			c, err := bot.LoadConfig()
			if err != nil || c.RetentionPeriod() != want {
				t.Errorf("RETENTION=%q: %v, %v; want %v", value, c.RetentionPeriod(), err, want)
			}
		})
	}
	for value, want := range map[string]string{
		"-1d":         "RETENTION must not be negative",
		"-5h":         "RETENTION must not be negative",
		"30m":         "RETENTION must be at least 1h",
		"90":          `RETENTION "90" is not a duration`,
		"1.5d":        `RETENTION "1.5d" is not a duration`,
		"ninety days": `RETENTION "ninety days" is not a duration`,
	} {
		t.Run("refused "+value, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("RETENTION", value)
			if _, err := bot.LoadConfig(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("RETENTION=%q: %v, want %q", value, err, want)
			}
		})
	}
}
