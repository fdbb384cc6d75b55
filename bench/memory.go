package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// Memory is what N pending requests cost in Redis.
type Memory struct {
	N               int     `json:"n"`
	Posted          bool    `json:"posted"` // the runner posted them (else it never ran)
	Keys            int     `json:"keys"`
	MemoryUsage     int64   `json:"memory_usage_bytes"` // MEMORY USAGE summed over the keys
	PerRequest      float64 `json:"memory_usage_per_request"`
	UsedMemoryDelta int64   `json:"used_memory_delta"` // INFO memory used_memory after - before
	UsedPerRequest  float64 `json:"used_memory_per_request"`
}

// measureMemory creates n pending requests under a fresh prefix and
// measures what Redis holds for them: every key under the prefix (the
// requests and the structures they share: audit, events, outbox, indexes),
// by MEMORY USAGE and by INFO's used_memory. With posted false the job
// runner never runs, so none is posted: what intake alone stores. With
// posted true the runner (started after the last is accepted, the product's
// defaults, posts paced 1 ms apart so pacing does not make this slow) posts
// every one and runs every job that follows until the queue is quiet, then
// stops: what a request costs while it waits in Slack for its reviewers
// (slack_ts, permalink, the posted audit entry and event).
func (e *env) measureMemory(n int, posted bool) (Memory, error) {
	name := "memory"
	if posted {
		name = "memposted"
	}
	prefix := e.prefix(name)
	posts := &postCounter{}
	in, err := e.newBot(prefix, countingEmulator(0, posts), time.Millisecond)
	if err != nil {
		return Memory{}, err
	}
	defer in.Close()
	ctx := context.Background()
	before := e.usedMemory(ctx)
	if err := e.createAll(in.http.URL, n, func(i int) []byte {
		return e.requestBody(idInShard(fmt.Sprintf("m%d-%d", e.seq.Add(1), i), i%store.Shards))
	}); err != nil {
		return Memory{}, fmt.Errorf("memory: %w", err)
	}
	if posted {
		stop := in.startJobs()
		err := waitPosts(posts, n, time.Minute+time.Duration(n)*10*time.Millisecond)
		if err == nil {
			err = in.waitQuiet(time.Minute)
		}
		stop()
		if err != nil {
			return Memory{}, fmt.Errorf("memory of posted requests: %w", err)
		}
	}
	m := Memory{N: n, Posted: posted, UsedMemoryDelta: e.usedMemory(ctx) - before}
	iter := e.rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return m, fmt.Errorf("memory: scan %s: %w", prefix, err)
	}
	m.Keys = len(keys)
	for chunk := range slices.Chunk(keys, 500) {
		p := e.rdb.Pipeline()
		cmds := make([]interface{ Val() int64 }, 0, len(chunk))
		for _, k := range chunk {
			cmds = append(cmds, p.MemoryUsage(ctx, k, 0)) // SAMPLES 0: every element
		}
		// redis.Nil: a key gone since the scan (a list emptied, such as a
		// shard's pending audit entries once sealed) holds nothing.
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return m, fmt.Errorf("memory: MEMORY USAGE: %w", err)
		}
		for _, c := range cmds {
			m.MemoryUsage += c.Val()
		}
	}
	m.PerRequest = float64(m.MemoryUsage) / float64(n)
	m.UsedPerRequest = float64(m.UsedMemoryDelta) / float64(n)
	return m, nil
}

// usedMemory is INFO memory's used_memory.
func (e *env) usedMemory(ctx context.Context) int64 {
	info, _ := e.rdb.Info(ctx, "memory").Result()
	return int64(infoFloat(info, "used_memory"))
}

// idInShard is base with the least suffix ("-0", "-1", …) that puts the
// request in shard. Request i of a measure goes to shard i mod
// store.Shards, so every measure of n requests spreads them over the same
// shards: the structures a shard holds (its outbox, indexes, audit, event
// stream) cost as much as several requests, and ids left to chance touch 9
// to 15 of 16 shards for n = 20, enough for a measure of posted requests to
// come out smaller than one of unposted requests.
func idInShard(base string, shard int) string {
	for k := 0; ; k++ {
		if id := fmt.Sprintf("%s-%d", base, k); store.ShardOf(id) == shard {
			return id
		}
	}
}
