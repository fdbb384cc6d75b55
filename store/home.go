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

// JobHomePublish publishes one user's Home tab: "homepub:<user id>", in the
// user's shard. Every change that touches the user's tab schedules it (see
// ScheduleHomePublish); it renders the state as it is when it runs.
const JobHomePublish = "homepub"

// scheduleHomePublish schedules a user's Home publish, coalesced: nothing
// when one is due already (it will show this change too); else now, or one
// window after the previous one was scheduled, whichever is later.
//
//	KEYS[1] -> <p>:{sNN}:jobs:due (the user's shard)
//	KEYS[2] -> <p>:{sNN}:homepub:<user id>
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> window, ms
//	ARGV[3] -> job id "homepub:<user id>"
//
// Returns the publish's due time, Unix ms.
var scheduleHomePublish = redis.NewScript(`
local due = redis.call('ZSCORE', KEYS[1], ARGV[3])
if due then return tonumber(due) end
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local at, last = now, redis.call('GET', KEYS[2])
if last and tonumber(last) + window > at then at = tonumber(last) + window end
redis.call('ZADD', KEYS[1], at, ARGV[3])
redis.call('SET', KEYS[2], at, 'PX', at - now + window)
return at
`)

// HomePublishWindow is the least time between two publishes of one user's
// Home tab, across every process: Slack allows about 100 views.publish a
// minute for the whole app, and a burst of requests naming one reviewer (or
// one reviewer's burst of clicks) must not spend them all on one tab.
const HomePublishWindow = 5 * time.Second

// ViewsPublish is the Slack method Home tabs are published with, and held
// on a 429 (HoldMethod).
const ViewsPublish = "views.publish"

// ScheduleHomePublish schedules a publish of each user's Home tab, at most
// one per window per user across every process: a change within the window
// of the last publish rides on the next one, which renders the latest state.
func (s *Store) ScheduleHomePublish(ctx context.Context, users []string, window time.Duration) error {
	for _, u := range users {
		keys := []string{s.keys.jobs(shardOf(u)).due, s.keys.homePublish(u)}
		if err := scheduleHomePublish.Run(ctx, s.rdb, keys, s.nowMs(), max(window.Milliseconds(), 1), jobID(JobHomePublish, u)).Err(); err != nil {
			return fmt.Errorf("store: schedule the Home publish of %s: %w", u, err)
		}
	}
	return nil
}

// holdMethod holds a Slack method until ARGV[1] + ARGV[2] ms, never
// shortening a hold. The value is the hold's end (so it holds even where
// TTLs do not count down); the TTL only cleans up.
//
//	KEYS[1] -> <p>:hold:<Slack method>
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> hold, ms
var holdMethod = redis.NewScript(`
local untilMs = tonumber(ARGV[1]) + tonumber(ARGV[2])
if tonumber(redis.call('GET', KEYS[1]) or '0') < untilMs then
  redis.call('SET', KEYS[1], untilMs, 'PX', ARGV[2])
end
return 0
`)

// HoldMethod stops every process calling a Slack method for at least d
// (Slack answered 429 for it, and its limits count per app).
func (s *Store) HoldMethod(ctx context.Context, method string, d time.Duration) error {
	if err := holdMethod.Run(ctx, s.rdb, []string{s.keys.hold(method)}, s.nowMs(), max(d.Milliseconds(), 1)).Err(); err != nil {
		return fmt.Errorf("store: hold %s: %w", method, err)
	}
	return nil
}

// MethodHeld returns how long a Slack method is still held, 0 when it is not.
func (s *Store) MethodHeld(ctx context.Context, method string) (time.Duration, error) {
	untilMs, err := s.rdb.Get(ctx, s.keys.hold(method)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("store: read the hold of %s: %w", method, err)
	}
	return max(time.Duration(untilMs-s.nowMs())*time.Millisecond, 0), nil
}
