package slackout

import (
	"slices"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// grantRefs are the standing approvals that resolved rec at once (in
// decision order, each once), or nil when people resolved it: such a
// request is posted as a compact notice (blocks.GrantNotice), not as a
// request to review.
func grantRefs(rec store.Record, req *aah.Request) []aah.GrantRef {
	if rec.Status != aah.StatusResolved || len(req.Data.Decisions) == 0 {
		return nil
	}
	var out []aah.GrantRef
	for _, d := range req.Data.Decisions {
		a := rec.Answers[d.ID]
		g := a.Grant
		if g == nil || a.By.Via != approval.ViaGrant {
			return nil
		}
		if !slices.ContainsFunc(out, func(r aah.GrantRef) bool { return r.ID == g.ID }) {
			out = append(out, *g)
		}
	}
	return out
}
