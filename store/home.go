package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the Slack Events API and the App Home tab keep in Redis. None of it
// belongs to a request, so these keys live outside the request shards.

// answeredCap bounds a user's list of recently answered requests.
const answeredCap = 50

// answeredTTL is how long an idle user's list of answered requests is kept.
const answeredTTL = 30 * 24 * time.Hour

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

// NoteHomeOpened remembers for ttl that user opened approvalbot's Home tab,
// so changes re-publish it.
func (s *Store) NoteHomeOpened(ctx context.Context, user string, ttl time.Duration) error {
	if err := s.rdb.Set(ctx, s.keys.home(user), 1, ttl).Err(); err != nil {
		return fmt.Errorf("store: note home of %s: %w", user, err)
	}
	return nil
}

// HomeOpened returns those of users who opened the Home tab within the
// ttl given to NoteHomeOpened, in the order given.
func (s *Store) HomeOpened(ctx context.Context, users []string) ([]string, error) {
	if len(users) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(users))
	for i, u := range users {
		cmds[i] = pipe.Exists(ctx, s.keys.home(u))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: read home tabs: %w", err)
	}
	var out []string
	for i, c := range cmds {
		if c.Val() > 0 {
			out = append(out, users[i])
		}
	}
	return out, nil
}

// NoteAnswered puts requestID first in user's recently answered requests.
// It is a display aid for the Home tab, written after the answer itself is
// recorded, so it is best effort.
func (s *Store) NoteAnswered(ctx context.Context, user, requestID string) error {
	key := s.keys.answered(user)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LRem(ctx, key, 0, requestID)
		p.LPush(ctx, key, requestID)
		p.LTrim(ctx, key, 0, answeredCap-1)
		p.Expire(ctx, key, answeredTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: note answer of %s: %w", user, err)
	}
	return nil
}

// RecentlyAnswered returns up to n requests user answered lately, newest
// first; requests that no longer exist are left out.
func (s *Store) RecentlyAnswered(ctx context.Context, user string, n int) ([]Record, error) {
	ids, err := s.rdb.LRange(ctx, s.keys.answered(user), 0, int64(min(n, answeredCap))-1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: read answers of %s: %w", user, err)
	}
	out := make([]Record, 0, len(ids))
	for _, id := range ids {
		rec, err := s.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
