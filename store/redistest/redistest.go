// Package redistest gives tests a real Redis. With REDIS_CLUSTER_ADDRS set
// (host:port,host:port,… of a Redis Cluster's nodes) every client is a
// Cluster client, so the suites prove the key layout and every command on
// Cluster: keys carry a {sNN} hash tag and the per-test prefix none, so a
// prefix never moves a key to another slot. With REDIS_URL set it uses that
// server; otherwise it starts one redis-server per test binary on a free
// loopback port and stops it when the tests end. Each caller gets a unique
// key prefix, so tests (and test binaries sharing REDIS_URL) never collide
// and can run in parallel.
//
// When neither REDIS_URL nor a redis-server binary is available, a developer's
// run falls back to the in-process embedded store (memredis.Start, on
// the wall clock) and warns on stderr, so the test command works on a fresh
// machine; under CI (CI=true) that is a failure instead: CI must prove
// everything against real Redis.
//
// Embedded gives a test the embedded store of local mode on the test's own
// clock, so code that local mode runs on it can be tested on both.
package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/memredis"
	"github.com/redis/go-redis/v9"
)

var (
	once sync.Once
	addr string // redis URL of the shared server; redis+cluster:// for a Cluster
	// clusterAddrs are REDIS_CLUSTER_ADDRS' seed nodes (nil: not a Cluster).
	clusterAddrs []string
	initErr      error
	seq          atomic.Int64
	kind         string // "REDIS_CLUSTER_ADDRS", "REDIS_URL", "redis-server" or "miniredis"
	// fallback is the embedded store used without REDIS_URL or redis-server.
	fallback *memredis.Server
)

// Client returns a client to the shared test Redis and a key prefix unique to
// this test. The client is closed when the test ends.
func Client(tb testing.TB) (redis.UniversalClient, string) {
	tb.Helper()
	once.Do(start)
	if initErr != nil {
		tb.Fatalf("redistest: %v", initErr)
	}
	var rdb redis.UniversalClient
	switch {
	case clusterAddrs != nil:
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs})
	case fallback != nil:
		rdb = fallback.Client() // keys expire on the wall clock, as in Redis
	default:
		opts, err := redis.ParseURL(addr)
		if err != nil {
			tb.Fatalf("redistest: parse %q: %v", addr, err)
		}
		rdb = redis.NewClient(opts)
	}
	tb.Cleanup(func() { _ = rdb.Close() })
	prefix := fmt.Sprintf("t%d-%d-%s", os.Getpid(), seq.Add(1), sanitize(tb.Name()))
	return rdb, prefix
}

// Kind says which server backs the tests.
func Kind() string { once.Do(start); return kind }

// Cluster is true when the tests run on a Redis Cluster (REDIS_CLUSTER_ADDRS).
func Cluster() bool { once.Do(start); return clusterAddrs != nil }

func sanitize(name string) string {
	r := strings.NewReplacer("/", "_", " ", "_", "{", "", "}", "", ":", "_")
	if len(name) > 40 {
		name = name[:40]
	}
	return r.Replace(name)
}

func start() {
	if a := os.Getenv("REDIS_CLUSTER_ADDRS"); a != "" {
		for s := range strings.SplitSeq(a, ",") {
			if s = strings.TrimSpace(s); s != "" {
				clusterAddrs = append(clusterAddrs, s)
			}
		}
		addr, kind = "redis+cluster://"+strings.Join(clusterAddrs, ",")+"/", "REDIS_CLUSTER_ADDRS"
		initErr = pingCluster(clusterAddrs)
		return
	}
	if u := os.Getenv("REDIS_URL"); u != "" {
		addr, kind = u, "REDIS_URL"
		initErr = ping(u)
		return
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			initErr = fmt.Errorf("CI needs a real Redis: install redis-server (apt-get install -y redis-server) " +
				"or set REDIS_URL=redis://host:port/0")
			return
		}
		fmt.Fprintln(os.Stderr, "redistest: WARNING: no REDIS_URL and no redis-server on PATH; "+
			"using the in-process embedded store (miniredis). Install redis-server to test against real Redis as CI does.")
		if fallback, initErr = memredis.Start(nil); initErr == nil {
			addr, kind = "redis://"+fallback.Addr(), "miniredis"
		}
		return
	}
	initErr = startServer(bin)
}

// startServer runs redis-server on a free port, without persistence, in a
// temporary directory. The process dies with the test binary: it is started
// with the parent-death signal where the OS offers it (see sysproc_*.go), and
// TestMain-less packages rely on that.
func startServer(bin string) error {
	port, err := freePort(false)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	addr, kind = fmt.Sprintf("redis://127.0.0.1:%d/0", port), "redis-server"
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(addr); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("redis-server on port %d did not answer: %w", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ping(u string) error {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return fmt.Errorf("parse REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// pingCluster checks that the Cluster answers and has every slot served:
// tests on a half-formed Cluster would fail with CLUSTERDOWN far from the
// cause.
func pingCluster(addrs []string) error {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := rdb.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("CLUSTER INFO on REDIS_CLUSTER_ADDRS=%s: %w", strings.Join(addrs, ","), err)
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("REDIS_CLUSTER_ADDRS=%s: cluster is not ready:\n%s", strings.Join(addrs, ","), info)
	}
	return rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
}

// URL is the shared test Redis as a REDIS_URL, for code that reads
// REDIS_URL itself (commands under test): redis://, or redis+cluster://
// with every seed node on a Cluster.
func URL(tb testing.TB) string {
	tb.Helper()
	once.Do(start)
	if initErr != nil {
		tb.Fatalf("redistest: %v", initErr)
	}
	return addr
}

// Embedded starts the embedded store exactly as local mode builds it
// (internal/memredis), private to this test, whose keys expire on the clock
// now (nil: time.Now; pass the fake clock the code under test uses). It
// returns a client and a key prefix like Client, so a test can run on both
// backends; the server stops when the test ends.
func Embedded(tb testing.TB, now func() time.Time) (redis.UniversalClient, string) {
	tb.Helper()
	e, err := memredis.Start(now)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	rdb := e.Client()
	tb.Cleanup(func() { _ = rdb.Close(); e.Close() })
	return rdb, fmt.Sprintf("t%d-%d-%s", os.Getpid(), seq.Add(1), sanitize(tb.Name()))
}

// Keys returns the keys matching pattern, for tests that reach into Redis.
// KEYS on a Cluster client asks one node only, so there every master is
// asked.
func Keys(tb testing.TB, rdb redis.UniversalClient, pattern string) []string {
	tb.Helper()
	ctx := context.Background()
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		keys, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			tb.Fatalf("redistest: KEYS %s: %v", pattern, err)
		}
		return keys
	}
	var mu sync.Mutex
	var keys []string
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		k, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, k...)
		mu.Unlock()
		return err
	})
	if err != nil {
		tb.Fatalf("redistest: KEYS %s on every master: %v", pattern, err)
	}
	return keys
}

// NumSub counts the subscribers of channel. On a Cluster a client
// subscribes on one node and PUBSUB NUMSUB counts only the node it asks,
// so it asks every master and adds them up.
func NumSub(tb testing.TB, rdb redis.UniversalClient, channel string) int64 {
	tb.Helper()
	ctx := context.Background()
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		subs, err := rdb.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			tb.Fatalf("redistest: PUBSUB NUMSUB %s: %v", channel, err)
		}
		return subs[channel]
	}
	var mu sync.Mutex
	var n int64
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		subs, err := node.PubSubNumSub(ctx, channel).Result()
		mu.Lock()
		n += subs[channel]
		mu.Unlock()
		return err
	})
	if err != nil {
		tb.Fatalf("redistest: PUBSUB NUMSUB %s on every master: %v", channel, err)
	}
	return n
}
