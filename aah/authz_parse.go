package aah

import (
	"slices"
	"unicode/utf8"
)

// IsSlackGroupID reports whether s looks like a Slack user group id (S…).
func IsSlackGroupID(s string) bool { return isUserGroup(s) }

// authorization parses the extensions.slack fields that say who may decide:
// reviewer_groups, required_roles, quorum, allow_self_approval,
// require_reason and requested_by. r.Data must be parsed already: quorum
// and roles apply to approval decisions only.
func (p *parser) authorization(n node, r *Request) {
	h := &r.Slack
	gn := n.field("reviewer_groups")
	groups := p.array(gn)
	if len(groups) > MaxReviewerGroups {
		p.fail(gn, "lists %d groups; at most %d", len(groups), MaxReviewerGroups)
	}
	for i := range groups {
		en := gn.index(i)
		switch s := p.str(en, true); {
		case s == "":
		case !IsSlackGroupID(s):
			p.fail(en, "must be a Slack user group id (S…), got %q", s)
		case slices.Contains(h.ReviewerGroups, s):
			p.fail(en, "lists %q twice", s)
		default:
			h.ReviewerGroups = append(h.ReviewerGroups, s)
		}
	}
	p.roles(n.field("required_roles"), r)

	qn := n.field("quorum")
	if q := p.number(qn); q != nil {
		if *q < 1 || *q > MaxQuorum || *q != float64(int(*q)) {
			p.fail(qn, "must be a whole number from 1 to %d", MaxQuorum)
		} else {
			h.Quorum = int(*q)
		}
	}
	h.AllowSelfApproval = p.boolean(n.field("allow_self_approval"))
	h.RequireReason = p.boolean(n.field("require_reason"))
	rn := n.field("requested_by")
	if s := p.str(rn, false); s != "" {
		if !IsSlackUserID(s) && !IsEmail(s) {
			p.fail(rn, "must be a Slack user id (U…/W…) or an email address, got %q", s)
		} else {
			h.RequestedBy = s
		}
	}

	quorum, selfOK := h.Quorum, h.AllowSelfApproval != nil && *h.AllowSelfApproval
	if !p.opts.Stored {
		// The workspace's rules as they apply to this request (a floor,
		// unless its agent may loosen them; see Request.Rules).
		rules := r.Rules(p.opts.Defaults)
		quorum, selfOK = rules.Quorum, rules.AllowSelfApproval
	}
	hasApproval := slices.ContainsFunc(r.Data.Decisions, func(d Decision) bool { return d.Type == TypeApproval })
	if quorum > 1 && hasApproval && len(h.ReviewerGroups) == 0 {
		// Without a group nobody outside the named people can approve, so a
		// quorum larger than them could never be met (escalation targets
		// named by id or email count too; the requester does not, unless
		// they may approve their own request).
		named := namedApprovers(r)
		if requester := r.Requester(); !selfOK {
			named = slices.DeleteFunc(named, func(s string) bool { return slices.Contains(requester, s) })
		}
		if len(named) > 0 && len(named) < quorum {
			field := qn
			if h.Quorum != quorum {
				field = n.field("reviewers") // the workspace's APPROVAL_QUORUM applies
			}
			p.fail(field, "needs %d approvers, but the request names only %d people who may approve", quorum, len(named))
		}
	}
	if h.Quorum <= 1 && len(h.RequiredRoles) == 0 {
		return
	}
	if !hasApproval && len(r.Data.Decisions) > 0 {
		field := qn
		if h.Quorum <= 1 {
			field = n.field("required_roles")
		}
		p.fail(field, "applies to approval decisions, and this request has none")
	}
}

// roles parses required_roles: [{"role": "legal", "members": [...]}].
func (p *parser) roles(n node, r *Request) {
	list := p.array(n)
	if len(list) > MaxRoles {
		p.fail(n, "lists %d roles; at most %d", len(list), MaxRoles)
	}
	for i := range list {
		rn := n.index(i)
		if !p.object(rn, true) {
			continue
		}
		role := Role{Name: p.str(rn.field("role"), true)}
		switch {
		case role.Name == "":
		case utf8.RuneCountInString(role.Name) > 40 || !isRoleName(role.Name):
			p.fail(rn.field("role"), "must be 1 to 40 letters, digits, spaces, '_', '.' or '-', got %q", role.Name)
		case slices.ContainsFunc(r.Slack.RequiredRoles, func(o Role) bool { return o.Name == role.Name }):
			p.fail(rn.field("role"), "names role %q twice", role.Name)
		}
		mn := rn.field("members")
		members := p.array(mn)
		switch {
		case mn.absent():
			p.fail(mn, "is required: who can sign off for this role")
		case len(members) == 0:
			p.fail(mn, "must name at least one member")
		case len(members) > MaxRoleMembers:
			p.fail(mn, "lists %d members; at most %d", len(members), MaxRoleMembers)
		}
		for j := range members {
			en := mn.index(j)
			switch s := p.str(en, true); {
			case s == "":
			case !IsSlackUserID(s) && !IsEmail(s) && !IsSlackGroupID(s):
				p.fail(en, "must be a Slack user id (U…/W…), an email address or a user group id (S…), got %q", s)
			case slices.Contains(role.Members, s):
				p.fail(en, "lists %q twice", s)
			default:
				role.Members = append(role.Members, s)
			}
		}
		r.Slack.RequiredRoles = append(r.Slack.RequiredRoles, role)
	}
}

// namedApprovers is every person named as a possible approver: reviewers,
// role members and escalation targets given as user ids or emails. It is
// nil when a role names a user group (its size is unknown here).
func namedApprovers(r *Request) []string {
	var named []string
	add := func(s string) {
		if !slices.Contains(named, s) {
			named = append(named, s)
		}
	}
	for _, s := range r.Slack.Reviewers {
		add(s)
	}
	for _, role := range r.Slack.RequiredRoles {
		for _, m := range role.Members {
			if IsSlackGroupID(m) {
				return nil
			}
			add(m)
		}
	}
	for _, e := range r.Data.Escalation {
		if IsSlackUserID(e.To) || IsEmail(e.To) {
			add(e.To)
		}
	}
	return named
}
