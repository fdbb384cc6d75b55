package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

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

const (
	// eventDedupTTL is how long an event id is remembered; Slack retries
	// an event three times within about an hour and a half at most, the
	// last retry 5 minutes after the first.
	eventDedupTTL = time.Hour
	// homeTTL is how long after opening the Home tab a user's tab is
	// re-published when their requests change.
	homeTTL = 7 * 24 * time.Hour
)

// EventRequest is the part of an Events API request approvalbot reads: the
// body Slack POSTs to the events endpoint, or a Socket Mode events_api
// envelope's payload.
type EventRequest struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	EventID   string `json:"event_id"`
	Event     struct {
		Type string `json:"type"`
		User string `json:"user"`
		Tab  string `json:"tab"`
	} `json:"event"`
	// RetryNum and RetryReason say Slack is delivering the event again
	// (headers X-Slack-Retry-*, or the envelope's retry_attempt); logged only.
	RetryNum    string `json:"-"`
	RetryReason string `json:"-"`
}

// events is POST /slack/events: Slack's Events API.
func (s *Slack) events(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, ok := s.verifiedBody(w, r)
	if !ok {
		return
	}
	var ev EventRequest
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "body is not an Events API request", http.StatusBadRequest)
		return
	}
	ev.RetryNum, ev.RetryReason = r.Header.Get("X-Slack-Retry-Num"), r.Header.Get("X-Slack-Retry-Reason")
	defer func() { s.metrics.ack.WithLabelValues("event").Observe(time.Since(start).Seconds()) }()
	payload, err := s.Event(r.Context(), ev)
	if err != nil {
		// Not acked: Slack retries it.
		http.Error(w, "event not recorded", http.StatusServiceUnavailable)
		return
	}
	writeAck(w, payload)
}

// Event handles one Events API request, whichever transport brought it, and
// returns what its acknowledgement carries (the url_verification challenge,
// else nil). Events are de-duplicated by event id: Slack delivers one again
// when it got no ack within 3 s. Their work runs on the Async pool. An error
// means the event could not be de-duplicated: it must not be acked, so that
// Slack delivers it again.
func (s *Slack) Event(ctx context.Context, ev EventRequest) (any, error) {
	switch ev.Type {
	case "url_verification":
		return map[string]string{"challenge": ev.Challenge}, nil
	case "event_callback":
		if s.opts.Home == nil || s.opts.Lists == nil {
			return nil, nil // no App Home without its store
		}
	default:
		return nil, nil // app_rate_limited and others need no answer
	}
	first, err := s.opts.Home.FirstDelivery(ctx, ev.EventID, eventDedupTTL)
	if err != nil {
		s.log.ErrorContext(ctx, "could not de-duplicate a Slack event", "event_id", ev.EventID, "err", err)
		return nil, fmt.Errorf("de-duplicate event %s: %w", ev.EventID, err)
	}
	if !first {
		s.log.DebugContext(ctx, "Slack event retry ignored", "event_id", ev.EventID,
			"retry", ev.RetryNum, "reason", ev.RetryReason)
		return nil, nil
	}
	switch {
	case ev.Event.Type == "app_home_opened" && (ev.Event.Tab == "home" || ev.Event.Tab == "") && ev.Event.User != "":
		user := ev.Event.User
		s.opts.Async.Go("views.publish", func(ctx context.Context) {
			if err := s.opts.Home.NoteHomeOpened(ctx, user, homeTTL); err != nil {
				s.log.WarnContext(ctx, "could not note an opened Home tab", "user", user, "err", err)
			}
			s.publishOwnHome(ctx, user)
		})
	}
	return nil, nil
}

// PublishHome renders user's Home tab from the current state and publishes
// it. The bot's coalesced per-user publish job calls it, and handles the
// error it returns (a 429 holds views.publish for every process).
func (s *Slack) PublishHome(ctx context.Context, user string) error {
	now := s.opts.Now()
	page, err := s.opts.Lists.ListOpen(ctx, store.OpenQuery{Kind: store.OpenReviewer, Reviewer: user,
		Limit: blocks.MaxHomeWaiting, Now: now})
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
		others := slices.DeleteFunc(rec.HomeAudience(), func(u string) bool { return u == by.ID })
		opened, err := s.opts.Home.HomeOpened(ctx, slices.Compact(slices.Sorted(slices.Values(others))))
		if err == nil {
			err = s.opts.Home.ScheduleHomePublish(ctx, opened, store.HomePublishWindow)
		}
		if err != nil {
			s.log.WarnContext(ctx, "could not schedule Home tab refreshes", "request_id", rec.ID, "err", err)
		}
	})
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

// listItems parses stored requests for a listing, leaving out any that no
// longer parse.
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
