package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// OpenKind selects which open requests ListOpen returns.
type OpenKind string

const (
	OpenAll      OpenKind = "all"      // every open request
	OpenChannel  OpenKind = "channel"  // open requests configured for one of Channels
	OpenReviewer OpenKind = "reviewer" // open requests naming Reviewer (named or escalated to), and Unnamed
	OpenOverdue  OpenKind = "overdue"  // open requests past their deadline, or escalated
)

// OpenQuery selects open requests, oldest first (by received time, then id).
type OpenQuery struct {
	Kind OpenKind
	// Channels are the channel spellings to match (an id and "#name": a
	// request is filed under the channel as it was configured).
	Channels []string
	Reviewer string // Slack user id, for OpenReviewer
	// Unnamed adds, for OpenReviewer, the open requests that name nobody
	// who may decide them (NewRequest.Unnamed): for one of the workspace's
	// default reviewers, who decide those.
	Unnamed bool
	Now     time.Time // for OpenOverdue: deadlines at or before it have passed
	Limit   int       // default 50, at most MaxPageSize
	Cursor  string    // from a previous Page; empty for the first page
}

// maxOverduePerShard bounds the past-deadline entries read per shard. Such
// requests are rare (the expire timer closes them at their deadline), so the
// bound is only a guard against a stalled job runner.
const maxOverduePerShard = 1000

// ListOpen pages through open requests using the per-shard indexes
// (idx:open, idx:channel, idx:reviewer, idx:deadline, idx:status:escalated);
// it never scans the key space. Cursors are those of List.
func (s *Store) ListOpen(ctx context.Context, q OpenQuery) (Page, error) {
	var keysOf func(shard int) []string
	switch q.Kind {
	case OpenAll:
		keysOf = func(shard int) []string { return []string{s.keys.openIndex(shard)} }
	case OpenChannel:
		keysOf = func(shard int) []string {
			out := make([]string, 0, len(q.Channels))
			for _, c := range q.Channels {
				if c != "" {
					out = append(out, s.keys.channelIndex(shard, c))
				}
			}
			return out
		}
	case OpenReviewer:
		if q.Reviewer == "" {
			return Page{Items: []Record{}}, nil
		}
		keysOf = func(shard int) []string {
			if q.Unnamed {
				return []string{s.keys.reviewerIndex(shard, q.Reviewer), s.keys.unnamedIndex(shard)}
			}
			return []string{s.keys.reviewerIndex(shard, q.Reviewer)}
		}
	case OpenOverdue:
		keysOf = func(shard int) []string { return []string{s.keys.statusIndex(shard, aah.StatusEscalated)} }
	default:
		return Page{}, fmt.Errorf("store: unknown listing %q", q.Kind)
	}
	var extra func(after listEntry, hasCursor bool) ([]listEntry, error)
	if q.Kind == OpenOverdue {
		extra = func(after listEntry, hasCursor bool) ([]listEntry, error) {
			return s.pastDeadline(ctx, q.Now, after, hasCursor)
		}
	}
	return s.pageIndexes(ctx, keysOf, extra, q.Limit, q.Cursor)
}

// pastDeadline returns every open request whose deadline is at or before
// now, as entries scored by received time (read from idx:open), after the cursor.
func (s *Store) pastDeadline(ctx context.Context, now time.Time, after listEntry, hasCursor bool) ([]listEntry, error) {
	pipe := s.rdb.Pipeline()
	ids := make([]*redis.StringSliceCmd, Shards)
	for shard := range Shards {
		ids[shard] = pipe.ZRangeByScore(ctx, s.keys.deadlineIndex(shard), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: maxOverduePerShard})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: list overdue requests: %w", err)
	}
	pipe = s.rdb.Pipeline()
	scores := make([]*redis.FloatSliceCmd, Shards)
	for shard := range Shards {
		if len(ids[shard].Val()) > 0 {
			scores[shard] = pipe.ZMScore(ctx, s.keys.openIndex(shard), ids[shard].Val()...)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: list overdue requests: %w", err)
	}
	var out []listEntry
	for shard := range Shards {
		if scores[shard] == nil {
			continue
		}
		for i, sc := range scores[shard].Val() {
			if sc == 0 {
				continue // not open (ZMSCORE answers nil, read as 0)
			}
			e := listEntry{score: int64(sc), id: ids[shard].Val()[i]}
			if !hasCursor || e.compare(after) > 0 {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// pageIndexes merges one page from the per-shard sorted sets keysOf names
// (all scored by received ms), plus any extra entries, ordered by
// (score, id) and deduplicated.
func (s *Store) pageIndexes(ctx context.Context, keysOf func(shard int) []string,
	extra func(after listEntry, hasCursor bool) ([]listEntry, error), limit int, cursor string) (Page, error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxPageSize)
	after, err := decodeCursor(cursor)
	if err != nil {
		return Page{}, err
	}
	hasCursor := cursor != ""
	// Per key: entries strictly after the cursor's score, plus the cursor's
	// own score (ties are filtered by id below).
	pipe := s.rdb.Pipeline()
	var cmds []*redis.ZSliceCmd
	for shard := range Shards {
		for _, key := range keysOf(shard) {
			lo := "-inf"
			if hasCursor {
				at := strconv.FormatInt(after.score, 10)
				lo = "(" + at
				cmds = append(cmds, pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: at, Max: at}))
			}
			cmds = append(cmds, pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
				Min: lo, Max: "+inf", Count: int64(limit + 1)}))
		}
	}
	if len(cmds) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return Page{}, fmt.Errorf("store: list requests: %w", err)
		}
	}
	var entries []listEntry
	for _, c := range cmds {
		for _, z := range c.Val() {
			e := listEntry{score: int64(z.Score), id: z.Member.(string)}
			if !hasCursor || e.compare(after) > 0 {
				entries = append(entries, e)
			}
		}
	}
	if extra != nil {
		more, err := extra(after, hasCursor)
		if err != nil {
			return Page{}, err
		}
		entries = append(entries, more...)
	}
	slices.SortFunc(entries, listEntry.compare)
	entries = slices.CompactFunc(entries, func(a, b listEntry) bool { return a.compare(b) == 0 })
	var page Page
	if len(entries) > limit {
		entries = entries[:limit]
		page.NextCursor = encodeCursor(entries[limit-1])
	}
	recs, err := s.getMany(ctx, entries)
	if err != nil {
		return Page{}, err
	}
	page.Items = recs
	return page, nil
}

// OpenByAge counts the open requests by age (time since received): counts[0]
// are younger than bounds[0], counts[i] at least bounds[i-1] and younger
// than bounds[i], the last at least the last bound old. bounds must
// ascend. It reads the per-shard idx:open (scored by received time) with one
// ZCOUNT per shard and age bucket, never the key space: cheap enough for
// every scrape.
func (s *Store) OpenByAge(ctx context.Context, bounds []time.Duration) ([]int64, error) {
	now := s.nowMs()
	// Score ranges by bucket: received after now-bounds[0], and so on back.
	ranges := make([][2]string, len(bounds)+1)
	upper := "+inf"
	for i, b := range bounds {
		edge := now - b.Milliseconds()
		ranges[i] = [2]string{"(" + strconv.FormatInt(edge, 10), upper}
		upper = strconv.FormatInt(edge, 10)
	}
	ranges[len(bounds)] = [2]string{"-inf", upper}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, 0, Shards*len(ranges))
	for shard := range Shards {
		for _, r := range ranges {
			cmds = append(cmds, pipe.ZCount(ctx, s.keys.openIndex(shard), r[0], r[1]))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("store: count open requests by age: %w", err)
	}
	counts := make([]int64, len(ranges))
	for i, c := range cmds {
		counts[i%len(ranges)] += c.Val()
	}
	return counts, nil
}
