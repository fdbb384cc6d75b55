package approval

import (
	"cmp"
	"context"
	"slices"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// grantMatcher is how a new request of agent may resolve by standing
// approvals as it is created: nil when it cannot (standing approvals off,
// a decision a grant cannot cover, no live grant of its keys, or no
// granter who may decide it). Everything that needs a lookup (the live
// grants, whether each granter may decide the new request) is worked out
// here, before the create; the store then runs the returned match inside
// the create transaction against the grant copies of the request's shard,
// so a grant revoked or expired by then is not used (store/grants.go).
func (c *Core) grantMatcher(ctx context.Context, req *aah.Request, agent string) (store.GrantMatch, *transition) {
	if c.GrantMax() <= 0 || len(req.Data.Decisions) == 0 {
		return nil, nil
	}
	rules := req.Rules(c.policy.Defaults.For(agent))
	var keys []string
	for _, dec := range req.Data.Decisions {
		if grantable(dec, rules) != nil {
			return nil, nil
		}
		keys = append(keys, dec.ActionKey())
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.grants.LookupBudget, grantLookupBudget))
	defer cancel()
	candidates, err := c.grants.Store.Grants(ctx, agent)
	if err != nil {
		return nil, nil // cannot tell: posted as usual
	}
	deciders := map[string]bool{} // granter → may decide the new request now
	for _, g := range candidates {
		if !slices.Contains(keys, g.ActionKey) {
			continue
		}
		if _, seen := deciders[g.By.ID]; !seen {
			deciders[g.By.ID] = c.granterDecides(ctx, req, rules, g.By)
		}
	}
	covered := func(live []store.Grant, key string) (store.Grant, bool) {
		var best store.Grant
		found := false
		for _, g := range live {
			if g.Agent == agent && g.ActionKey == key && deciders[g.By.ID] && (!found || g.ExpiresAt.After(best.ExpiresAt)) {
				best, found = g, true
			}
		}
		return best, found
	}
	for _, k := range keys {
		if _, ok := covered(candidates, k); !ok {
			return nil, nil
		}
	}
	t := &transition{}
	return func(rec store.Record, live []store.Grant) (*store.Change, error) {
		*t = transition{}
		now := c.now().UTC()
		answers := map[string]aah.Answer{}
		ch := &store.Change{}
		var used []aah.GrantRef
		for _, dec := range req.Data.Decisions {
			g, ok := covered(live, dec.ActionKey())
			if !ok {
				return nil, nil // revoked or expired since: posted as usual
			}
			ref := g.Ref()
			a := aah.Answer{DecisionID: dec.ID, Value: true, By: viaGrant(g.By), At: now, Grant: &ref}
			answers[dec.ID] = a
			ch.Answers = append(ch.Answers, a)
			if !slices.ContainsFunc(used, func(u aah.GrantRef) bool { return u.ID == ref.ID }) {
				used = append(used, ref)
			}
		}
		by := viaGrant(used[0].By)
		ch = c.closeWith(rec, req, answers, by, "", ch, aah.OutcomeResolved, "")
		for i := range ch.Audit {
			if ch.Audit[i].Event == "resolved" {
				ch.Audit[i].Data["via"], ch.Audit[i].Data["grant"] = ViaGrant, used[0]
				if len(used) > 1 {
					ch.Audit[i].Data["grants"] = used
				}
			}
		}
		*t = transitionOf(rec, ch)
		t.answered = false // not a reviewer's answer: first-answer times are people's
		return ch, nil
	}, t
}

// viaGrant is the granter as the answers a grant gives record them.
func viaGrant(p aah.Person) aah.Person { return aah.Person{ID: p.ID, Name: p.Name, Via: ViaGrant} }

// granterDecides reports whether the granter could decide req themselves
// now: named by it (or by the workspace for a request naming nobody), or an
// admin; not its requester unless self-approval is allowed; and still
// allowed to grant. A failed lookup counts as no.
func (c *Core) granterDecides(ctx context.Context, req *aah.Request, rules aah.Rules, granter aah.Person) bool {
	auth, err := c.authorize(ctx, req, granter)
	if err != nil || !auth.allowed(nil, nil, granter.ID) {
		return false
	}
	if (grant{auth: auth, rules: rules}).mayDecide() != nil {
		return false
	}
	ok, err := c.mayGrant(ctx, granter.ID)
	return err == nil && ok
}
