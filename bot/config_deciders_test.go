package bot_test

import (
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

// REVIEWER_TOKENS and AGENT_APPROVERS are checked at start, every problem
// named, no token quoted.
func TestConfigDecidersAreCheckedAtStart(t *testing.T) {
	const secret = "0123456789abcdef0123"
	for _, tc := range []struct {
		name, reviewers, approvers, want string
	}{
		{"not a user id", "alice:" + secret, "", "REVIEWER_TOKENS: entry 1 does not start with a Slack user id"},
		{"short token", "U0ALICE:short", "", "REVIEWER_TOKENS: a token of U0ALICE is shorter than 16 characters"},
		{"no token", "U0ALICE", "", "REVIEWER_TOKENS: entry"},
		{"shared with an agent", "U0ALICE:" + secret + "pm", "", "REVIEWER_TOKENS and INTAKE_TOKENS share a token"},
		{"unknown agent", "", "ghost:U0CHECK", `AGENT_APPROVERS must grant agents named in INTAKE_TOKENS, got "ghost"`},
		{"not a user", "", "planner:checker", `AGENT_APPROVERS: agent "planner" decides as "checker", which is not a Slack user id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("INTAKE_TOKENS", "planner:"+secret+"pm")
			t.Setenv("REVIEWER_TOKENS", tc.reviewers)
			t.Setenv("AGENT_APPROVERS", tc.approvers)
			_, err := bot.LoadConfig()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes a token: %v", err)
			}
		})
	}
	t.Setenv("INTAKE_TOKENS", "planner:"+secret+"pm")
	t.Setenv("REVIEWER_TOKENS", "U0ALICE:"+secret+", W0BOB:"+secret+"b")
	t.Setenv("AGENT_APPROVERS", "planner:U0CHECK")
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Reviewers().Len() != 2 || cfg.AgentApproverGrants()["planner"] != "U0CHECK" {
		t.Errorf("parsed %d reviewers, approvers %v", cfg.Reviewers().Len(), cfg.AgentApproverGrants())
	}
}
