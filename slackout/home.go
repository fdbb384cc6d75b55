package slackout

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
)

// HomePublisher publishes one user's App Home tab from the current state;
// *handlers.Slack implements it.
type HomePublisher interface {
	PublishHome(ctx context.Context, user string) error
}

// homePublishWindow and viewsPublish: see store.HomePublishWindow.
const (
	homePublishWindow = store.HomePublishWindow
	viewsPublish      = store.ViewsPublish
)

// homeJob runs "home:<id>" jobs. The store schedules one in the same
// transaction as every change that moves a request in or out of someone's
// Home tab (store.Options.HomeJobs): it is created or first posted, filed
// under new reviewers, escalated, expired, withdrawn or resolved. The job
// does not publish: it schedules a coalesced publish (homePublishJob) for
// each of the request's reviewers and escalation targets who opened their
// tab lately, so a thousand requests naming one reviewer cost her a
// publish per window, not two thousand.
type homeJob struct {
	store Store
	// audience is who has a request waiting, the default reviewers
	// among them for a request naming nobody; nil: Record.HomeAudience.
	audience homeAudience
	window   time.Duration // default homePublishWindow
	log      *slog.Logger
}

// homeAudience is who has a request waiting for them; *approval.Core
// implements it.
type homeAudience interface {
	HomeAudience(ctx context.Context, rec store.Record) ([]string, error)
}

func (h homeJob) Handle(ctx context.Context, j store.Job) error {
	rec, err := h.store.GetState(ctx, j.RequestID) // who it concerns, not what it asks
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// The person whose click resolved the request had their tab refreshed
	// by that click's handler, after it noted the answer among theirs.
	users := rec.HomeAudience()
	if h.audience != nil {
		if users, err = h.audience.HomeAudience(ctx, rec); err != nil {
			// Their tabs catch up on the next change, or when opened.
			h.log.WarnContext(ctx, "could not list the default reviewers, whose Home tabs show this request",
				"request_id", rec.ID, "err", err)
		}
	}
	users = slices.DeleteFunc(users, func(u string) bool { return u == rec.ResolvedBy.ID })
	opened, err := h.store.HomeOpened(ctx, slices.Compact(slices.Sorted(slices.Values(users))))
	if err != nil {
		return err
	}
	return h.store.ScheduleHomePublish(ctx, opened, cmp.Or(h.window, homePublishWindow))
}

func (h homeJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.WarnContext(ctx, "gave up refreshing Home tabs; they catch up on the next change or when opened",
		"request_id", j.RequestID, "err", err)
}

// homePublishJob runs "homepub:<user id>" jobs: it publishes the user's
// Home tab as it is now. A 429 holds views.publish for every process for
// its Retry-After (Slack's limit is per app), and the job runs again then.
type homePublishJob struct {
	store         Store
	homes         HomePublisher
	rateLimitHold time.Duration
	log           *slog.Logger
}

func (h homePublishJob) Handle(ctx context.Context, j store.Job) error {
	user := j.RequestID
	held, err := h.store.MethodHeld(ctx, viewsPublish)
	if err != nil {
		return err
	}
	if held > 0 {
		return &jobs.RetryError{After: held, Free: true, Reason: "views.publish is held after a 429"}
	}
	err = h.homes.PublishHome(ctx, user)
	if err == nil {
		return nil
	}
	code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
	var rate *jobs.RetryError
	switch {
	case errors.As(retry, &rate):
		if herr := h.store.HoldMethod(ctx, viewsPublish, rate.After); herr != nil {
			h.log.WarnContext(ctx, "could not hold views.publish after a 429", "err", herr)
		}
		h.log.WarnContext(ctx, "Slack rate limit on views.publish; retrying later", "user", user, "retry_after", rate.After)
		return retry
	case code != "":
		// user_not_found, not_enabled (no Home tab) and the like: the next
		// change, or opening the tab, tries again.
		h.log.WarnContext(ctx, "Slack refused a Home tab", "user", user, "slack_error", code)
		return nil
	}
	return err
}

func (h homePublishJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.WarnContext(ctx, "gave up publishing a Home tab; it catches up on the next change or when opened",
		"user", j.RequestID, "err", err)
}
