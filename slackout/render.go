package slackout

import (
	"context"
	"log/slog"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// renderMessage renders a request's message as its record stands, for the
// post, its updates and its copies alike: with "Approve similar…" when
// standing approvals may be granted, and the request it follows up when it
// names one of its agent's. A failed look-up of that request is logged and
// the message goes out without the line: lineage is a courtesy, the
// request's message is not.
func renderMessage(ctx context.Context, requests approval.RequestLoader, log *slog.Logger, rec store.Record, req *aah.Request,
	defaults aah.Defaults, grantMax time.Duration) blocks.Message {
	if refs := grantRefs(rec, req); refs != nil {
		// Resolved at once by a standing approval: a notice, not a request.
		return blocks.GrantNotice(req.Artifact.Title, rec.Agent, refs)
	}
	parent, err := approval.FollowUpOf(ctx, requests, rec, req)
	if err != nil {
		log.WarnContext(ctx, "could not look up the request this one follows up; rendering without the line",
			"request_id", rec.ID, "err", err)
	}
	return blocks.Render(req, approval.View(rec, defaults, approval.WithGrantMax(grantMax), approval.WithFollowUp(parent)))
}

// render is renderMessage for the reminder and escalation jobs.
func (h timerDeps) render(ctx context.Context, rec store.Record, req *aah.Request) blocks.Message {
	return renderMessage(ctx, h.store, h.log, rec, req, h.defaults, h.grantMax)
}
