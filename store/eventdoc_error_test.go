package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// failKeyHook fails, after they ran, the pipelined commands on one key, as
// a server error reply to them would (-BUSY, -LOADING, a Cluster node
// gone). The pipeline's error is its first failed command's, as go-redis
// reports it.
type failKeyHook struct{ key string }

func (failKeyHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (failKeyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h failKeyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		_ = next(ctx, cmds)
		for _, c := range cmds {
			if len(c.Args()) > 1 && fmt.Sprint(c.Args()[1]) == h.key {
				c.SetErr(errors.New("injected: the node failed"))
			}
		}
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// A read of an input:requested event's document that fails is an error of
// EventsAfter (the reader retries), even when a request deleted earlier in
// the batch answered its own read with nothing: it is not taken for a
// request no longer stored, linked instead of carried, and passed by the
// stream's cursor.
func TestEventDocumentReadErrorIsAnError(t *testing.T) {
	c, prefix := redistest.Client(t)
	rdb, ok := c.(*redis.Client)
	if !ok {
		t.Skip("one node: the hook fails one key's commands of a pipeline")
	}
	live := "live-1"
	gone := idsInShard("gone", shardOf(live), 1)[0] // one shard: one read of both events
	sh := shardOf(live)
	key := func(kind, id string) string { return fmt.Sprintf("%s:{s%02d}:%s:%s", prefix, sh, kind, id) }
	rdb.AddHook(failKeyHook{key: key("doc", live)})
	clk := newClock()
	s := mustNew(t, rdb, store.Options{Prefix: prefix, Now: clk.Now})
	ctx := testCtx(t)
	if _, _, err := s.Create(ctx, newReq(gone, "agent-a")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, _, err := s.Create(ctx, newReq(live, "agent-a")); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, key("req", gone), key("doc", gone)) // as retention deletes it
	evs, err := s.EventsAfter(ctx, sh, "0-0", 100)
	if err != nil {
		return // the failure is reported: the reader tries again
	}
	for _, e := range evs {
		if e.RequestID == live && e.Type == store.EventInputRequested && !strings.Contains(string(e.Data), `"request":`) {
			t.Errorf("EventsAfter = no error, and %s's input:requested event lacks its document: %s", live, e.Data)
		}
	}
}

// A request whose document is gone while its hash is still there is one
// the retention sweep deleted between the two reads (both keys go in one
// script): Get and the listings read it as none, not as one without its
// document.
func TestRequestDeletedBetweenItsReadsReadsAsNone(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, b)
			f.mustCreate(t, newReq("half-1", "agent-a"))
			f.mustCreate(t, newReq("half-2", "agent-a"))
			if err := f.s.DeleteDocumentForTest(f.ctx, "half-1"); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.Get(f.ctx, "half-1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get = %v, want ErrNotFound", err)
			}
			if rec, err := f.s.GetState(f.ctx, "half-1"); err != nil || rec.ID != "half-1" {
				t.Errorf("GetState = %v, %v: the state alone reads as it is", rec.ID, err)
			}
			page, err := f.s.ListOpen(f.ctx, store.OpenQuery{Kind: store.OpenAll, Limit: 10})
			if err != nil || len(page.Items) != 1 || page.Items[0].ID != "half-2" {
				t.Errorf("ListOpen = %d items, %v; want half-2 alone", len(page.Items), err)
			}
		})
	}
}
