package approval

import (
	"context"
	"fmt"
	"slices"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// CheckVerb reports whether by may use verb on the request now, before its
// modal opens (decisionID names the decision for modify): the request must
// accept the verb, a modified decision must not need several sign-offs,
// and the person must be allowed to decide. A *Refusal, audited like a
// refused action, says why not.
func (c *Core) CheckVerb(ctx context.Context, requestID, decisionID string, by aah.Person, verb aah.Verb) error {
	_, err := c.act(ctx, requestID, by, string(verb), func(_ store.Record, req *aah.Request, g grant, _ *Outcome) (*store.Change, error) {
		switch {
		case verb == aah.VerbModify:
			dec, ok := req.Decision(decisionID)
			if !ok {
				return nil, &Refusal{Reason: fmt.Sprintf("This request has no decision %q.", decisionID), Field: FieldDecision, Rule: RuleInvalid}
			}
			if err := modifiable(dec, g); err != nil {
				return nil, err
			}
		case slices.Contains(aah.RequestVerbs, verb):
			if err := offered(req, verb); err != nil {
				return nil, err
			}
		default:
			return nil, &Refusal{Reason: fmt.Sprintf("%q is not a verb this request can take.", verb), Rule: RuleInvalid}
		}
		return nil, g.mayDecide()
	})
	return err
}
