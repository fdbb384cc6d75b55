package bot_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkTimers measures the timer engine with many requests waiting:
// 10,000 and 100,000 pending timers due a year from now, spread over the 16
// shards like real requests' timers. It reports
//
//   - idle-cpu-ms/s: CPU the bot process spends per second polling while
//     nothing is due, and redis-cpu-ms/s, what those polls cost Redis;
//     neither may grow with the number pending (claims are O(log n));
//
//   - p50-late-ms / p99-late-ms: how late b.N timers coming due over the
//     next three seconds start, with the default poll interval (250 ms,
//     jittered). The issue asks for "within a second".
//
//     go test -run '^$' -bench Timers -benchtime 400x ./bot/
func BenchmarkTimers(b *testing.B) {
	for _, pending := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			rdb, prefix := redistest.Client(b)
			st, err := store.New(rdb, store.Options{Prefix: prefix})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			fillPending(b, rdb, prefix, pending)

			var mu sync.Mutex
			var late []time.Duration
			done := make(chan struct{}, b.N)
			handler := recordingHandler{fn: func(j store.Job) {
				mu.Lock()
				late = append(late, time.Since(j.Due))
				mu.Unlock()
				done <- struct{}{}
			}}
			runner, err := jobs.NewRunner(st, jobs.Options{Handlers: map[string]jobs.Handler{"tick": handler}})
			if err != nil {
				b.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = runner.Run(runCtx) })
			defer func() { stop(); wg.Wait() }()

			// Idle: nothing due for three seconds.
			time.Sleep(500 * time.Millisecond)
			cpu0, redis0 := processCPU(), redisCPU(b, rdb)
			const idle = 3 * time.Second
			time.Sleep(idle)
			idleCPU := float64((processCPU() - cpu0).Milliseconds()) / idle.Seconds()
			idleRedis := float64((redisCPU(b, rdb) - redis0).Milliseconds()) / idle.Seconds()

			// Lateness: b.N timers due at random moments of the next 3 s.
			b.ResetTimer()
			pipe := rdb.Pipeline()
			now := time.Now()
			for i := range b.N {
				due := now.Add(time.Duration(rand.Int64N(int64(3 * time.Second))))
				pipe.ZAdd(ctx, dueKey(prefix, i%store.Shards), redis.Z{Score: float64(due.UnixMilli()), Member: "tick:" + strconv.Itoa(i)})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			for range b.N {
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					b.Fatal("timers did not fire")
				}
			}
			b.StopTimer()
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Microseconds())/1000, "p50-late-ms")
			b.ReportMetric(float64(late[len(late)*99/100].Microseconds())/1000, "p99-late-ms")
			b.ReportMetric(idleCPU, "idle-cpu-ms/s")
			b.ReportMetric(idleRedis, "redis-cpu-ms/s")
		})
	}
}

type recordingHandler struct{ fn func(store.Job) }

func (h recordingHandler) Handle(_ context.Context, j store.Job) error { h.fn(j); return nil }
func (recordingHandler) GaveUp(context.Context, store.Job, error)      {}

func dueKey(prefix string, shard int) string {
	return fmt.Sprintf("%s:{s%02d}:jobs:due", prefix, shard)
}

// fillPending adds n timers due in a year, as n waiting requests' deadlines.
func fillPending(b *testing.B, rdb redis.UniversalClient, prefix string, n int) {
	ctx := context.Background()
	later := float64(time.Now().AddDate(1, 0, 0).UnixMilli())
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.ZAdd(ctx, dueKey(prefix, i%store.Shards), redis.Z{Score: later + float64(i), Member: "expire:pending-" + strconv.Itoa(i)})
		if i%10_000 == 9_999 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the server's user+system CPU from INFO cpu.
func redisCPU(b *testing.B, rdb redis.UniversalClient) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
