package bot

import (
	"context"
	"log/slog"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// deadlineJob runs a request's expire timer: it applies the request's
// on_deadline action (see approval.Core.Deadline). The decider does nothing
// to a request that is no longer open, so a late or repeated run is harmless.
type deadlineJob struct {
	decider *approval.Core
	log     *slog.Logger
}

func (h deadlineJob) Handle(ctx context.Context, j store.Job) error {
	out, err := h.decider.Deadline(ctx, j.RequestID)
	if err != nil {
		return err
	}
	if out.Changed {
		h.log.InfoContext(ctx, "deadline passed", "request_id", j.RequestID, "status", out.Record.Status, "resolved", out.Resolved)
	}
	return nil
}

func (h deadlineJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.ErrorContext(ctx, "could not apply a deadline; the request stays open", "request_id", j.RequestID, "err", err)
}
