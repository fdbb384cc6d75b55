package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the App Home tab keeps in Redis: who opened it lately, what each user
// answered, and the coalesced schedule of its publishes. None of it belongs
// to a request, so these keys live outside the request shards. Event
// de-duplication is in events.go; the hold of views.publish after a 429 in
// pace.go.

// answeredCap bounds a user's list of recently answered requests.
const answeredCap = 50

// answeredTTL is how long an idle user's list of answered requests is kept.
const answeredTTL = 30 * 24 * time.Hour

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
//	ARGV[4] -> how long to keep KEYS[2] after the publish is due, ms
//
// The value of KEYS[2] decides, not its TTL: a caller's "now" may be a little
// stale by the time the script runs (a loaded machine, a GC pause), and a key
// expiring exactly a window after the publish would then let the next one
// out early. So it is kept well past the window (homePublishKeep).
//
// Returns the publish's due time, Unix ms.
var scheduleHomePublish = redis.NewScript(`
local due = redis.call('ZSCORE', KEYS[1], ARGV[3])
if due then return tonumber(due) end
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local at, last = now, redis.call('GET', KEYS[2])
if last and tonumber(last) + window > at then at = tonumber(last) + window end
redis.call('ZADD', KEYS[1], at, ARGV[3])
redis.call('SET', KEYS[2], at, 'PX', at - now + tonumber(ARGV[4]))
return at
`)

// HomePublishWindow is the least time between two publishes of one user's
// Home tab, across every process: Slack allows about 100 views.publish a
// minute for the whole app, and a burst of requests naming one reviewer (or
// one reviewer's burst of clicks) must not spend them all on one tab.
const HomePublishWindow = 5 * time.Second

// homePublishKeep is how long past a publish's window its spacing key is
// kept: far more than any clock read can be stale, and short enough that
// the keys of users who stopped changing clean themselves up.
const homePublishKeep = time.Minute

// ViewsPublish is the Slack method Home tabs are published with, and held
// on a 429 (HoldMethod).
const ViewsPublish = "views.publish"

// ScheduleHomePublish schedules a publish of each user's Home tab, at most
// one per window per user across every process: a change within the window
// of the last publish rides on the next one, which renders the latest state.
func (s *Store) ScheduleHomePublish(ctx context.Context, users []string, window time.Duration) error {
	for _, u := range users {
		keys := []string{s.keys.jobs(shardOf(u)).due, s.keys.homePublish(u)}
		if err := scheduleHomePublish.Run(ctx, s.rdb, keys, s.nowMs(), max(window.Milliseconds(), 1), jobID(JobHomePublish, u),
			(window + homePublishKeep).Milliseconds()).Err(); err != nil {
			return fmt.Errorf("store: schedule the Home publish of %s: %w", u, err)
		}
	}
	return nil
}

// HomeAudience is everyone whose Home tab may list the request: its
// reviewers (named, resolved from emails, escalated to), the people its
// message mentions, and everyone who answered or signed off (an admin, or
// a user an agent decided for through the API, lists it among the
// requests they answered without reviewing it).
func (r Record) HomeAudience() []string {
	users := slices.Concat(r.IndexedReviewers, r.EscalatedTo)
	for _, m := range r.Mentions { // "<@U123>"
		if id, ok := strings.CutPrefix(m, "<@"); ok && strings.HasSuffix(id, ">") {
			users = append(users, strings.TrimSuffix(id, ">"))
		}
	}
	for _, a := range r.Answers {
		if a.By.ID != "" {
			users = append(users, a.By.ID)
		}
		for _, s := range a.Signoffs {
			if s.By.ID != "" {
				users = append(users, s.By.ID)
			}
		}
	}
	return users
}
