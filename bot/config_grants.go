package bot

import (
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
)

// MaxStandingApproval bounds STANDING_APPROVAL_MAX: a standing approval
// outliving a working day is a policy, not a shortcut.
const MaxStandingApproval = 24 * time.Hour

// validateGrants checks the standing approvals' settings.
func (c *Config) validateGrants(add func(format string, args ...any)) {
	if c.StandingApprovalMax < 0 || c.StandingApprovalMax > MaxStandingApproval {
		add("STANDING_APPROVAL_MAX must be from 0 (no standing approvals) to %s, got %s", MaxStandingApproval, c.StandingApprovalMax)
	} else if c.StandingApprovalMax > 0 && c.StandingApprovalMax < time.Minute {
		add("STANDING_APPROVAL_MAX must be 0 (no standing approvals) or at least 1m, got %s", c.StandingApprovalMax)
	}
	for _, g := range c.StandingApprovalGranters {
		if !aah.IsSlackUserID(g) && !aah.IsSlackGroupID(g) {
			add("STANDING_APPROVAL_GRANTERS must list Slack user ids (U…/W…) or user group ids (S…), got %q", g)
		}
	}
}

// StandingApprovals configures the core's standing approvals over grants.
func (c Config) StandingApprovals(grants approval.GrantStore) approval.StandingApprovals {
	return approval.StandingApprovals{Store: grants, Max: c.StandingApprovalMax, Granters: c.StandingApprovalGranters}
}
