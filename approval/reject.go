package approval

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Rejection is why a person rejects: Picked, one of the decision's
// reject_reasons (extensions.decisions), and Comment, their own words (their
// comment on each decision rejected, as a required reason is today).
type Rejection struct {
	Picked  string
	Comment string
}

// Reject rejects approval decisions with the person's reason, in one
// update: the reason becomes their comment on each decision (and their
// sign-off's reason), so it can neither be lost to a concurrent change nor
// outlive a refused rejection.
func (c *Core) Reject(ctx context.Context, requestID string, decisionIDs []string, by aah.Person, reason string) (Outcome, error) {
	if err := needsWords(reason); err != nil {
		return Outcome{}, err
	}
	return c.RejectWith(ctx, requestID, decisionIDs, by, Rejection{Comment: reason})
}

// RejectAll rejects every approval decision of the request with the
// person's reason, like Reject.
func (c *Core) RejectAll(ctx context.Context, requestID string, by aah.Person, reason string) (Outcome, error) {
	if err := needsWords(reason); err != nil {
		return Outcome{}, err
	}
	return c.RejectWith(ctx, requestID, nil, by, Rejection{Comment: reason})
}

func needsWords(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return &Refusal{Reason: "Say why you reject it.", Field: "comment", Rule: RuleRequireReason}
	}
	return nil
}

// RejectWith rejects the approval decisions named (every one when
// decisionIDs is nil: "Reject all") with the person's reasons, in one
// update. The picked reason must be one the agent offers on each decision
// rejected (Answer.RejectReason, audited as "reject_reason"); the comment is
// their own words, as Reject records them. Either satisfies a request that
// requires a reason for every rejection; otherwise both are optional.
func (c *Core) RejectWith(ctx context.Context, requestID string, decisionIDs []string, by aah.Person, r Rejection) (Outcome, error) {
	r.Picked, r.Comment = strings.TrimSpace(r.Picked), strings.TrimSpace(r.Comment)
	if utf8.RuneCountInString(r.Comment) > aah.MaxTextLength {
		return Outcome{}, &Refusal{Reason: "A reason holds at most 3000 characters.", Field: "comment", Rule: RuleInvalid}
	}
	return c.act(ctx, requestID, by, "answer", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		ids := decisionIDs
		if ids == nil {
			ids = approvalDecisions(req)
		}
		values := map[string]any{}
		for _, id := range ids {
			values[id] = false
		}
		return c.answerWith(rec, req, g, out, cloneAnswers(rec.Answers), by, values, answerOpts{reason: r.Comment, picked: r.Picked}, nil)
	})
}

// offersReason reports whether the decision offers picked among its
// reject_reasons.
func offersReason(dec aah.Decision, picked string) bool {
	return dec.Review != nil && slices.Contains(dec.Review.RejectReasons, picked)
}
