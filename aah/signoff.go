package aah

import (
	"slices"
	"strconv"
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

// Defaults are the workspace-wide rules (configuration). They are a floor:
// a request's extensions.slack fields may tighten them (a higher quorum, a
// required reason, no self-approval), never loosen them, unless the operator
// lets the request's agent do so (OverrideAgents; see For). Otherwise the
// agent being supervised could choose its own supervision.
type Defaults struct {
	Quorum            int  // approvals each approval decision needs; 0 means 1
	AllowSelfApproval bool // may the requester decide their own request
	RequireReason     bool // must a rejection carry a reason
	// OverrideAgents are the agents (intake token names) whose requests may
	// set looser rules than these.
	OverrideAgents []string
	// MayLoosen says the request at hand comes from one of OverrideAgents:
	// its fields then replace these rules. Set it with For.
	MayLoosen bool
}

// For returns the defaults that apply to a request of agent: MayLoosen is
// set when the operator granted the agent the right to loosen them.
func (d Defaults) For(agent string) Defaults {
	d.MayLoosen = agent != "" && slices.Contains(d.OverrideAgents, agent)
	return d
}

// Rules are the effective sign-off rules of a request: its extensions.slack
// fields over the workspace defaults.
type Rules struct {
	Quorum            int
	Roles             []Role
	AllowSelfApproval bool
	RequireReason     bool
}

// Rules returns the request's effective sign-off rules: the workspace's,
// tightened by the request's fields (or replaced by them when def.MayLoosen).
// Evaluated against the configuration in force when the request is decided,
// so a request accepted under looser settings gains no authority from them.
func (r *Request) Rules(def Defaults) Rules {
	out := Rules{Quorum: max(def.Quorum, 1), Roles: r.Slack.RequiredRoles,
		AllowSelfApproval: def.AllowSelfApproval, RequireReason: def.RequireReason}
	s := r.Slack
	if def.MayLoosen {
		if s.Quorum > 0 {
			out.Quorum = s.Quorum
		}
		if s.AllowSelfApproval != nil {
			out.AllowSelfApproval = *s.AllowSelfApproval
		}
		if s.RequireReason != nil {
			out.RequireReason = *s.RequireReason
		}
		return out
	}
	out.Quorum = max(out.Quorum, s.Quorum)
	if s.AllowSelfApproval != nil {
		out.AllowSelfApproval = out.AllowSelfApproval && *s.AllowSelfApproval
	}
	if s.RequireReason != nil {
		out.RequireReason = out.RequireReason || *s.RequireReason
	}
	return out
}

// Loosening is one sign-off rule a request sets looser than the workspace's.
type Loosening struct {
	Field string // e.g. "extensions.slack.quorum"
	Asked string // what the request says, e.g. "1"
	// Floor is what the workspace requires, e.g. "2".
	Floor string
}

// Loosenings lists the sign-off rules the request sets looser than def;
// none when def.MayLoosen. Rules(def) ignores them; intake refuses them, so
// an agent learns at once that it cannot lower the bar.
func (r *Request) Loosenings(def Defaults) []Loosening {
	if def.MayLoosen {
		return nil
	}
	var out []Loosening
	s := r.Slack
	if s.Quorum > 0 && s.Quorum < max(def.Quorum, 1) {
		out = append(out, Loosening{Field: "extensions.slack.quorum", Asked: strconv.Itoa(s.Quorum), Floor: strconv.Itoa(def.Quorum)})
	}
	if s.AllowSelfApproval != nil && *s.AllowSelfApproval && !def.AllowSelfApproval {
		out = append(out, Loosening{Field: "extensions.slack.allow_self_approval", Asked: "true", Floor: "false"})
	}
	if s.RequireReason != nil && !*s.RequireReason && def.RequireReason {
		out = append(out, Loosening{Field: "extensions.slack.require_reason", Asked: "false", Floor: "true"})
	}
	return out
}

// NamesDeciders reports whether the request names who may decide it
// (reviewers, reviewer_groups or required_roles). One that does not is
// decided by the workspace's default reviewers, never by anyone.
func (r *Request) NamesDeciders() bool {
	return len(r.Slack.Reviewers) > 0 || len(r.Slack.ReviewerGroups) > 0 || len(r.Slack.RequiredRoles) > 0
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
