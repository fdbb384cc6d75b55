package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
)

// TestMemoryBreakdown is the repeatable measurement of issue #17's memory
// goal, by kind of key: it creates N requests of seed 000's example through
// intake, measures, posts them all through the job runner and the Slack
// emulator, and measures again. It prints figures and asserts nothing about
// them (they are what it is for), so it runs only when asked:
//
//	AB_MEMORY_BREAKDOWN=1000 go test -run TestMemoryBreakdown -v ./bench/
func TestMemoryBreakdown(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AB_MEMORY_BREAKDOWN"))
	if n <= 0 {
		t.Skip("set AB_MEMORY_BREAKDOWN=<requests> to measure")
	}
	e, err := newEnv(io.Discard, slog.LevelError)
	if err != nil {
		t.Skip(err)
	}
	defer e.Close()
	prefix := e.prefix("breakdown")
	in, err := e.newBot(prefix, slackemu.New(slackemu.Options{MaxCalls: 4 * n}), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx := context.Background()
	before, beforeClients := usedMemory(ctx, e)
	delta := func() (used, clients int64) {
		u, c := usedMemory(ctx, e)
		return u - before, c - beforeClients
	}
	c := newClient()
	defer c.CloseIdleConnections()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("mb%d-%d", e.seq.Add(1), i)
		if err := post(c, in.http.URL, e.requestBody(ids[i])); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	pending := breakdown(ctx, t, e, prefix, n, delta)

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = in.svc.RunJobs(runCtx) })
	waitPosted(ctx, t, in, ids)
	cancel()
	wg.Wait()
	posted := breakdown(ctx, t, e, prefix, n, delta)

	t.Logf("bytes per request (MEMORY USAGE, SAMPLES 0), %d requests of seed 000's example", n)
	t.Logf("%-22s %10s %10s", "kind", "pending", "posted")
	for _, k := range append(slices.Clone(kinds), "total", "INFO used_memory", "  of which clients", "  without clients") {
		t.Logf("%-22s %10.0f %10.0f", k, pending[k], posted[k])
	}
	rec, _ := e.rdb.HGetAll(ctx, prefix+":{s"+fmt.Sprintf("%02d", store.ShardOf(ids[0]))+"}:req:"+ids[0]).Result()
	fields := slices.Sorted(mapKeys(rec))
	var sb strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&sb, " %s=%d", f, len(rec[f]))
	}
	t.Logf("one posted request hash, field=value bytes:%s", sb.String())
}

// kinds are the groups of keys the breakdown reports, in print order.
var kinds = []string{"request hash", "event streams", "audit per request", "global audit", "indexes", "jobs",
	"open cap", "other"}

// kindOf groups a key by its name (store/keys.go lists them).
func kindOf(key string) string {
	_, rest, ok := strings.Cut(key, "}:")
	switch {
	case strings.Contains(key, ":open:{"):
		return "open cap"
	case !ok:
		return "other"
	case strings.HasPrefix(rest, "req:"):
		return "request hash"
	case rest == "events":
		return "event streams"
	case rest == "audit" || rest == "audit:head" || strings.HasPrefix(rest, "audit-"):
		return "global audit"
	case strings.HasPrefix(rest, "audit:"):
		return "audit per request"
	case strings.HasPrefix(rest, "idx:"):
		return "indexes"
	case strings.HasPrefix(rest, "jobs:"):
		return "jobs"
	}
	return "other"
}

// breakdown is MEMORY USAGE of every key under prefix, grouped by kind,
// per request, with the total and INFO's used_memory delta (read first).
func breakdown(ctx context.Context, t *testing.T, e *env, prefix string, n int, delta func() (int64, int64)) map[string]float64 {
	t.Helper()
	used, clients := delta()
	var keys []string
	iter := e.rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{"INFO used_memory": float64(used) / float64(n),
		"  of which clients": float64(clients) / float64(n), "  without clients": float64(used-clients) / float64(n)}
	for chunk := range slices.Chunk(keys, 500) {
		p := e.rdb.Pipeline()
		cmds := make([]interface{ Val() int64 }, len(chunk))
		for i, k := range chunk {
			cmds[i] = p.MemoryUsage(ctx, k, 0)
		}
		// redis.Nil: a key gone since the scan (a shard's pending audit
		// entries, sealed meanwhile) holds nothing.
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("MEMORY USAGE: %v", err)
		}
		for i, k := range chunk {
			v := float64(cmds[i].Val()) / float64(n)
			out[kindOf(k)] += v
			out["total"] += v
		}
	}
	return out
}

// usedMemory is INFO's used_memory and its share held by client
// connections (mem_clients_normal: query and reply buffers, ~20 KB per
// connection), which the job runner's connection pool adds to the delta.
func usedMemory(ctx context.Context, e *env) (used, clients int64) {
	info, _ := e.rdb.Info(ctx, "memory").Result()
	return int64(infoFloat(info, "used_memory")), int64(infoFloat(info, "mem_clients_normal"))
}

// waitPosted waits until every request's message is posted with its
// permalink and no post or home job is left to run.
func waitPosted(ctx context.Context, t *testing.T, in *instance, ids []string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	left := slices.Clone(ids)
	for len(left) > 0 {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-tick.C:
		}
		left = slices.DeleteFunc(left, func(id string) bool {
			rec, err := in.store.Get(ctx, id)
			return err == nil && rec.Posted() && rec.Slack.Permalink != ""
		})
	}
	for {
		d, err := in.store.Depth(ctx)
		if err == nil && d.Due == 0 && d.InFlight == 0 {
			return
		}
		<-tick.C
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
