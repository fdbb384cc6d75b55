package aah

import (
	"slices"
	"strings"
	"time"
)

// Limits of the authorization fields of extensions.slack.
const (
	MaxReviewerGroups = 10
	MaxRoles          = 10
	MaxRoleMembers    = 50
	MaxQuorum         = 20
)

// Role is one entry of extensions.slack.required_roles: a sign-off that must
// come from one of Members (Slack user ids, email addresses or Slack user
// group ids).
type Role struct {
	Name    string
	Members []string
}

// Signoff is one person's current verdict on an approval decision that needs
// several sign-offs (see Rules.Gated). A person has at most one: signing
// again replaces their earlier verdict (the audit keeps every version).
type Signoff struct {
	By       Person    `json:"by"`
	Approved bool      `json:"approved"`
	Roles    []string  `json:"roles,omitempty"` // the required roles the person held when signing
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// Defaults are the workspace-wide rules (configuration) that a request's
// extensions.slack fields override.
type Defaults struct {
	Quorum            int  // approvals each approval decision needs; 0 means 1
	AllowSelfApproval bool // may the requester decide their own request
	RequireReason     bool // must a rejection carry a reason
}

// Rules are the effective sign-off rules of a request: its extensions.slack
// fields over the workspace defaults.
type Rules struct {
	Quorum            int
	Roles             []Role
	AllowSelfApproval bool
	RequireReason     bool
}

// Rules returns the request's effective sign-off rules.
func (r *Request) Rules(def Defaults) Rules {
	out := Rules{Quorum: max(def.Quorum, 1), Roles: r.Slack.RequiredRoles,
		AllowSelfApproval: def.AllowSelfApproval, RequireReason: def.RequireReason}
	if r.Slack.Quorum > 0 {
		out.Quorum = r.Slack.Quorum
	}
	if r.Slack.AllowSelfApproval != nil {
		out.AllowSelfApproval = *r.Slack.AllowSelfApproval
	}
	if r.Slack.RequireReason != nil {
		out.RequireReason = *r.Slack.RequireReason
	}
	return out
}

// Gated reports whether approval decisions collect sign-offs (several
// approvers, or required roles) instead of taking the first answer.
func (r Rules) Gated() bool { return r.Quorum > 1 || len(r.Roles) > 0 }

// Requester lists the identities (Slack user id or email) of the human on
// whose behalf the agent asks: extensions.slack.requested_by, and
// source.agent_id when it is "human:<user id or email>".
func (r *Request) Requester() []string {
	var out []string
	if r.Slack.RequestedBy != "" {
		out = append(out, r.Slack.RequestedBy)
	}
	if id, ok := strings.CutPrefix(r.Source.AgentID, "human:"); ok && (IsSlackUserID(id) || IsEmail(id)) && !slices.Contains(out, id) {
		out = append(out, id)
	}
	return out
}

// Progress is how far an approval decision's sign-off has come.
type Progress struct {
	Quorum    int
	Approvals []Signoff // approving sign-offs, in signing order
	Roles     []RoleProgress
	// Rejected is the first rejecting sign-off: one rejection decides.
	Rejected *Signoff
}

// RoleProgress is one required role and who approved for it.
type RoleProgress struct {
	Name string
	By   []Person
}

// Done reports whether the sign-off decides the decision.
func (p Progress) Done() bool {
	if p.Rejected != nil {
		return true
	}
	if len(p.Approvals) < p.Quorum {
		return false
	}
	for _, r := range p.Roles {
		if len(r.By) == 0 {
			return false
		}
	}
	return true
}

// Tally computes the progress of an approval decision from its sign-offs.
func (r Rules) Tally(signoffs []Signoff) Progress {
	p := Progress{Quorum: max(r.Quorum, 1)}
	for _, role := range r.Roles {
		p.Roles = append(p.Roles, RoleProgress{Name: role.Name})
	}
	for i, s := range signoffs {
		if !s.Approved {
			if p.Rejected == nil {
				p.Rejected = &signoffs[i]
			}
			continue
		}
		p.Approvals = append(p.Approvals, s)
		for j := range p.Roles {
			if slices.Contains(s.Roles, p.Roles[j].Name) {
				p.Roles[j].By = append(p.Roles[j].By, s.By)
			}
		}
	}
	return p
}

// Settle returns the answer the sign-offs give: false (with the rejecting
// person) once anyone rejects; true (with the person whose approval completed
// it) once the quorum and every role have approved; otherwise no value.
// Comments on a are kept.
func (r Rules) Settle(a Answer) Answer {
	p := r.Tally(a.Signoffs)
	a.Value = nil
	switch {
	case p.Rejected != nil:
		a.Value, a.By, a.At = false, p.Rejected.By, p.Rejected.At
	case p.Done():
		last := p.Approvals[len(p.Approvals)-1]
		a.Value, a.By, a.At = true, last.By, last.At
	case len(a.Signoffs) > 0:
		last := a.Signoffs[len(a.Signoffs)-1]
		a.By, a.At = last.By, last.At
	}
	return a
}

// WithSignoff returns signoffs with s replacing the signer's earlier verdict
// (moved to the end: signing order is the order of the latest verdicts).
func WithSignoff(signoffs []Signoff, s Signoff) []Signoff {
	out := make([]Signoff, 0, len(signoffs)+1)
	for _, o := range signoffs {
		if o.By.ID != s.By.ID {
			out = append(out, o)
		}
	}
	return append(out, s)
}
