package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
)

// STANDING_APPROVAL_MAX defaults to an hour, 0 turns standing approvals
// off, and anything out of 1m..24h or an odd granter is refused at start
// with the setting named.
func TestConfigStandingApprovals(t *testing.T) {
	clearEnv(t)
	cfg, err := bot.LoadConfig()
	if err != nil || cfg.StandingApprovalMax != time.Hour || len(cfg.StandingApprovalGranters) != 0 {
		t.Fatalf("defaults: max %v granters %v, %v; want 1h, anyone", cfg.StandingApprovalMax, cfg.StandingApprovalGranters, err)
	}
	if got := cfg.StandingApprovals(nil); got.Max != time.Hour || got.Granters != nil {
		t.Errorf("StandingApprovals = %+v", got)
	}
	for _, tc := range []struct {
		max, granters, want string
	}{
		{"0", "", ""},
		{"24h", "U0ALICE,S0LEADS", ""},
		{"25h", "", "STANDING_APPROVAL_MAX must be from 0"},
		{"-1m", "", "STANDING_APPROVAL_MAX must be from 0"},
		{"30s", "", "STANDING_APPROVAL_MAX must be 0 (no standing approvals) or at least 1m"},
		{"1h", "alice@example.com", `STANDING_APPROVAL_GRANTERS must list Slack user ids (U…/W…) or user group ids (S…), got "alice@example.com"`},
	} {
		clearEnv(t)
		t.Setenv("STANDING_APPROVAL_MAX", tc.max)
		t.Setenv("STANDING_APPROVAL_GRANTERS", tc.granters)
		_, err := bot.LoadConfig()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("MAX=%s GRANTERS=%s refused: %v", tc.max, tc.granters, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("MAX=%s GRANTERS=%s: err = %v; want %q", tc.max, tc.granters, err, tc.want)
		}
	}
}
