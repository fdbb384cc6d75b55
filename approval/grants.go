package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Standing approvals ("Approve similar for…"): a reviewer who approves an
// approval decision may also grant "approve this agent's <action key> for
// the next N minutes". This file holds every rule about them:
//
//   - who may grant (Grant): anyone who may approve the decision, narrowed
//     by STANDING_APPROVAL_GRANTERS; never an agent; for at most
//     STANDING_APPROVAL_MAX; only on a decision with an action key that
//     needs one sign-off and is neither irreversible nor critical-risk;
//   - which requests a grant resolves (grantMatcher, applied by the store
//     inside the request's create transaction, atomically with revocation
//     and expiry: store/grants.go): a request of the same agent whose every
//     decision such an approval decision is, with a live grant of its action
//     key from a granter who could decide the new request;
//   - who may revoke (RevokeGrant): the granter or an admin.

// ViaGrant is Person.Via of an answer a standing approval gave: the audit
// and the response tell it from the granter's click.
const ViaGrant = "grant"

// Rules of refused standing approvals: RuleGrant, a decision no grant may
// cover; RuleGranter, a person who may not grant or revoke it;
// RuleGrantsOff, standing approvals are off (STANDING_APPROVAL_MAX=0).
const (
	RuleGrant     = "grant"
	RuleGranter   = "granter"
	RuleGrantsOff = "grants_off"
)

// GrantStore keeps standing approvals; *store.Store implements it.
type GrantStore interface {
	CreateGrant(ctx context.Context, n store.NewGrant) (store.Grant, error)
	GetGrant(ctx context.Context, id string) (store.Grant, error)
	Grants(ctx context.Context, agent string) ([]store.Grant, error)
	RevokeGrant(ctx context.Context, id string, by aah.Person) (store.Grant, bool, error)
	MarkRevocationAudited(ctx context.Context, id string) error
}

// StandingApprovals configure grants. Without a Store, or with Max 0,
// there are none: "Approve similar…" is refused and nothing matches.
type StandingApprovals struct {
	Store GrantStore
	// Max is the longest grant (STANDING_APPROVAL_MAX).
	Max time.Duration
	// Granters narrow who may grant (STANDING_APPROVAL_GRANTERS): Slack
	// user ids and user group ids. Empty: anyone who may approve.
	Granters []string
	// LookupBudget bounds matching a new request against the standing
	// approvals (reading them, and the directory lookups of whether their
	// granters may decide it); past it the request is posted as usual.
	// Default grantLookupBudget. Tests that need every match to finish,
	// however busy the machine, give it more.
	LookupBudget time.Duration
}

// MinGrant is the shortest standing approval, as STANDING_APPROVAL_MAX's
// smallest setting.
const MinGrant = time.Minute

// grantLookupBudget is StandingApprovals.LookupBudget's default: matching
// runs under the intake's write deadline, and must leave it time to store.
const grantLookupBudget = 500 * time.Millisecond

// GrantMax is the longest standing approval a reviewer may grant; 0 when
// there are none.
func (c *Core) GrantMax() time.Duration {
	if c.grants.Store == nil {
		return 0
	}
	return c.grants.Max
}

// Grant approves decisionID of the request as by, like Answer (every
// sign-off rule applies), and grants by's standing approval of the
// request's agent's action key for d: the agent's later requests of that
// key resolve at once (grantMatcher). The grant is audited on this request
// (grant_created). A refusal changes nothing; should the grant fail once
// the approval was recorded, the error says so.
func (c *Core) Grant(ctx context.Context, requestID, decisionID string, by aah.Person, d time.Duration, comment string) (Outcome, store.Grant, error) {
	if err := c.checkGrant(d, comment); err != nil {
		return Outcome{}, store.Grant{}, err
	}
	// Whether STANDING_APPROVAL_GRANTERS lists them needs lookups, which
	// must not run inside the transaction; it is refused (and audited)
	// there, after who may decide the request: a person who may not learns
	// nothing about the granters.
	lookup, cancel := context.WithTimeout(ctx, authorizeBudget)
	mayGrant, err := c.mayGrant(lookup, by.ID)
	cancel()
	if err != nil {
		return Outcome{}, store.Grant{}, fmt.Errorf("check who may grant standing approvals: %w", err)
	}
	var agent, key string
	out, err := c.act(ctx, requestID, by, "grant", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		switch {
		case by.Agent != "":
			return nil, &Refusal{Reason: "An agent cannot grant standing approvals; a person has to.", Rule: RuleGranter}
		case !mayGrant:
			return nil, &Refusal{Reason: "Only the people this workspace lists in STANDING_APPROVAL_GRANTERS can approve similar " +
				"requests for a while. You can still approve this one.", Rule: RuleGranter}
		}
		dec, ok := req.Decision(decisionID)
		if !ok {
			return nil, &Refusal{Reason: fmt.Sprintf("This request has no decision %q.", decisionID), Field: FieldDecision, Rule: RuleInvalid}
		}
		if err := grantable(dec, g.rules); err != nil {
			return nil, err
		}
		agent, key = rec.Agent, dec.ActionKey()
		ch, err := c.answer(rec, req, g, out, cloneAnswers(rec.Answers), by, map[string]any{decisionID: true}, "", nil)
		if err != nil || ch != nil {
			return ch, err
		}
		// They approved it before: the grant is what is new.
		out.Changed = true
		return &store.Change{}, nil
	})
	if err != nil {
		return out, store.Grant{}, err
	}
	granter := aah.Person{ID: by.ID, Name: by.Name}
	gr, err := c.grants.Store.CreateGrant(ctx, store.NewGrant{Agent: agent, ActionKey: key, By: granter, Duration: d,
		FromRequest: requestID, Comment: comment})
	if err != nil {
		return out, store.Grant{}, fmt.Errorf("approved %s, but the standing approval could not be created: %w", requestID, err)
	}
	_, err = c.update(ctx, requestID, func(store.Record) (*store.Change, error) {
		return withChannel(&store.Change{Audit: []store.AuditEvent{{Event: "grant_created", Actor: by.AgentID(), Data: map[string]any{
			"grant_id": gr.ID, "decision_id": decisionID, "agent": gr.Agent, "action_key": gr.ActionKey,
			"expires_at": gr.ExpiresAt, "duration_s": int64(d / time.Second), "comment": comment,
		}}}}, by), nil
	})
	if err != nil {
		// Unaudited, it must not stand.
		_, _, _ = c.grants.Store.RevokeGrant(context.WithoutCancel(ctx), gr.ID, granter)
		return out, store.Grant{}, fmt.Errorf("approved %s, but the standing approval could not be audited (withdrawn): %w", requestID, err)
	}
	return out, gr, nil
}

// checkGrant refuses a grant that no request could allow: standing
// approvals off, a duration out of bounds, a comment too long. Who may
// grant is Grant's, inside its audited action.
func (c *Core) checkGrant(d time.Duration, comment string) error {
	max := c.GrantMax()
	switch {
	case max <= 0:
		return &Refusal{Reason: "Standing approvals are off in this workspace (STANDING_APPROVAL_MAX=0).", Rule: RuleGrantsOff}
	case d <= 0:
		return &Refusal{Reason: "Choose for how long to approve similar requests.", Field: "duration", Rule: RuleInvalid}
	case d < MinGrant:
		// Shorter would approve nothing (and the store keeps no grant under
		// a millisecond: refused here, before the approval is recorded).
		return &Refusal{Reason: fmt.Sprintf("A standing approval lasts at least %s.", MinGrant), Field: "duration", Rule: RuleInvalid}
	case d > max:
		return &Refusal{Reason: fmt.Sprintf("A standing approval lasts at most %s (STANDING_APPROVAL_MAX).", max), Field: "duration", Rule: RuleInvalid}
	case utf8.RuneCountInString(comment) > aah.MaxTextLength:
		return &Refusal{Reason: "A comment holds at most 3000 characters.", Field: "comment", Rule: RuleInvalid}
	}
	return nil
}

// mayGrant reports whether STANDING_APPROVAL_GRANTERS lets user grant.
func (c *Core) mayGrant(ctx context.Context, user string) (bool, error) {
	if len(c.grants.Granters) == 0 {
		return true, nil
	}
	return (&matcher{dir: c.dir, user: user}).any(ctx, c.grants.Granters)
}

// grantable refuses a decision a standing approval cannot cover.
func grantable(dec aah.Decision, rules aah.Rules) error {
	switch {
	case dec.Type != aah.TypeApproval:
		return &Refusal{Reason: "Only an approval decision can be approved for a while.", Rule: RuleGrant}
	case !dec.Accepts(aah.VerbApprove):
		return &Refusal{Reason: "The agent does not accept this action approved as proposed, so similar requests " +
			"cannot be approved for a while.", Rule: RuleGrant}
	case dec.ActionKey() == "":
		return &Refusal{Reason: "This decision names no kind of action (action_key or proposed_action.tool_name), " +
			"so there is nothing to approve similar requests by.", Rule: RuleGrant}
	case rules.Gated():
		return &Refusal{Reason: "This request needs several sign-offs (a quorum or required roles): each such " +
			"request needs its own, so it cannot be approved for a while.", Rule: RuleGrant}
	case dec.Irreversible():
		return &Refusal{Reason: "This action cannot be undone: each one needs its own approval.", Rule: RuleGrant}
	case dec.CriticalRisk():
		return &Refusal{Reason: "This action is assessed as critical risk: each one needs its own approval.", Rule: RuleGrant}
	}
	return nil
}

// RevokeGrant revokes a standing approval: no request created after it
// returns resolves by it. Its granter or an admin may; others get a
// *Refusal. It is audited on the request it was granted from
// (grant_revoked). Revoking a revoked grant changes nothing;
// store.ErrGrantNotFound when there is none (or it expired).
func (c *Core) RevokeGrant(ctx context.Context, grantID string, by aah.Person) (store.Grant, error) {
	if c.grants.Store == nil {
		return store.Grant{}, store.ErrGrantNotFound
	}
	g, err := c.grants.Store.GetGrant(ctx, grantID)
	if err != nil {
		return store.Grant{}, fmt.Errorf("read standing approval %s: %w", grantID, err)
	}
	if by.Agent != "" || (by.ID != g.By.ID && !slices.Contains(c.policy.Admins, by.ID)) {
		if !g.RevokedAt.IsZero() {
			return g, nil // revoked already: nothing for them to do
		}
		return store.Grant{}, &Refusal{Reason: fmt.Sprintf("Only <@%s>, who granted it, or an admin can revoke this standing approval.", g.By.ID), Rule: RuleGranter}
	}
	// Even when its record says revoked, the store tombstones its copies
	// again: a revocation that failed half way (some shards' copies still
	// live, its caller told of the error) is completed by this one, so a
	// revoke that returns never leaves a copy a create could match.
	rev, _, err := c.grants.Store.RevokeGrant(ctx, grantID, aah.Person{ID: by.ID, Name: by.Name})
	if err != nil {
		return store.Grant{}, fmt.Errorf("revoke standing approval %s: %w", grantID, err)
	}
	// Audited once: by the revocation that completes it, which is not
	// always the first (one that failed half way, or before its audit, is
	// completed by the next).
	if rev.RevocationAudited || rev.FromRequest == "" {
		return rev, nil
	}
	_, err = c.update(ctx, rev.FromRequest, func(store.Record) (*store.Change, error) {
		return withChannel(&store.Change{Audit: []store.AuditEvent{{Event: "grant_revoked", Actor: by.AgentID(), Data: map[string]any{
			"grant_id": rev.ID, "agent": rev.Agent, "action_key": rev.ActionKey, "granted_by": rev.By.ID,
		}}}}, by), nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) { // deleted by retention: nothing left to audit on
		return rev, fmt.Errorf("revoked standing approval %s, but could not audit it on %s: %w", grantID, rev.FromRequest, err)
	}
	// Unmarked, a later revoke would audit it again: a duplicate entry,
	// never a missing one.
	_ = c.grants.Store.MarkRevocationAudited(ctx, grantID)
	return rev, nil
}

// Grants lists the live standing approvals of agent, or of every agent
// when agent is "".
func (c *Core) Grants(ctx context.Context, agent string) ([]store.Grant, error) {
	if c.grants.Store == nil {
		return nil, nil
	}
	list, err := c.grants.Store.Grants(ctx, agent)
	if err != nil {
		return nil, fmt.Errorf("list standing approvals: %w", err)
	}
	return list, nil
}
