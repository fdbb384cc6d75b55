package store_test

import (
	"errors"
	"testing"

	"github.com/approvalbot/approvalbot/internal/memredis"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// An Update that ends without its MULTI/EXEC (its decision refused, or
// found nothing to do) must not leave the request WATCHed on the pooled
// connection it used: update WATCHes and reads in one round trip on one
// node, so it releases the watch itself. Left behind, the watch would fail
// the next transaction run on that connection whenever the request
// changed meanwhile, however unrelated that transaction.
func TestUpdateLeavesNoWatchBehind(t *testing.T) {
	if redistest.Cluster() {
		t.Skip("a Cluster client watches and reads one by one, with the client's own Watch")
	}
	onePool := func(addr string) *redis.Client {
		// One connection: every command of the test runs on the one the
		// update used.
		return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, PipelinePoolSize: -1})
	}
	servers := map[string]func(t *testing.T) *redis.Client{
		"redis": func(t *testing.T) *redis.Client {
			opts, err := redis.ParseURL(redistest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			opts.PoolSize, opts.PipelinePoolSize = 1, -1
			return redis.NewClient(opts)
		},
		"embedded": func(t *testing.T) *redis.Client {
			e, err := memredis.Start(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			return onePool(e.Addr())
		},
	}
	errRefused := errors.New("refused")
	endings := map[string]func(store.Record) (*store.Change, error){
		"decision refused": func(store.Record) (*store.Change, error) { return nil, errRefused },
		"nothing to do":    func(store.Record) (*store.Change, error) { return nil, nil },
		// The process recovers a handler's panic and goes on, with the
		// connection back in its pool.
		"decision panicked": func(store.Record) (*store.Change, error) { panic("decide failed") },
	}
	for name, server := range servers {
		for ending, decide := range endings {
			t.Run(name+"/"+ending, func(t *testing.T) {
				ctx := testCtx(t)
				rdb := server(t)
				t.Cleanup(func() { _ = rdb.Close() })
				_, prefix := redistest.Client(t) // a unique prefix
				s := mustNew(t, rdb, store.Options{Prefix: prefix})
				rec, _, err := s.Create(ctx, newReq("watched-1", "agent-a"))
				if err != nil {
					t.Fatal(err)
				}
				func() {
					defer func() { _ = recover() }()
					if _, err := s.Update(ctx, rec.ID, decide); err != nil && !errors.Is(err, errRefused) {
						t.Fatalf("Update: %v", err)
					}
				}()
				// The request changes (another process's write)...
				other := redis.NewClient(rdb.Options())
				t.Cleanup(func() { _ = other.Close() })
				keys := redistest.Keys(t, other, prefix+":*:req:"+rec.ID)
				if len(keys) != 1 {
					t.Fatalf("request key: %v", keys)
				}
				if err := other.HSet(ctx, keys[0], "touched", "1").Err(); err != nil {
					t.Fatal(err)
				}
				// ...and an unrelated transaction on the update's connection
				// still commits.
				_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, prefix+":unrelated", "1", 0)
					return nil
				})
				if err != nil {
					t.Fatalf("a transaction after the update: %v (the update's WATCH outlived it)", err)
				}
			})
		}
	}
}

// A change to the request between Update's read and its EXEC fails the
// EXEC, and decide runs again on the request as changed: the read is made
// under the watch, though both go in one round trip.
func TestUpdateDecidesAgainWhenTheRequestChangedMeanwhile(t *testing.T) {
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, b)
			rec := f.mustCreate(t, newReq("raced-1", "agent-a"))
			calls := 0
			var permalinks []string
			_, err := f.s.Update(f.ctx, rec.ID, func(r store.Record) (*store.Change, error) {
				calls++
				permalinks = append(permalinks, r.Slack.Permalink)
				if calls == 1 {
					// Another writer, between the read and the EXEC.
					if err := f.s.SetPermalink(f.ctx, rec.ID, "", "", "https://example.slack.com/p1"); err != nil {
						return nil, err
					}
				}
				return &store.Change{Audit: []store.AuditEvent{{Event: "noted", Actor: "system"}}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != 2 || permalinks[1] != "https://example.slack.com/p1" {
				t.Fatalf("decide ran %d times, saw permalinks %q; want twice, the second seeing the other writer's", calls, permalinks)
			}
		})
	}
}
