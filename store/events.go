package store

import (
	"context"
	"fmt"
	"time"
)

// What Slack's inbound requests leave in Redis: the ids of the events
// already delivered, and the requests already applied. The keys belong to no
// request and live outside the request shards.

// FirstDelivery reports whether this is the first time Slack's event eventID
// arrives (SET NX with ttl): false for Slack's retries of it. Slack delivers
// an event again when it got no ack within 3 s, so each is handled once.
func (s *Store) FirstDelivery(ctx context.Context, eventID string, ttl time.Duration) (bool, error) {
	if eventID == "" {
		return true, nil
	}
	ok, err := s.rdb.SetNX(ctx, s.keys.slackEvent(eventID), 1, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("store: note event %s: %w", eventID, err)
	}
	return ok, nil
}

// FirstSlackRequest reports whether the Slack request named id (an
// interaction or a slash command: the digest of a signed HTTP request, or a
// Socket Mode envelope id) is applied for the first time (SET NX with ttl):
// false for a replay or a redelivery of one already applied.
func (s *Store) FirstSlackRequest(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.keys.slackRequest(id), 1, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("store: note Slack request %s: %w", id, err)
	}
	return ok, nil
}
