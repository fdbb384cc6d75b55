package store

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// MaxPageSize bounds one page of a listing.
const MaxPageSize = 200

// ErrBadCursor reports a cursor this store did not issue.
var ErrBadCursor = errors.New("store: invalid cursor")

// ListQuery selects an agent's requests, oldest first.
type ListQuery struct {
	Agent  string
	Status aah.Status // empty for every status
	Limit  int        // default 50, at most MaxPageSize
	Cursor string     // from a previous Page; empty for the first page
}

// Page is one page of a listing.
type Page struct {
	Items      []Record
	NextCursor string // empty on the last page
}

type listEntry struct {
	score int64
	id    string
}

func (a listEntry) compare(b listEntry) int {
	return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.id, b.id))
}

// List pages through an agent's requests using the per-shard indexes; it
// never scans the key space. Entries are ordered by (received time, id).
func (s *Store) List(ctx context.Context, q ListQuery) (Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxPageSize)
	after, err := decodeCursor(q.Cursor)
	if err != nil {
		return Page{}, err
	}
	// Per shard: entries strictly after the cursor's score, plus the cursor's
	// own score (ties are filtered by id below).
	pipe := s.rdb.Pipeline()
	var cmds []*redis.ZSliceCmd
	for shard := range Shards {
		key := s.keys.agentIndex(shard, q.Agent, q.Status)
		min := "-inf"
		if q.Cursor != "" {
			min = "(" + strconv.FormatInt(after.score, 10)
			cmds = append(cmds, pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
				Min: strconv.FormatInt(after.score, 10), Max: strconv.FormatInt(after.score, 10)}))
		}
		cmds = append(cmds, pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
			Min: min, Max: "+inf", Count: int64(limit + 1)}))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Page{}, fmt.Errorf("store: list requests of %s: %w", q.Agent, err)
	}
	var entries []listEntry
	for _, c := range cmds {
		for _, z := range c.Val() {
			e := listEntry{score: int64(z.Score), id: z.Member.(string)}
			if q.Cursor == "" || e.compare(after) > 0 {
				entries = append(entries, e)
			}
		}
	}
	slices.SortFunc(entries, listEntry.compare)
	entries = slices.CompactFunc(entries, func(a, b listEntry) bool { return a.compare(b) == 0 })
	var page Page
	if len(entries) > limit {
		entries = entries[:limit]
		last := entries[limit-1]
		page.NextCursor = encodeCursor(last)
	}
	recs, err := s.getMany(ctx, entries)
	if err != nil {
		return Page{}, err
	}
	page.Items = recs
	return page, nil
}

func (s *Store) getMany(ctx context.Context, entries []listEntry) ([]Record, error) {
	if len(entries) == 0 {
		return []Record{}, nil
	}
	// One pipeline; on Cluster go-redis splits it per node (a request
	// deleted between its two reads is left out: storedRead.fields).
	pipe := s.rdb.Pipeline()
	reads := make([]storedRead, len(entries))
	for i, e := range entries {
		reads[i] = s.queueRead(ctx, pipe, e.id, true)
	}
	_, perr := pipe.Exec(ctx)
	out := make([]Record, 0, len(entries))
	for i, r := range reads {
		h, err := r.fields(perr)
		if err != nil {
			return nil, fmt.Errorf("store: load listed requests: %w", err)
		}
		if len(h) > 0 {
			out = append(out, decodeRecord(entries[i].id, h))
		}
	}
	return out, nil
}

func encodeCursor(e listEntry) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(e.score, 10) + ":" + e.id))
}

func decodeCursor(c string) (listEntry, error) {
	if c == "" {
		return listEntry{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return listEntry{}, ErrBadCursor
	}
	score, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(score, 10, 64)
	if !ok || err != nil || !aah.ValidRequestID(id) {
		return listEntry{}, ErrBadCursor
	}
	return listEntry{score: n, id: id}, nil
}
