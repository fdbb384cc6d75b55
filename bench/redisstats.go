package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Redis calls per request: what issue #17 counted by hand ("about 90 Redis
// commands per request"), counted by redis-server itself. On a shared VM
// wall time and CPU move by tens of percent between runs, but a change that
// takes a call off every create takes it off this figure exactly: the
// figure to check a change to the data model with.

// redisCalls is INFO commandstats' calls by command, counting the calls a
// script makes as well as the script's own (EVALSHA). INFO itself, which
// the bench sends to read CPU and these counts, is left out.
type redisCalls map[string]int64

func (e *env) redisCalls() redisCalls {
	info, err := e.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return nil
	}
	calls := redisCalls{}
	for _, line := range strings.Split(info, "\n") {
		// cmdstat_zadd:calls=292618,usec=1086588,usec_per_call=3.71,…
		name, stats, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || name == "info" || !strings.HasPrefix(stats, "calls=") {
			continue
		}
		n, err := strconv.ParseInt(strings.SplitN(strings.TrimPrefix(stats, "calls="), ",", 2)[0], 10, 64)
		if err == nil {
			calls[name] = n
		}
	}
	return calls
}

// since is what c counted after before did.
func (c redisCalls) since(before redisCalls) redisCalls {
	out := redisCalls{}
	for name, n := range c {
		if d := n - before[name]; d > 0 {
			out[name] = d
		}
	}
	return out
}

// plus adds u's counts to c's, in a new map.
func (c redisCalls) plus(u redisCalls) redisCalls {
	out := maps.Clone(c)
	if out == nil {
		out = redisCalls{}
	}
	for name, n := range u {
		out[name] += n
	}
	return out
}

func (c redisCalls) total() int64 {
	var t int64
	for _, n := range c {
		t += n
	}
	return t
}

// perRequest says c per request of requests: the total, then the commands
// that made most of it, most first ("43.1 (zadd 13.0, evalsha 3.0, …)").
func (c redisCalls) perRequest(requests int64, most int) string {
	if requests == 0 || len(c) == 0 {
		return "–"
	}
	names := slices.SortedFunc(maps.Keys(c), func(a, b string) int {
		if c[a] != c[b] {
			return int(c[b] - c[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, most)
	for _, name := range names[:min(most, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(c[name])/float64(requests)))
	}
	return fmt.Sprintf("%.1f (%s)", float64(c.total())/float64(requests), strings.Join(parts, ", "))
}
