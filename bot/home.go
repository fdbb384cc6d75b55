package bot

import (
	"context"
	"errors"
	"log/slog"

	"github.com/approvalbot/approvalbot/store"
)

// HomeRefresher re-publishes the App Home tabs that show a request;
// *handlers.Slack implements it.
type HomeRefresher interface {
	RefreshHomes(ctx context.Context, rec store.Record, skip string) error
}

// homeJob runs "home:<id>" jobs. The store schedules one in the same
// transaction as every change that moves a request in or out of someone's
// Home tab (store.Options.HomeJobs): it is created or first posted, filed
// under new reviewers, escalated, expired, withdrawn or resolved. The job
// re-publishes the tabs of the request's reviewers and escalation targets
// who opened theirs lately, so the tab follows without their reopening it.
// Being a job, it runs on whichever process is free, after intake or the
// timer has answered, and is retried if Redis fails it; repeated changes
// before it runs coalesce into one run (one job id per request).
type homeJob struct {
	store interface {
		Get(ctx context.Context, id string) (store.Record, error)
	}
	homes HomeRefresher
	log   *slog.Logger
}

func (h homeJob) Handle(ctx context.Context, j store.Job) error {
	rec, err := h.store.Get(ctx, j.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// The person whose click resolved the request had their tab refreshed
	// by that click's handler, after it noted the answer among theirs;
	// publishing it here too could overwrite it with an older read.
	return h.homes.RefreshHomes(ctx, rec, rec.ResolvedBy.ID)
}

func (h homeJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.WarnContext(ctx, "gave up refreshing Home tabs; they catch up on the next change or when opened",
		"request_id", j.RequestID, "err", err)
}
