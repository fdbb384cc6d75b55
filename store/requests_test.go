package store_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// post plays the worker that posts id's message: it claims the post job,
// records the message at the record's current version, and acks.
func (f fixture) post(t *testing.T, id, channel, ts string) {
	t.Helper()
	jobs := f.claimExactly(t, shardOf(id), 10, time.Minute, "post:"+id)
	if err := f.s.MarkPosted(f.ctx, id, channel, ts, f.mustGet(t, id).Version); err != nil {
		t.Fatalf("MarkPosted(%s): %v", id, err)
	}
	if err := f.s.Ack(f.ctx, jobs[0]); err != nil {
		t.Fatalf("Ack post job of %s: %v", id, err)
	}
}

func (f fixture) listIDs(t *testing.T, agent string, st aah.Status) []string {
	t.Helper()
	ids, _, _ := f.listAll(t, store.ListQuery{Agent: agent, Status: st})
	return ids
}

func testWithdraw(t *testing.T, newStore backend) {
	t.Run("unposted request: withdrawn, reindexed, post cancelled", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-wd-unposted", "agent-a")
		created := f.mustCreate(t, n)
		at := f.clk.Advance(5 * time.Millisecond)

		want := created
		want.Status, want.Version, want.UpdatedAt, want.WithdrawnAt = aah.StatusWithdrawn, 2, at, at
		rec, err := f.withdraw(n.ID)
		if err != nil {
			t.Errorf("Withdraw: %v; want success", err)
		} else {
			sameRecord(t, "Withdraw result", rec, want)
		}
		sameRecord(t, "Get after Withdraw", f.mustGet(t, n.ID), want)

		if got := f.listIDs(t, n.Agent, aah.StatusPending); len(got) != 0 {
			t.Errorf("pending listing after Withdraw = %q; want empty", got)
		}
		if got := f.listIDs(t, n.Agent, aah.StatusWithdrawn); !slices.Equal(got, []string{n.ID}) {
			t.Errorf("withdrawn listing = %q; want [%s]", got, n.ID)
		}
		if got := f.listIDs(t, n.Agent, ""); !slices.Equal(got, []string{n.ID}) {
			t.Errorf("all-status listing = %q; want [%s]", got, n.ID)
		}

		// The never-posted message's post is cancelled; nothing is left to run.
		f.clk.Advance(time.Hour)
		f.wantDepth(t, store.QueueDepth{})
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs after withdrawing an unposted request = %q; want none", jobIDs(jobs))
		}
	})

	// Pending requests have no status index (idx:open holds them): one
	// sorted-set insert fewer per create. One stored before that, in
	// idx:status:pending, leaves it with its first change of status.
	t.Run("pending: in idx:open, in no status index; leaves an old one", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-wd-idx", "agent-a")
		f.mustCreate(t, n)
		rdb := f.s.Client()
		slot := fmt.Sprintf("%s:{s%02d}", f.s.Prefix(), shardOf(n.ID))
		if c := rdb.Exists(f.ctx, slot+":idx:status:pending").Val(); c != 0 {
			t.Errorf("a create wrote idx:status:pending")
		}
		if _, err := rdb.ZScore(f.ctx, slot+":idx:open", n.ID).Result(); err != nil {
			t.Errorf("idx:open does not hold the new request: %v", err)
		}
		if err := rdb.ZAdd(f.ctx, slot+":idx:status:pending", redis.Z{Score: 1, Member: n.ID}).Err(); err != nil {
			t.Fatal(err)
		}
		f.mustWithdraw(t, n.ID)
		if _, err := rdb.ZScore(f.ctx, slot+":idx:status:pending", n.ID).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("withdrawn, still in idx:status:pending (%v)", err)
		}
		if _, err := rdb.ZScore(f.ctx, slot+":idx:status:withdrawn", n.ID).Result(); err != nil {
			t.Errorf("withdrawn, not in idx:status:withdrawn: %v", err)
		}
	})

	t.Run("posted request: a sync job is scheduled", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-wd-posted", "agent-a")
		f.mustCreate(t, n)
		f.post(t, n.ID, "C0APPROVALS", "1700000000.000100")
		posted := f.mustGet(t, n.ID)
		at := f.clk.Advance(time.Second)

		rec, err := f.withdraw(n.ID)
		if err != nil {
			t.Errorf("Withdraw: %v; want success", err)
			rec = f.mustGet(t, n.ID)
		}
		want := posted
		want.Status, want.Version, want.UpdatedAt, want.WithdrawnAt = aah.StatusWithdrawn, 2, at, at
		sameRecord(t, "Withdraw result", rec, want)

		// Due exactly at the withdrawal.
		f.clk.Set(at.Add(-time.Millisecond))
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Fatalf("jobs due before the withdrawal: %q", jobIDs(jobs))
		}
		f.clk.Set(at)
		jobs := f.claimAll(t)
		if got := jobIDs(jobs); !slices.Equal(got, []string{"sync:" + n.ID}) {
			t.Fatalf("jobs after withdrawing a posted request = %q; want [sync:%s]", got, n.ID)
		}
		if j := jobs[0]; j.Kind != store.JobSync || j.RequestID != n.ID || j.Attempt != 1 || j.Shard != shardOf(n.ID) {
			t.Errorf("sync job = %+v", j)
		}
	})

	t.Run("twice is ErrNotOpen with the record", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-wd-twice", "agent-a")
		f.mustCreate(t, n)
		f.clk.Advance(time.Millisecond)
		if _, err := f.withdraw(n.ID); err != nil {
			t.Errorf("first Withdraw: %v; want success", err)
		}
		first := f.mustGet(t, n.ID)
		f.clk.Advance(time.Millisecond)
		rec, err := f.withdraw(n.ID)
		if !errors.Is(err, store.ErrNotOpen) {
			t.Errorf("second Withdraw err = %v; want ErrNotOpen", err)
		}
		sameRecord(t, "record returned with ErrNotOpen", rec, first)
		sameRecord(t, "Get after second Withdraw", f.mustGet(t, n.ID), first)
		if first.Version != 2 || first.Status != aah.StatusWithdrawn {
			t.Errorf("after withdrawing: version %d status %q; want 2 withdrawn", first.Version, first.Status)
		}
	})

	t.Run("unknown or invalid id is ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		for _, id := range []string{"req-nope", "bad id", ""} {
			rec, err := f.withdraw(id)
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Withdraw(%q) err = %v; want ErrNotFound", id, err)
			}
			sameRecord(t, "record", rec, store.Record{})
		}
		if _, err := f.s.Get(f.ctx, "req-nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Withdraw of an unknown id created it: Get err = %v", err)
		}
		f.wantDepth(t, store.QueueDepth{})
	})

	t.Run("20 concurrent withdrawals: one wins", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-wd-race", "agent-a")
		f.mustCreate(t, n)
		f.post(t, n.ID, "C0APPROVALS", "1700000000.000200")
		f.clk.Advance(time.Millisecond)
		const workers = 20
		errs := make([]error, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				<-start
				_, errs[i] = f.withdraw(n.ID)
			})
		}
		close(start)
		wg.Wait()
		ok, notOpen := 0, 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrNotOpen):
				notOpen++
			default:
				t.Errorf("worker %d: unexpected error %v", i, err)
			}
		}
		if ok != 1 || notOpen != workers-1 {
			t.Errorf("%d succeeded, %d ErrNotOpen; want 1 and %d", ok, notOpen, workers-1)
		}
		// Exactly one transition happened.
		rec := f.mustGet(t, n.ID)
		if rec.Version != 2 || rec.Status != aah.StatusWithdrawn {
			t.Errorf("after the race: version %d status %q; want 2 withdrawn", rec.Version, rec.Status)
		}
		if got := jobIDs(f.claimAll(t)); !slices.Equal(got, []string{"sync:" + n.ID}) {
			t.Errorf("jobs = %q; want exactly one sync", got)
		}
	})
}

func testMarkPosted(t *testing.T, newStore backend) {
	t.Run("records the message and clears the post error", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-mp", "agent-a")
		f.mustCreate(t, n)
		jobs := f.claimExactly(t, shardOf(n.ID), 10, time.Minute, "post:"+n.ID)

		errAt := f.clk.Advance(time.Second)
		if err := f.s.RecordPostError(f.ctx, n.ID, "ratelimited", false); err != nil {
			t.Fatal(err)
		}
		rec := f.mustGet(t, n.ID)
		if rec.Slack.Error != "ratelimited" || rec.Slack.ErrorPermanent || !rec.UpdatedAt.Equal(errAt) || rec.Version != 1 {
			t.Errorf("after RecordPostError: %s", fmtRecord(rec))
		}

		postedAt := f.clk.Advance(time.Second)
		if err := f.s.MarkPosted(f.ctx, n.ID, "C0REAL", "1700000000.000300", 1); err != nil {
			t.Fatalf("MarkPosted: %v", err)
		}
		want := rec
		want.Slack = store.SlackState{Channel: "C0REAL", TS: "1700000000.000300", PostedAt: postedAt, RenderedVersion: 1}
		want.UpdatedAt = postedAt // posting is a change of the record (and is audited)
		got := f.mustGet(t, n.ID)
		sameRecord(t, "Get after MarkPosted", got, want)
		if !got.Posted() {
			t.Errorf("Posted() = false after MarkPosted")
		}
		// Rendered the current version: no sync. The post job is still ours.
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs after an up-to-date MarkPosted = %q; want none", jobIDs(jobs))
		}
		if err := f.s.Ack(f.ctx, jobs[0]); err != nil {
			t.Fatalf("Ack post: %v", err)
		}
		f.clk.Advance(time.Hour)
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs after acking the post = %q; want none", jobIDs(jobs))
		}
	})

	t.Run("withdrawn between claim and MarkPosted: sync scheduled", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-mp-moved", "agent-a")
		f.mustCreate(t, n)
		shard := shardOf(n.ID)
		jobs := f.claimExactly(t, shard, 10, time.Minute, "post:"+n.ID)
		rendered := f.mustGet(t, n.ID).Version // the worker renders version 1

		f.clk.Advance(time.Second)
		f.mustWithdraw(t, n.ID) // the post job is in flight, nothing scheduled yet
		f.claimExactly(t, shard, 10, time.Minute)

		postedAt := f.clk.Advance(time.Second)
		if err := f.s.MarkPosted(f.ctx, n.ID, "C0REAL", "1700000000.000400", rendered); err != nil {
			t.Fatalf("MarkPosted: %v", err)
		}
		rec := f.mustGet(t, n.ID)
		if rec.Version != 2 || rec.Slack.RenderedVersion != 1 || rec.Slack.TS != "1700000000.000400" || !rec.Slack.PostedAt.Equal(postedAt) {
			t.Errorf("after MarkPosted: %s", fmtRecord(rec))
		}
		if err := f.s.Ack(f.ctx, jobs[0]); err != nil {
			t.Fatalf("Ack post: %v", err)
		}
		sync := f.claimExactly(t, shard, 10, time.Minute, "sync:"+n.ID)
		if err := f.s.MarkSynced(f.ctx, n.ID, rec.Version); err != nil {
			t.Fatal(err)
		}
		if err := f.s.Ack(f.ctx, sync[0]); err != nil {
			t.Fatal(err)
		}
		if got := f.mustGet(t, n.ID).Slack.RenderedVersion; got != 2 {
			t.Errorf("RenderedVersion after MarkSynced = %d; want 2", got)
		}
		f.clk.Advance(time.Hour)
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("jobs left = %q; want none", jobIDs(jobs))
		}
	})

	t.Run("unknown id is ErrNotFound and creates nothing", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		err := f.s.MarkPosted(f.ctx, "req-ghost", "C1", "1.2", 1)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MarkPosted(unknown) err = %v; want ErrNotFound", err)
		}
		if _, err := f.s.Get(f.ctx, "req-ghost"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get after MarkPosted(unknown): err %v; want ErrNotFound", err)
		}
		f.wantDepth(t, store.QueueDepth{})
	})
}

func testRecordFields(t *testing.T, newStore backend) {
	t.Run("MarkSynced, SetPermalink, SetMentions, RecordPostError round trip", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		n := newReq("req-fields", "agent-a")
		f.mustCreate(t, n)
		f.post(t, n.ID, "C0REAL", "1700000000.000500")
		want := f.mustGet(t, n.ID)
		check := func(step string) {
			t.Helper()
			sameRecord(t, "Get after "+step, f.mustGet(t, n.ID), want)
		}

		f.clk.Advance(time.Second)
		if err := f.s.MarkSynced(f.ctx, n.ID, 7); err != nil {
			t.Fatal(err)
		}
		want.Slack.RenderedVersion = 7
		check("MarkSynced")

		link := "https://example.slack.com/archives/C0REAL/p1700000000000500"
		if err := f.s.SetPermalink(f.ctx, n.ID, "", "", link); err != nil {
			t.Fatal(err)
		}
		want.Slack.Permalink = link
		check("SetPermalink")

		mentions := []string{"<@U012ABC>", "<@W0XYZ>", `"quoted", <!subteam^S1>`}
		if err := f.s.SetMentions(f.ctx, n.ID, mentions); err != nil {
			t.Fatal(err)
		}
		want.Mentions = mentions
		// The users mentioned join the reviewer index (and stay in it).
		want.IndexedReviewers = []string{"U012ABC", "W0XYZ"}
		check("SetMentions")
		if err := f.s.SetMentions(f.ctx, n.ID, []string{}); err != nil {
			t.Fatal(err)
		}
		if got := f.mustGet(t, n.ID).Mentions; got == nil || len(got) != 0 {
			t.Errorf("Mentions after SetMentions(empty) = %#v; want empty, non-nil", got)
		}
		if err := f.s.SetMentions(f.ctx, n.ID, mentions); err != nil {
			t.Fatal(err)
		}

		at := f.clk.Advance(time.Second)
		if err := f.s.RecordPostError(f.ctx, n.ID, "channel_not_found", true); err != nil {
			t.Fatal(err)
		}
		want.Slack.Error, want.Slack.ErrorPermanent, want.UpdatedAt = "channel_not_found", true, at
		check("RecordPostError(permanent)")

		at = f.clk.Advance(time.Second)
		if err := f.s.RecordPostError(f.ctx, n.ID, "internal_error", false); err != nil {
			t.Fatal(err)
		}
		want.Slack.Error, want.Slack.ErrorPermanent, want.UpdatedAt = "internal_error", false, at
		check("RecordPostError(transient)")

		if want.Version != 1 {
			t.Errorf("Version = %d; these setters must not bump it", want.Version)
		}
		if jobs := f.claimAll(t); len(jobs) != 0 {
			t.Errorf("setters scheduled jobs %q", jobIDs(jobs))
		}
	})

	t.Run("listing shows the same fields", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, newStore)
		for i := range 3 {
			id := fmt.Sprintf("req-lf-%d", i)
			f.mustCreate(t, newReq(id, "agent-a"))
			if err := f.s.SetMentions(f.ctx, id, []string{fmt.Sprintf("<@U%d>", i)}); err != nil {
				t.Fatal(err)
			}
		}
		_, _, items := f.listAll(t, store.ListQuery{Agent: "agent-a"})
		if len(items) != 3 {
			t.Fatalf("%d items; want 3", len(items))
		}
		for _, it := range items {
			sameRecord(t, "listed "+it.ID, it, f.mustGet(t, it.ID))
		}
	})
}
