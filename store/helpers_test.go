package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// t0 is where every fake clock starts (whole milliseconds, UTC).
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward and returns the new time.
func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// backend builds a Store over a fresh, private key space of some Redis
// server. It fills in Options.Prefix (or leaves the default) and passes the
// rest of opts through.
type backend func(t *testing.T, opts store.Options) *store.Store

// realRedis is the shared redis-server of redistest, with optional hooks on
// each test's client.
func realRedis(hooks ...redis.Hook) backend {
	return func(t *testing.T, opts store.Options) *store.Store {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		addHooks(rdb, hooks...)
		opts.Prefix = prefix
		return mustNew(t, rdb, opts)
	}
}

// addHooks adds hooks to rdb so that they see every command it sends. A
// Cluster client runs WATCH transactions on its node clients, which its own
// hooks do not cover, so there the hooks go on each node client as it is
// made instead (and see every command once).
func addHooks(rdb redis.UniversalClient, hooks ...redis.Hook) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		c.OnNewNode(func(n *redis.Client) {
			for _, h := range hooks {
				n.AddHook(h)
			}
		})
		return
	}
	for _, h := range hooks {
		rdb.AddHook(h)
	}
}

// embedded is the store local mode runs on (internal/memredis), one
// server per test, whose keys expire on the test's clock (opts.Now).
func embedded(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	rdb, prefix := redistest.Embedded(t, opts.Now)
	opts.Prefix = prefix
	return mustNew(t, rdb, opts)
}

// backends are both stores the suite must hold on: real Redis, and the
// embedded store of local mode.
func backends() map[string]backend {
	return map[string]backend{"redis": realRedis(), "embedded": embedded}
}

func mustNew(t *testing.T, rdb redis.UniversalClient, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.New(rdb, opts)
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	return s
}

// fixture is a store on a fake clock.
type fixture struct {
	s   *store.Store
	clk *fakeClock
	ctx context.Context
}

func newFixture(t *testing.T, b backend, mods ...func(*store.Options)) fixture {
	t.Helper()
	clk := newClock()
	opts := store.Options{Now: clk.Now}
	for _, m := range mods {
		m(&opts)
	}
	return fixture{s: b(t, opts), clk: clk, ctx: testCtx(t)}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// shardOf is the package's request-to-shard mapping (keys.go), recomputed.
func shardOf(id string) int { return int(crc32.ChecksumIEEE([]byte(id)) % store.Shards) }

// idsInShard returns n distinct request ids "<prefix>-<k>" that map to shard.
func idsInShard(prefix string, shard, n int) []string {
	var out []string
	for k := 0; len(out) < n; k++ {
		if id := fmt.Sprintf("%s-%d", prefix, k); shardOf(id) == shard {
			out = append(out, id)
		}
	}
	return out
}

// newReq is a valid NewRequest; its document has odd spacing and key order
// so that "stored verbatim" is observable.
func newReq(id, agent string) store.NewRequest {
	return store.NewRequest{
		ID:       id,
		Agent:    agent,
		Document: json.RawMessage(fmt.Sprintf(`{"z":1,  "artifact" : {"id":%q},"a":[true,null]}`, id)),
		BodyHash: "sha256:" + id,
		Channel:  "C0APPROVALS",
	}
}

func (f fixture) mustCreate(t *testing.T, n store.NewRequest) store.Record {
	t.Helper()
	rec, created, err := f.s.Create(f.ctx, n)
	if err != nil || !created {
		t.Fatalf("Create(%s) = created %v, err %v; want created", n.ID, created, err)
	}
	return rec
}

func (f fixture) mustGet(t *testing.T, id string) store.Record {
	t.Helper()
	rec, err := f.s.Get(f.ctx, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return rec
}

// mustWithdraw withdraws id where the withdrawal is a precondition of a
// test, not its subject (the Withdraw subtests check its result in detail).
func (f fixture) mustWithdraw(t *testing.T, id string) {
	t.Helper()
	rec, err := f.withdraw(id)
	if err != nil || rec.Status != aah.StatusWithdrawn {
		t.Fatalf("Withdraw(%s) = status %q, err %v; want withdrawn", id, rec.Status, err)
	}
}

// withdraw withdraws id as the agent's DELETE does: the rule is the
// core's (approval.Core.Withdraw), what it writes the store's.
func (f fixture) withdraw(id string) (store.Record, error) {
	return approval.New(f.s, approval.Options{Now: f.clk.Now}).Withdraw(f.ctx, id)
}

// claimAll claims every due job of every shard, in shard order.
func (f fixture) claimAll(t *testing.T) []store.Job {
	t.Helper()
	var all []store.Job
	for shard := range store.Shards {
		jobs, err := f.s.Claim(f.ctx, shard, 1000, time.Minute)
		if err != nil {
			t.Fatalf("Claim(shard %d): %v", shard, err)
		}
		for _, j := range jobs {
			if j.Shard != shard {
				t.Errorf("job %s claimed from shard %d says Shard %d", j.ID, shard, j.Shard)
			}
		}
		all = append(all, jobs...)
	}
	return all
}

// claimExactly claims the jobs of shard and requires exactly the ids want, in order.
func (f fixture) claimExactly(t *testing.T, shard, max int, lease time.Duration, want ...string) []store.Job {
	t.Helper()
	jobs, err := f.s.Claim(f.ctx, shard, max, lease)
	if err != nil {
		t.Fatalf("Claim(shard %d, max %d): %v", shard, max, err)
	}
	if got := jobIDs(jobs); !slices.Equal(got, want) {
		t.Fatalf("Claim(shard %d, max %d) at %s = %q; want %q", shard, max, f.clk.Now().Format(time.StampMilli), got, want)
	}
	return jobs
}

func jobIDs(jobs []store.Job) []string {
	out := make([]string, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func (f fixture) depth(t *testing.T) store.QueueDepth {
	t.Helper()
	d, err := f.s.Depth(f.ctx)
	if err != nil {
		t.Fatalf("Depth: %v", err)
	}
	return d
}

func (f fixture) wantDepth(t *testing.T, want store.QueueDepth) {
	t.Helper()
	if got := f.depth(t); got != want {
		t.Errorf("Depth = %+v; want %+v", got, want)
	}
}

// listAll pages through q and returns the ids in order and each page's size.
func (f fixture) listAll(t *testing.T, q store.ListQuery) (ids []string, sizes []int, items []store.Record) {
	t.Helper()
	for range 1000 {
		page, err := f.s.List(f.ctx, q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		sizes = append(sizes, len(page.Items))
		for _, r := range page.Items {
			ids = append(ids, r.ID)
		}
		items = append(items, page.Items...)
		if page.NextCursor == "" {
			return ids, sizes, items
		}
		q.Cursor = page.NextCursor
	}
	t.Fatalf("List(%+v): more than 1000 pages", q)
	return nil, nil, nil
}

// norm makes records comparable with reflect.DeepEqual: times become plain
// UTC milliseconds (what the store keeps).
func norm(r store.Record) store.Record {
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	r.ReceivedAt, r.UpdatedAt, r.WithdrawnAt = ms(r.ReceivedAt), ms(r.UpdatedAt), ms(r.WithdrawnAt)
	r.Slack.PostedAt = ms(r.Slack.PostedAt)
	return r
}

func sameRecord(t *testing.T, what string, got, want store.Record) {
	t.Helper()
	if !reflect.DeepEqual(norm(got), norm(want)) {
		t.Errorf("%s:\n got %s\nwant %s", what, fmtRecord(got), fmtRecord(want))
	}
}

func fmtRecord(r store.Record) string {
	r = norm(r)
	doc := string(r.Document)
	r.Document = nil
	return strings.ReplaceAll(fmt.Sprintf("%+v document=%s", r, doc), "\n", " ")
}
