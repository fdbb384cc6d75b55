package bot

import (
	"maps"
	"slices"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/webhook"
)

// LocalDefaultReviewers decide, in local mode with the built-in sandbox
// workspace, the requests that name nobody when DEFAULT_REVIEWERS and
// DEFAULT_REVIEWER_GROUPS are unset: Alice and Bob, the workspace's
// reviewers. Everyone else (Mallory, the requester) is refused there, as
// they would be in production. They are the emulator's ids written out, not
// imported, so configuration does not depend on the emulator
// (internal/slackemu); internal/localmode's tests check they still match.
var LocalDefaultReviewers = []string{"U0ALICE", "U0BOB"}

// applyLocalReviewers sets local mode's default reviewers. With a workspace
// of your own (SANDBOX_WORKSPACE) nobody is assumed: set DEFAULT_REVIEWERS,
// or requests that name nobody are refused as in production.
func (c *Config) applyLocalReviewers() {
	if c.SandboxWorkspace == "" && len(c.DefaultReviewers) == 0 && len(c.DefaultReviewerGroups) == 0 {
		c.DefaultReviewers = slices.Clone(LocalDefaultReviewers)
	}
}

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
	for _, a := range c.PolicyOverrideAgents {
		if !c.knownAgent(a) {
			add("POLICY_OVERRIDE_AGENTS must list agents named in INTAKE_TOKENS, got %q", a)
		}
	}
	c.validateDeciders(add)
	if c.ApprovalQuorum < 1 || c.ApprovalQuorum > aah.MaxQuorum {
		add("APPROVAL_QUORUM must be from 1 to %d", aah.MaxQuorum)
	}
	if c.DirectoryCacheTTL <= 0 {
		add("DIRECTORY_CACHE_TTL must be positive (e.g. 5m)")
	}
}

// knownAgent reports whether agent may be named in a per-agent setting: it
// is in INTAKE_TOKENS, or it is local mode's anonymous agent.
func (c *Config) knownAgent(agent string) bool {
	return c.tokens.Has(agent) || c.LocalMode() && c.tokens.Len() == 0 && agent == webhook.AnonymousAgent
}

// validateLimits parses the per-agent intake limits.
func (c *Config) validateLimits(add func(format string, args ...any)) {
	var err error
	if c.limits.Rate, err = webhook.ParseRate(c.IntakeRate); err != nil {
		add("INTAKE_RATE: %v", err)
	}
	if c.limits.RateOverrides, err = webhook.ParseRateOverrides(c.IntakeRateOverrides); err != nil {
		add("%v", err)
	}
	if c.IntakeMaxOpen < 0 {
		add("INTAKE_MAX_OPEN must be 0 (no cap) or more, got %d", c.IntakeMaxOpen)
	}
	c.limits.MaxOpen = c.IntakeMaxOpen
	if c.limits.MaxOpenOverrides, err = webhook.ParseMaxOpenOverrides(c.IntakeMaxOpenOverrides); err != nil {
		add("%v", err)
	}
	for _, o := range []struct {
		setting string
		agents  []string
	}{{"INTAKE_RATE_OVERRIDES", slices.Sorted(maps.Keys(c.limits.RateOverrides))},
		{"INTAKE_MAX_OPEN_OVERRIDES", slices.Sorted(maps.Keys(c.limits.MaxOpenOverrides))}} {
		for _, a := range o.agents {
			if !c.knownAgent(a) {
				add("%s must name agents of INTAKE_TOKENS, got %q", o.setting, a)
			}
		}
	}
}

// Policy is the workspace-wide authorization configuration for the decider.
func (c Config) Policy() approval.Policy {
	return approval.Policy{
		Defaults: aah.Defaults{Quorum: c.ApprovalQuorum, AllowSelfApproval: c.AllowSelfApproval,
			RequireReason: c.RequireReason, OverrideAgents: c.PolicyOverrideAgents},
		Admins: c.AdminUsers, Reviewers: c.DefaultReviewers, ReviewerGroups: c.DefaultReviewerGroups,
	}
}

// validateDeciders parses who decides through the API: REVIEWER_TOKENS
// (no token shared with INTAKE_TOKENS, which would make one credential two
// identities) and AGENT_APPROVERS (agents of INTAKE_TOKENS). Errors never
// quote a token.
func (c *Config) validateDeciders(add func(format string, args ...any)) {
	var err error
	if c.reviewers, err = webhook.ParseReviewerTokens(c.ReviewerTokens); err != nil {
		add("%v", err)
	} else if c.reviewers.SharesTokenWith(c.tokens) {
		add("REVIEWER_TOKENS and INTAKE_TOKENS share a token: give each reviewer and each agent a token of its own")
	}
	if c.approvers, err = webhook.ParseAgentApprovers(c.AgentApprovers); err != nil {
		add("%v", err)
	}
	for _, a := range slices.Sorted(maps.Keys(c.approvers)) {
		if !c.knownAgent(a) {
			add("AGENT_APPROVERS must grant agents named in INTAKE_TOKENS, got %q", a)
		}
	}
}
