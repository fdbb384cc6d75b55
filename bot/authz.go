package bot

import (
	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/bot/decide"
)

// validateAuthorization checks the workspace-wide authorization settings.
func (c *Config) validateAuthorization(add func(format string, args ...any)) {
	for _, u := range c.AdminUsers {
		if !aah.IsSlackUserID(u) {
			add("ADMIN_USERS must list Slack user ids (U…/W…), got %q", u)
		}
	}
	for _, u := range c.DefaultReviewers {
		if !aah.IsSlackUserID(u) && !aah.IsEmail(u) {
			add("DEFAULT_REVIEWERS must list Slack user ids (U…/W…) or email addresses, got %q", u)
		}
	}
	for _, g := range c.DefaultReviewerGroups {
		if !aah.IsSlackGroupID(g) {
			add("DEFAULT_REVIEWER_GROUPS must list Slack user group ids (S…), got %q", g)
		}
	}
	if c.ApprovalQuorum < 1 || c.ApprovalQuorum > aah.MaxQuorum {
		add("APPROVAL_QUORUM must be from 1 to %d", aah.MaxQuorum)
	}
	if c.DirectoryCacheTTL <= 0 {
		add("DIRECTORY_CACHE_TTL must be positive (e.g. 5m)")
	}
}

// Policy is the workspace-wide authorization configuration for the decider.
func (c Config) Policy() decide.Policy {
	return decide.Policy{
		Defaults: aah.Defaults{Quorum: c.ApprovalQuorum, AllowSelfApproval: c.AllowSelfApproval,
			RequireReason: c.RequireReason},
		Admins: c.AdminUsers, Reviewers: c.DefaultReviewers, ReviewerGroups: c.DefaultReviewerGroups,
	}
}
