package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
)

// Directory says which Slack user an email address belongs to ("" for
// none) and who belongs to a user group. The bot's implementation asks Slack
// and caches the answers briefly. Emails are resolved to users, not users to
// their profile email: a hidden or missing profile email must not make the
// requester look like someone else.
type Directory interface {
	UserIDByEmail(ctx context.Context, email string) (string, error)
	GroupMembers(ctx context.Context, groupID string) ([]string, error)
}

// Policy is the workspace-wide authorization configuration.
type Policy struct {
	// Defaults are the workspace's sign-off rules: a floor each request may
	// raise but not lower, unless its agent is one of Defaults.OverrideAgents
	// (see aah.Request.Rules). They are applied as configured when a person
	// acts, not as they were when the request arrived.
	Defaults aah.Defaults
	// Admins may decide any request (they count towards a quorum but hold
	// no role they are not a member of).
	Admins []string
	// Reviewers and ReviewerGroups decide requests that name nobody who
	// may decide (no reviewers, reviewer_groups or required_roles). When
	// they are empty too, only Admins (and escalation targets, once
	// escalated to) may decide such a request: nobody named never means
	// anyone.
	Reviewers      []string
	ReviewerGroups []string
}

// DecidesUnnamed reports whether anyone may decide a request that names
// nobody (before any escalation): intake refuses such requests otherwise.
func (p Policy) DecidesUnnamed() bool {
	return len(p.Reviewers) > 0 || len(p.ReviewerGroups) > 0 || len(p.Admins) > 0
}

// Refusal rules, recorded in the audit with each refused action.
const (
	RuleClosed        = "closed"
	RuleReviewer      = "reviewer"
	RuleSelfApproval  = "self_approval"
	RuleRequireReason = "require_reason"
	RuleInvalid       = "invalid"
	// RuleVerb refuses a verb the request does not accept (its
	// extensions.decisions responses), or modify on a decision that
	// needs several sign-offs.
	RuleVerb = "verb"
)

// authority is what one person may do on one request, worked out before the
// request is changed: it needs Slack lookups (emails, group members), which
// must not run inside the optimistic transaction.
type authority struct {
	closed    bool     // the request was closed when this was worked out: nobody may act
	named     bool     // the person is one who may decide (user id, email, group or role)
	admin     bool     // a workspace admin (Policy.Admins)
	requester bool     // the person the agent asks for
	roles     []string // the required roles the person holds
	ownAgent  bool     // an agent approver acting on a request it sent itself
}

// allowed reports whether the person may decide, given the request's
// reviewer mentions (emails resolved when it was posted) and escalation
// targets as they are now. There is no "anyone may": a person must be
// named, by the request or by the workspace.
func (a authority) allowed(mentions, escalatedTo []string, user string) bool {
	if a.closed {
		return false
	}
	return a.admin || a.named || slices.Contains(escalatedTo, user) ||
		slices.Contains(mentions, "<@"+user+">")
}

// notAllowedReason tells a person who may not decide req who may.
func notAllowedReason(req *aah.Request) string {
	if !req.NamesDeciders() {
		return "This request names no reviewers, so only the workspace's default reviewers and admins " +
			"(or its escalation contact, once escalated to) can answer it."
	}
	return "Only the people this request names (its reviewers, reviewer groups and " +
		"required roles) or its escalation contact can answer it."
}

// authorize works out a person's authority over a request. A failed lookup
// is an error: it fails closed, and the person may try again.
func (c *Core) authorize(ctx context.Context, req *aah.Request, by aah.Person) (authority, error) {
	m := &matcher{dir: c.dir, user: by.ID}
	var a authority
	a.admin = slices.Contains(c.policy.Admins, by.ID)
	h := req.Slack
	reviewers, groups := h.Reviewers, h.ReviewerGroups
	if !req.NamesDeciders() {
		reviewers, groups = c.policy.Reviewers, c.policy.ReviewerGroups
	}
	var err error
	if a.named, err = m.any(ctx, slices.Concat(reviewers, groups)); err != nil {
		return a, err
	}
	for _, role := range h.RequiredRoles {
		in, err := m.any(ctx, role.Members)
		if err != nil {
			return a, err
		}
		if in {
			a.roles = append(a.roles, role.Name)
			a.named = true
		}
	}
	if a.requester, err = m.any(ctx, req.Requester()); err != nil {
		return a, err
	}
	return a, nil
}

// matcher matches one Slack user against user ids, emails and user group
// ids, looking up emails and group members only when an entry needs them.
type matcher struct {
	dir  Directory
	user string
}

func (m *matcher) any(ctx context.Context, entries []string) (bool, error) {
	for _, e := range entries {
		ok, err := m.match(ctx, e)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

func (m *matcher) match(ctx context.Context, entry string) (bool, error) {
	switch {
	case entry == m.user:
		return true, nil
	case aah.IsSlackUserID(entry):
		return false, nil
	case m.dir == nil:
		return false, nil // nothing to check emails and groups with: no match (fails closed)
	case aah.IsSlackGroupID(entry):
		members, err := m.dir.GroupMembers(ctx, entry)
		if err != nil {
			return false, fmt.Errorf("look up members of user group %s: %w", entry, err)
		}
		return slices.Contains(members, m.user), nil
	case aah.IsEmail(entry):
		id, err := m.dir.UserIDByEmail(ctx, strings.ToLower(entry))
		if err != nil {
			return false, fmt.Errorf("look up the Slack user of an email: %w", err)
		}
		return id == m.user, nil
	}
	return false, nil
}
