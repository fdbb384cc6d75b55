package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// eventDedupTTL is how long an event id is remembered; Slack retries an
// event three times within about an hour and a half at most, the last retry
// 5 minutes after the first.
const eventDedupTTL = time.Hour

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
	ctx, cancel := s.storeDeadline(ctx) // unacked in time, Slack retries it anyway
	defer cancel()
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
