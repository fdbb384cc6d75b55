package store

import (
	"context"
	"fmt"
	"time"
)

// What the Slack Events API keeps in Redis: the ids of the events already
// delivered. Slack delivers an event again when it got no ack within 3 s, so
// each is handled once; the keys belong to no request and live outside the
// request shards.

// FirstDelivery reports whether this is the first time Slack's event eventID
// arrives (SET NX with ttl): false for Slack's retries of it.
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
