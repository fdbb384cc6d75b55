package store_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// TestStore runs the whole suite against real Redis and against the embedded
// store (miniredis running the same Lua scripts) of the product's local mode.
func TestStore(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		testSuite(t, realRedis())
	})
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testSuite(t, embedded)
	})
}

// testSuite is the store's contract; every leaf runs in parallel on its own
// key space (newStore gives each test a fresh one).
func testSuite(t *testing.T, newStore backend) {
	t.Run("Create", func(t *testing.T) {
		t.Parallel()
		testCreate(t, newStore)
	})
	t.Run("Idempotency", func(t *testing.T) {
		t.Parallel()
		testIdempotency(t, newStore)
	})
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		testList(t, newStore)
	})
	t.Run("Withdraw", func(t *testing.T) {
		t.Parallel()
		testWithdraw(t, newStore)
	})
	t.Run("MarkPosted", func(t *testing.T) {
		t.Parallel()
		testMarkPosted(t, newStore)
	})
	t.Run("RecordFields", func(t *testing.T) {
		t.Parallel()
		testRecordFields(t, newStore)
	})
	t.Run("Jobs", func(t *testing.T) {
		t.Parallel()
		testJobs(t, newStore)
	})
	t.Run("Depth", func(t *testing.T) {
		t.Parallel()
		testDepth(t, newStore)
	})
}

func testCreate(t *testing.T, newStore backend) {
	t.Run("the created record is what Get reads back", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-create.full", "agent-a")
		n.ResponseURL = "https://agent.example.com/done"
		n.Timers = []store.JobAt{{ID: "expire:req-create.full", At: t0.Add(time.Hour)}, {ID: "remind:req-create.full:1", At: t0.Add(time.Minute)}}
		n.Reviewers = []string{"U1", "U2", "U1"}
		n.Deadline = t0.Add(time.Hour)
		n.Events = &aah.EventSubscription{URL: "https://agent.example.com/ev", Types: []string{"input:received"}}
		n.NoRequester = true
		rec := f.mustCreate(t, n)
		sameRecord(t, "Get after Create", f.mustGet(t, n.ID), rec)
		bare := f.mustCreate(t, newReq("req-create.bare", "agent-a"))
		sameRecord(t, "Get after Create", f.mustGet(t, bare.ID), bare)
	})
	t.Run("new request is pending and schedules its post", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-create.1", "agent-a")
		rec, created, err := f.s.Create(f.ctx, n)
		if err != nil || !created {
			t.Fatalf("Create = created %v, err %v; want created", created, err)
		}
		want := store.Record{
			ID: n.ID, Agent: n.Agent, Status: aah.StatusPending, Document: n.Document,
			BodyHash: n.BodyHash, Channel: n.Channel, Version: 1, ReceivedAt: t0, UpdatedAt: t0,
		}
		sameRecord(t, "created record", rec, want)
		if !bytes.Equal(rec.Document, n.Document) {
			t.Errorf("Document = %s; want verbatim %s", rec.Document, n.Document)
		}
		if rec.Posted() {
			t.Errorf("new record Posted() = true")
		}
		got := f.mustGet(t, n.ID)
		sameRecord(t, "Get after Create", got, rec)

		// The post job is due exactly at creation time, on the request's shard only.
		f.clk.Set(t0.Add(-time.Millisecond))
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Fatalf("jobs claimable before the request was received: %q", jobIDs(jobs))
		}
		f.clk.Set(t0)
		shard := shardOf(n.ID)
		for other := range store.Shards {
			if other != shard {
				f.claimExactly(t, other, 10, time.Minute)
			}
		}
		jobs := f.claimExactly(t, shard, 10, time.Minute, "post:"+n.ID)
		j := jobs[0]
		if j.Kind != store.JobPost || j.RequestID != n.ID || j.Attempt != 1 || j.Shard != shard {
			t.Errorf("post job = %+v; want Kind post, RequestID %s, Attempt 1, Shard %d", j, n.ID, shard)
		}
		if err := f.s.Ack(f.ctx, j); err != nil {
			t.Errorf("Ack post job: %v", err)
		}
	})

	t.Run("request ids containing colons keep the whole id in jobs", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("ns:team:42", "agent-a")
		f.mustCreate(t, n)
		jobs := f.claimExactly(t, shardOf(n.ID), 10, time.Minute, "post:ns:team:42")
		if jobs[0].Kind != store.JobPost || jobs[0].RequestID != "ns:team:42" {
			t.Errorf("job = %+v; want Kind post, RequestID ns:team:42", jobs[0])
		}
	})

	t.Run("Get of unknown or invalid ids is ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		f.mustCreate(t, newReq("req-exists", "agent-a"))
		for _, id := range []string{"req-missing", "", "has space", "-leading-dash", "{s01}", strings.Repeat("x", 129)} {
			rec, err := f.s.Get(f.ctx, id)
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get(%q) err = %v; want ErrNotFound", id, err)
			}
			sameRecord(t, fmt.Sprintf("Get(%q) record", id), rec, store.Record{})
		}
	})

	t.Run("missing fields are rejected and nothing is stored", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		blank := map[string]func(*store.NewRequest){
			"id":       func(n *store.NewRequest) { n.ID = "" },
			"agent":    func(n *store.NewRequest) { n.Agent = "" },
			"document": func(n *store.NewRequest) { n.Document = nil },
			"hash":     func(n *store.NewRequest) { n.BodyHash = "" },
			"channel":  func(n *store.NewRequest) { n.Channel = "" },
		}
		for field, clear := range blank {
			n := newReq("req-blank-"+field, "agent-a")
			clear(&n)
			rec, created, err := f.s.Create(f.ctx, n)
			if err == nil || created {
				t.Errorf("Create without %s = created %v, err %v; want an error", field, created, err)
			}
			sameRecord(t, "record of rejected create", rec, store.Record{})
			if n.ID != "" {
				if _, err := f.s.Get(f.ctx, n.ID); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Get after create without %s: err %v; want ErrNotFound", field, err)
				}
			}
		}
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("rejected creates scheduled jobs %q", jobIDs(jobs))
		}
	})
}

func testIdempotency(t *testing.T, newStore backend) {
	t.Run("replay returns the stored record and conflicts change nothing", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-idem", "agent-a")
		orig := f.mustCreate(t, n)
		f.clk.Advance(time.Second)

		for i := range 3 {
			rec, created, err := f.s.Create(f.ctx, n)
			if err != nil || created {
				t.Fatalf("replay %d: created %v, err %v; want created=false, no error", i, created, err)
			}
			sameRecord(t, "replayed record", rec, orig)
		}

		otherHash := n
		otherHash.BodyHash = "sha256:different"
		otherHash.Document = []byte(`{"different":true}`)
		otherAgent := n
		otherAgent.Agent = "agent-b"
		both := otherAgent
		both.BodyHash = "sha256:different"
		for name, c := range map[string]store.NewRequest{"different hash": otherHash, "different agent": otherAgent, "different agent and hash": both} {
			rec, created, err := f.s.Create(f.ctx, c)
			if !errors.Is(err, store.ErrConflict) || created {
				t.Errorf("%s: created %v, err %v; want ErrConflict", name, created, err)
			}
			sameRecord(t, name+": returned record", rec, store.Record{})
		}

		sameRecord(t, "Get after replays and conflicts", f.mustGet(t, n.ID), orig)
		f.wantDepth(t, store.QueueDepth{Due: 1, OldestDue: time.Second})
		if got := jobIDs(f.claimAll(t)); !slices.Equal(got, []string{"post:" + n.ID}) {
			t.Errorf("jobs after replays and conflicts = %q; want exactly one post job", got)
		}
		if ids, _, _ := f.listAll(t, store.ListQuery{Agent: "agent-b"}); len(ids) != 0 {
			t.Errorf("conflicting agent's listing = %q; want empty", ids)
		}
		if ids, _, _ := f.listAll(t, store.ListQuery{Agent: "agent-a"}); !slices.Equal(ids, []string{n.ID}) {
			t.Errorf("owner's listing = %q; want exactly [%s]", ids, n.ID)
		}
	})

	t.Run("50 concurrent creates store it once", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-race", "agent-a")
		const workers = 50
		type result struct {
			rec     store.Record
			created bool
			err     error
		}
		results := make([]result, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				<-start
				rec, created, err := f.s.Create(f.ctx, n)
				results[i] = result{rec, created, err}
			})
		}
		close(start)
		wg.Wait()
		stored := f.mustGet(t, n.ID)
		createdCount := 0
		for i, r := range results {
			if r.err != nil {
				t.Errorf("worker %d: %v", i, r.err)
				continue
			}
			if r.created {
				createdCount++
			}
			sameRecord(t, fmt.Sprintf("worker %d record", i), r.rec, stored)
		}
		if createdCount != 1 {
			t.Errorf("created=true %d times; want exactly 1 (and %d replays)", createdCount, workers-1)
		}
		if got := jobIDs(f.claimAll(t)); !slices.Equal(got, []string{"post:" + n.ID}) {
			t.Errorf("jobs = %q; want exactly one post job", got)
		}
	})
}

func testList(t *testing.T, newStore backend) {
	t.Run("pages, order, status filter, agent isolation", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		const agentA, agentB = "agent-a", "agent-b"

		// 25 requests of A and 5 of B. Received offsets (ms) are mostly
		// distinct, but A's #5..#9 and #20..#24 share one millisecond each
		// (and B's joins the first group), created in reverse id order, so
		// the order must come from (received, id), not insertion. The tie
		// groups straddle the page boundaries of Limit 7 (after #6 and #20).
		type plan struct {
			id, agent string
			offset    int
		}
		var plans []plan
		for i := range 25 {
			off := i
			switch {
			case i >= 5 && i <= 9:
				off = 5
			case i >= 10 && i <= 19:
				off = i - 4
			case i >= 20:
				off = 16
			}
			plans = append(plans, plan{fmt.Sprintf("list-a-%02d", i), agentA, off})
		}
		for i, off := range []int{0, 5, 5, 9, 30} {
			plans = append(plans, plan{fmt.Sprintf("list-b-%02d", i), agentB, off})
		}
		// Creation order: by offset, then reverse id within one millisecond.
		slices.SortStableFunc(plans, func(a, b plan) int {
			if a.offset != b.offset {
				return a.offset - b.offset
			}
			return strings.Compare(b.id, a.id)
		})
		recs := map[string]store.Record{}
		shardsA := map[int]bool{}
		for _, p := range plans {
			f.clk.Set(t0.Add(time.Duration(p.offset) * time.Millisecond))
			recs[p.id] = f.mustCreate(t, newReq(p.id, p.agent))
			if p.agent == agentA {
				shardsA[shardOf(p.id)] = true
			}
		}
		if len(shardsA) < 8 {
			t.Fatalf("precondition: A's ids cover only %d shards", len(shardsA))
		}
		expected := func(agent string, keep func(string) bool) []string {
			var ids []string
			for id, r := range recs {
				if r.Agent == agent && (keep == nil || keep(id)) {
					ids = append(ids, id)
				}
			}
			slices.SortFunc(ids, func(a, b string) int {
				if c := recs[a].ReceivedAt.Compare(recs[b].ReceivedAt); c != 0 {
					return c
				}
				return strings.Compare(a, b)
			})
			return ids
		}
		wantA := expected(agentA, nil)
		if len(wantA) != 25 {
			t.Fatalf("precondition: %d requests of A", len(wantA))
		}

		ids, sizes, items := f.listAll(t, store.ListQuery{Agent: agentA, Limit: 7})
		if !slices.Equal(ids, wantA) {
			t.Errorf("A's pages (Limit 7) =\n %q\nwant\n %q", ids, wantA)
		}
		if !slices.Equal(sizes, []int{7, 7, 7, 4}) {
			t.Errorf("page sizes = %v; want [7 7 7 4]", sizes)
		}
		for _, it := range items {
			sameRecord(t, "listed item "+it.ID, it, recs[it.ID])
		}
		// An exact multiple of the limit ends without an empty extra page.
		if ids, sizes, _ := f.listAll(t, store.ListQuery{Agent: agentA, Limit: 5}); !slices.Equal(ids, wantA) || !slices.Equal(sizes, []int{5, 5, 5, 5, 5}) {
			t.Errorf("Limit 5: ids %q sizes %v; want all 25 in 5 full pages", ids, sizes)
		}
		if ids, sizes, _ := f.listAll(t, store.ListQuery{Agent: agentA}); !slices.Equal(ids, wantA) || !slices.Equal(sizes, []int{25}) {
			t.Errorf("default limit: ids %q sizes %v; want all 25 on one page", ids, sizes)
		}

		// Agent isolation.
		wantB := expected(agentB, nil)
		if ids, _, _ := f.listAll(t, store.ListQuery{Agent: agentB, Limit: 2}); !slices.Equal(ids, wantB) {
			t.Errorf("B's listing = %q; want %q", ids, wantB)
		}
		if ids, _, _ := f.listAll(t, store.ListQuery{Agent: "agent-nobody"}); len(ids) != 0 {
			t.Errorf("unknown agent's listing = %q; want empty", ids)
		}

		// Status filter.
		withdrawn := map[string]bool{"list-a-02": true, "list-a-06": true, "list-a-22": true}
		for _, id := range []string{"list-a-22", "list-a-02", "list-a-06"} {
			f.clk.Advance(time.Millisecond)
			f.mustWithdraw(t, id)
		}
		wantW := expected(agentA, func(id string) bool { return withdrawn[id] })
		wantP := expected(agentA, func(id string) bool { return !withdrawn[id] })
		if ids, sizes, items := f.listAll(t, store.ListQuery{Agent: agentA, Status: aah.StatusWithdrawn, Limit: 2}); !slices.Equal(ids, wantW) || !slices.Equal(sizes, []int{2, 1}) {
			t.Errorf("A withdrawn = %q sizes %v; want %q in pages [2 1]", ids, sizes, wantW)
		} else {
			for _, it := range items {
				if it.Status != aah.StatusWithdrawn {
					t.Errorf("withdrawn listing item %s has status %q", it.ID, it.Status)
				}
			}
		}
		if ids, sizes, _ := f.listAll(t, store.ListQuery{Agent: agentA, Status: aah.StatusPending, Limit: 7}); !slices.Equal(ids, wantP) || !slices.Equal(sizes, []int{7, 7, 7, 1}) {
			t.Errorf("A pending = %q sizes %v; want %q in pages [7 7 7 1]", ids, sizes, wantP)
		}
		if ids, _, _ := f.listAll(t, store.ListQuery{Agent: agentA, Limit: 7}); !slices.Equal(ids, wantA) {
			t.Errorf("A all statuses after withdrawals = %q; want %q", ids, wantA)
		}
		if ids, _, _ := f.listAll(t, store.ListQuery{Agent: agentB, Status: aah.StatusWithdrawn}); len(ids) != 0 {
			t.Errorf("B withdrawn = %q; want empty", ids)
		}
		if ids, _, _ := f.listAll(t, store.ListQuery{Agent: agentB, Status: aah.StatusPending}); !slices.Equal(ids, wantB) {
			t.Errorf("B pending = %q; want %q", ids, wantB)
		}
	})

	t.Run("pages through requests that all live in one shard", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		ids := idsInShard("one-shard", 7, 10)
		for i, id := range slices.Backward(ids) { // #4..#6 share a millisecond
			off := i
			if i >= 4 && i <= 6 {
				off = 4
			}
			f.clk.Set(t0.Add(time.Duration(off) * time.Millisecond))
			f.mustCreate(t, newReq(id, "agent-a"))
		}
		want := slices.Clone(ids)
		slices.SortStableFunc(want[4:7], strings.Compare)
		got, sizes, _ := f.listAll(t, store.ListQuery{Agent: "agent-a", Limit: 3})
		if !slices.Equal(got, want) || !slices.Equal(sizes, []int{3, 3, 3, 1}) {
			t.Errorf("listing = %q sizes %v; want %q in pages [3 3 3 1]", got, sizes, want)
		}
	})

	t.Run("garbage cursors are ErrBadCursor", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		f.mustCreate(t, newReq("req-1", "agent-a"))
		b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		for _, c := range []string{"!!!not-base64!!!", "====", b64("no-colon"), b64("abc:req-1"), b64("12:has space"), b64("12:"), b64(":req-1")} {
			page, err := f.s.List(f.ctx, store.ListQuery{Agent: "agent-a", Cursor: c})
			if !errors.Is(err, store.ErrBadCursor) {
				t.Errorf("List(cursor %q) err = %v; want ErrBadCursor", c, err)
			}
			if len(page.Items) != 0 || page.NextCursor != "" {
				t.Errorf("List(cursor %q) page = %+v; want empty", c, page)
			}
		}
	})

	t.Run("Limit is capped at MaxPageSize", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		const n = store.MaxPageSize + 1
		var want []string
		for i := range n {
			id := fmt.Sprintf("cap-%03d", i)
			want = append(want, id)
			f.clk.Advance(time.Millisecond)
			f.mustCreate(t, newReq(id, "agent-c"))
		}
		page, err := f.s.List(f.ctx, store.ListQuery{Agent: "agent-c", Limit: 10 * store.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != store.MaxPageSize || page.NextCursor == "" {
			t.Fatalf("Limit %d: %d items, cursor %q; want %d items and a cursor", 10*store.MaxPageSize, len(page.Items), page.NextCursor, store.MaxPageSize)
		}
		ids, sizes, _ := f.listAll(t, store.ListQuery{Agent: "agent-c", Limit: 10 * store.MaxPageSize})
		if !slices.Equal(ids, want) || !slices.Equal(sizes, []int{store.MaxPageSize, 1}) {
			t.Errorf("paging with a huge limit: sizes %v; want [%d 1] covering all %d in order", sizes, store.MaxPageSize, n)
		}
		for _, limit := range []int{0, -3} {
			page, err := f.s.List(f.ctx, store.ListQuery{Agent: "agent-c", Limit: limit})
			if err != nil || len(page.Items) != 50 || page.NextCursor == "" {
				t.Errorf("Limit %d: %d items, cursor %q, err %v; want the default 50 and a cursor", limit, len(page.Items), page.NextCursor, err)
			}
		}
	})
}
