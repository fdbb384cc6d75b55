package handlers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// The App Home tab: publishing it, and refreshing the tabs a reviewer's
// action changed. Opening the tab arrives as an event (events.go); the
// coalesced per-user publishes are jobs of the outbox (slackout/home.go),
// which call PublishHome.

// HomeStore keeps what the Events API and the App Home tab need;
// *store.Store implements it.
type HomeStore interface {
	FirstDelivery(ctx context.Context, eventID string, ttl time.Duration) (bool, error)
	NoteHomeOpened(ctx context.Context, user string, ttl time.Duration) error
	HomeOpened(ctx context.Context, users []string) ([]string, error)
	NoteAnswered(ctx context.Context, user, requestID string) error
	RecentlyAnswered(ctx context.Context, user string, n int) ([]store.Record, error)
	ScheduleHomePublish(ctx context.Context, users []string, window time.Duration) error
	MethodHeld(ctx context.Context, method string) (time.Duration, error)
}

// homeTTL is how long after opening the Home tab a user's tab is
// re-published when their requests change.
const homeTTL = 7 * 24 * time.Hour

// PublishHome renders user's Home tab from the current state and publishes
// it. The coalesced per-user publish job (slackout) calls it, and handles the
// error it returns (a 429 holds views.publish for every process).
func (s *Slack) PublishHome(ctx context.Context, user string) error {
	now := s.opts.Now()
	page, err := s.opts.Lists.ListOpen(ctx, store.OpenQuery{Kind: store.OpenReviewer, Reviewer: user,
		Unnamed: s.defaultReviewer(ctx, user), Limit: blocks.MaxHomeWaiting, Now: now})
	if err != nil {
		return fmt.Errorf("list the Home tab's requests of %s: %w", user, err)
	}
	answered, err := s.opts.Home.RecentlyAnswered(ctx, user, blocks.MaxHomeAnswered)
	if err != nil {
		s.log.WarnContext(ctx, "could not list a user's answered requests", "user", user, "err", err)
	}
	view := blocks.HomeView(blocks.Home{Waiting: s.listItems(ctx, page.Items), More: page.NextCursor != "",
		Answered: s.listItems(ctx, answered), Command: s.opts.Command, Now: now})
	if _, err := s.opts.Slack.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view}); err != nil {
		return fmt.Errorf("publish the Home tab of %s: %w", user, err)
	}
	return nil
}

// refreshHomes runs after a reviewer's action changed a request: it notes
// the request among the reviewer's answered ones and re-publishes the
// reviewer's own Home tab; the tabs of the request's other reviewers who
// opened theirs lately join the coalesced per-user publishes (at most one a
// user per store.HomePublishWindow), so a reviewer clicking through many
// requests cannot spend Slack's views.publish budget on everyone else's tab.
// Best effort, off the request path.
func (s *Slack) refreshHomes(action string, by aah.Person, rec store.Record) {
	if s.opts.Home == nil || s.opts.Lists == nil || by.ID == "" {
		return
	}
	s.opts.Async.Go("views.publish", func(ctx context.Context) {
		if action != blocks.ActionComment {
			if err := s.opts.Home.NoteAnswered(ctx, by.ID, rec.ID); err != nil {
				s.log.WarnContext(ctx, "could not note an answered request", "user", by.ID, "err", err)
			}
		}
		if opened, err := s.opts.Home.HomeOpened(ctx, []string{by.ID}); err != nil {
			s.log.WarnContext(ctx, "could not read who opened the Home tab", "err", err)
		} else if len(opened) > 0 {
			s.publishOwnHome(ctx, by.ID)
		}
		audience := rec.HomeAudience()
		if d, ok := s.opts.Decisions.(DefaultReviewers); ok {
			var err error
			if audience, err = d.HomeAudience(ctx, rec); err != nil {
				s.log.WarnContext(ctx, "could not list the default reviewers, whose Home tabs show this request",
					"request_id", rec.ID, "err", err)
			}
		}
		others := slices.DeleteFunc(audience, func(u string) bool { return u == by.ID })
		opened, err := s.opts.Home.HomeOpened(ctx, slices.Compact(slices.Sorted(slices.Values(others))))
		if err == nil {
			err = s.opts.Home.ScheduleHomePublish(ctx, opened, store.HomePublishWindow)
		}
		if err != nil {
			s.log.WarnContext(ctx, "could not schedule Home tab refreshes", "request_id", rec.ID, "err", err)
		}
	})
}

// Decided refreshes the Home tabs after a decision recorded outside Slack
// (the decision API), as after a click: the person's own tab at once (and
// the request among those they answered, unless they only commented), the
// other reviewers' through the coalesced publishes. The message itself
// follows through the sync job the change scheduled.
func (s *Slack) Decided(action string, by aah.Person, rec store.Record) {
	if action != blocks.ActionComment {
		action = "api_" + action
	}
	s.refreshHomes(action, by, rec)
}

// publishOwnHome publishes the tab of the person who just acted or opened
// it, at once, unless views.publish is held after a 429 (Slack's limit is
// per app): then, or when the publish fails, it joins the coalesced
// publishes, which wait out the hold.
func (s *Slack) publishOwnHome(ctx context.Context, user string) {
	held, err := s.opts.Home.MethodHeld(ctx, store.ViewsPublish)
	if err == nil && held == 0 {
		if err = s.PublishHome(ctx, user); err == nil {
			return
		}
	}
	s.log.InfoContext(ctx, "Home tab publish deferred to the coalesced job", "user", user, "held", held, "err", err)
	if err := s.opts.Home.ScheduleHomePublish(ctx, []string{user}, store.HomePublishWindow); err != nil {
		s.log.WarnContext(ctx, "could not schedule a Home tab publish", "user", user, "err", err)
	}
}

// listItems parses stored requests for a listing (the Home tab and
// /approvals), leaving out any that no longer parse.
func (s *Slack) listItems(ctx context.Context, recs []store.Record) []blocks.ListItem {
	out := make([]blocks.ListItem, 0, len(recs))
	for _, rec := range recs {
		req, err := rec.Request()
		if err != nil {
			s.log.ErrorContext(ctx, "stored request no longer parses", "request_id", rec.ID, "err", err)
			continue
		}
		out = append(out, approval.ListItem(rec, req, s.opts.Defaults))
	}
	return out
}

// DefaultReviewers tells whether a user is one of the workspace's default
// reviewers, who decide the requests that name nobody, and who has a
// request waiting, them included; *approval.Core implements it (as
// Options.Decisions).
type DefaultReviewers interface {
	DefaultReviewer(ctx context.Context, user string) (bool, error)
	HomeAudience(ctx context.Context, rec store.Record) ([]string, error)
}

// defaultReviewer reports whether user's lists ("/approvals mine", the
// Home tab) include the open requests that name nobody: when Decisions
// can tell, and user is a default reviewer. A lookup that fails leaves
// them out, said in the log: the list shows what names the user.
func (s *Slack) defaultReviewer(ctx context.Context, user string) bool {
	d, ok := s.opts.Decisions.(DefaultReviewers)
	if !ok {
		return false
	}
	yes, err := d.DefaultReviewer(ctx, user)
	if err != nil {
		s.log.WarnContext(ctx, "could not tell whether a user is a default reviewer; their list leaves out the requests naming nobody",
			"user", user, "err", err)
	}
	return yes
}
