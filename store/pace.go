package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pacing of Slack calls across every bot process: posts to one channel are
// spaced (Slack allows about one message per second per channel), and a 429
// holds a channel, or a method whose limit counts per app, for every process
// until its Retry-After has passed. The state is in Redis, not in each
// process, because Slack's limits count the app, whichever process calls.
// The channel scripts (takePaceSlot, holdPace) are with the rest in
// scripts.go.

// TakePaceSlot reserves the right to post to channel now, spacing posts to a
// channel by interval across every bot process. It returns 0 when the caller
// may post, otherwise how long to wait.
func (s *Store) TakePaceSlot(ctx context.Context, channel string, interval time.Duration) (time.Duration, error) {
	ms, err := takePaceSlot.Run(ctx, s.rdb, []string{s.keys.pace(channel)}, max(interval.Milliseconds(), 1)).Int64()
	if err != nil {
		return 0, fmt.Errorf("store: take pace slot of %s: %w", channel, err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// HoldChannel stops every process posting to channel for at least d (Slack
// answered 429 for it).
func (s *Store) HoldChannel(ctx context.Context, channel string, d time.Duration) error {
	if err := holdPace.Run(ctx, s.rdb, []string{s.keys.pace(channel)}, max(d.Milliseconds(), 1)).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("store: hold channel %s: %w", channel, err)
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
