package store_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

var alice = aah.Person{ID: "U0ALICE", Name: "Alice"}

// resolveByKey is a MatchGrants that resolves the request by the first
// live grant of key, recording which one in the audit (the core's rules
// are tested in approval/; this is the store's side of the contract).
func resolveByKey(key string) store.GrantMatch {
	return func(rec store.Record, live []store.Grant) (*store.Change, error) {
		for _, g := range live {
			if g.ActionKey == key && g.Agent == rec.Agent {
				return &store.Change{Status: aah.StatusResolved, Bump: true,
					Answers:    []aah.Answer{{DecisionID: "d1", Value: true, By: g.By, Grant: new(g.Ref())}},
					Audit:      []store.AuditEvent{{Event: "resolved", Actor: g.By.AgentID(), Data: map[string]any{"grant": g.ID}}},
					Resolution: &store.Resolution{Response: []byte(`{}`), At: rec.ReceivedAt, By: g.By}}, nil
			}
		}
		return nil, nil
	}
}

// createMatching creates a request of agent that the grants of key resolve.
func (f fixture) createMatching(t *testing.T, id, agent, key string) store.Record {
	t.Helper()
	n := newReq(id, agent)
	n.MatchGrants = resolveByKey(key)
	return f.mustCreate(t, n)
}

func (f fixture) mustGrant(t *testing.T, agent, key string, d time.Duration) store.Grant {
	t.Helper()
	g, err := f.s.CreateGrant(f.ctx, store.NewGrant{Agent: agent, ActionKey: key, By: alice, Duration: d,
		FromRequest: "origin-1", Comment: "deploys today"})
	if err != nil {
		t.Fatalf("CreateGrant: %v", err)
	}
	return g
}

func TestGrants(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testGrants(t, b)
		})
	}
}

// testGrants is the grants' life: created with the store's clock, listed,
// matched by a create in any shard, not matched by another agent or key,
// revoked (who, when) and then matched nowhere.
func testGrants(t *testing.T, b backend) {
	f := newFixture(t, b)
	g := f.mustGrant(t, "deployer", "scale_service", time.Hour)
	if g.ExpiresAt.Sub(g.GrantedAt) != time.Hour {
		t.Errorf("expiry - grant time = %v; want 1h", g.ExpiresAt.Sub(g.GrantedAt))
	}
	got, err := f.s.GetGrant(f.ctx, g.ID)
	if err != nil || got.Agent != "deployer" || got.ActionKey != "scale_service" || got.By != alice ||
		got.FromRequest != "origin-1" || got.Comment != "deploys today" || !got.RevokedAt.IsZero() {
		t.Fatalf("GetGrant = %+v, %v", got, err)
	}
	// A later expiry than g's: the list is soonest to expire first, and
	// two grants made in the same millisecond would tie.
	other := f.mustGrant(t, "reporter", "send_report", time.Hour+time.Minute)
	for _, q := range []struct {
		agent string
		want  []string
	}{{"deployer", []string{g.ID}}, {"reporter", []string{other.ID}}, {"", []string{g.ID, other.ID}}, {"nobody", nil}} {
		list, err := f.s.Grants(f.ctx, q.agent)
		if err != nil || fmt.Sprint(grantIDs(list)) != fmt.Sprint(q.want) {
			t.Errorf("Grants(%q) = %v, %v; want %v", q.agent, grantIDs(list), err, q.want)
		}
	}

	// One request per shard: the grant is live in every one.
	for shard := range store.Shards {
		id := idsInShard("match", shard, 1)[0]
		rec := f.createMatching(t, id, "deployer", "scale_service")
		if rec.Status != aah.StatusResolved || rec.Answers["d1"].Grant == nil || rec.Answers["d1"].Grant.ID != g.ID {
			t.Fatalf("shard %d: created %s as %s, answers %+v; want resolved by %s", shard, id, rec.Status, rec.Answers, g.ID)
		}
		if got := f.mustGet(t, id); got.Status != aah.StatusResolved || len(got.Response) == 0 {
			t.Fatalf("shard %d: stored as %s (response %d bytes); want resolved with it", shard, got.Status, len(got.Response))
		}
	}
	// The audit holds the create and the resolution, in order.
	id := idsInShard("match", 3, 1)[0]
	entries, err := f.s.Audit(f.ctx, id)
	if err != nil || len(entries) != 2 || entries[0].Event != "requested" || entries[1].Event != "resolved" || entries[1].Data["grant"] != g.ID {
		t.Errorf("audit of %s = %+v, %v; want requested, resolved by the grant", id, entries, err)
	}
	// Its timers and open indexes went with the close, its post stayed
	// (the notice is posted instead of the request).
	page, err := f.s.ListOpen(f.ctx, store.OpenQuery{Kind: store.OpenAll, Limit: 100, Now: f.clk.Now()})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("open requests = %d, %v; want none", len(page.Items), err)
	}
	// Another agent, another key: pending as usual.
	if rec := f.createMatching(t, "other-agent", "reporter", "scale_service"); rec.Status != aah.StatusPending {
		t.Errorf("another agent's request: %s; want pending", rec.Status)
	}
	if rec := f.createMatching(t, "other-key", "deployer", "drop_table"); rec.Status != aah.StatusPending {
		t.Errorf("another action key: %s; want pending", rec.Status)
	}

	// Revoked: recorded, listed nowhere, matched nowhere.
	f.clk.Advance(time.Minute)
	bob := aah.Person{ID: "U0BOB", Name: "Bob"}
	rev, already, err := f.s.RevokeGrant(f.ctx, g.ID, bob)
	if err != nil || already || rev.RevokedBy == nil || *rev.RevokedBy != bob || rev.RevokedAt.IsZero() {
		t.Fatalf("RevokeGrant = %+v, already %v, %v", rev, already, err)
	}
	if again, already, err := f.s.RevokeGrant(f.ctx, g.ID, alice); err != nil || !already || *again.RevokedBy != bob {
		t.Errorf("second RevokeGrant = %+v, already %v, %v; want Bob's revocation kept, already", again, already, err)
	}
	if list, _ := f.s.Grants(f.ctx, "deployer"); len(list) != 0 {
		t.Errorf("Grants(deployer) after revoke = %v; want none", grantIDs(list))
	}
	for shard := range store.Shards {
		id := idsInShard("after-revoke", shard, 1)[0]
		if rec := f.createMatching(t, id, "deployer", "scale_service"); rec.Status != aah.StatusPending {
			t.Fatalf("shard %d: created after the revoke as %s; want pending", shard, rec.Status)
		}
	}
	if _, _, err := f.s.RevokeGrant(f.ctx, "grant_nope", bob); !errors.Is(err, store.ErrGrantNotFound) {
		t.Errorf("RevokeGrant(unknown) = %v; want ErrGrantNotFound", err)
	}
	if _, err := f.s.GetGrant(f.ctx, "grant_nope"); !errors.Is(err, store.ErrGrantNotFound) {
		t.Errorf("GetGrant(unknown) = %v; want ErrGrantNotFound", err)
	}
}

func grantIDs(list []store.Grant) []string {
	var out []string
	for _, g := range list {
		out = append(out, g.ID)
	}
	return out
}

// A grant expires by the store's clock: matched until its last
// millisecond, then matched nowhere, listed nowhere, and gone from Redis.
func TestGrantsExpire(t *testing.T) {
	t.Parallel()
	for name, newBackend := range expiringBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			f := fixture{s: b.s, ctx: testCtx(t)}
			ttl := time.Hour
			if !b.exact {
				ttl = 300 * time.Millisecond // the wall clock: only "eventually gone" can be checked
			}
			g := f.mustGrant(t, "deployer", "scale_service", ttl)
			if b.exact {
				b.pass(t, ttl-time.Millisecond, "a millisecond before its expiry the grant matches", func() bool {
					return f.createMatching(t, "before-expiry", "deployer", "scale_service").Status == aah.StatusResolved
				})
			}
			b.pass(t, ttl, "after its expiry the grant is listed nowhere", func() bool {
				list, err := f.s.Grants(f.ctx, "")
				return err == nil && len(list) == 0
			})
			if _, err := f.s.GetGrant(f.ctx, g.ID); !errors.Is(err, store.ErrGrantNotFound) {
				t.Errorf("GetGrant after expiry = %v; want ErrGrantNotFound", err)
			}
			for shard := range store.Shards {
				id := idsInShard("expired", shard, 1)[0]
				if rec := f.createMatching(t, id, "deployer", "scale_service"); rec.Status != aah.StatusPending {
					t.Fatalf("shard %d: created after expiry as %s; want pending", shard, rec.Status)
				}
			}
			if _, _, err := f.s.RevokeGrant(f.ctx, g.ID, alice); !errors.Is(err, store.ErrGrantNotFound) {
				t.Errorf("RevokeGrant after expiry = %v; want ErrGrantNotFound", err)
			}
		})
	}
}

// Every key of a grant is gone from Redis once it expired (embedded store,
// exact clock): records, indexes, copies and tombstones.
func TestGrantKeysGoAfterExpiry(t *testing.T) {
	t.Parallel()
	clk := newClock()
	rdb, prefix := redistest.Embedded(t, clk.Now)
	s := mustNew(t, rdb, store.Options{Now: clk.Now, Prefix: prefix})
	f := fixture{s: s, clk: clk, ctx: testCtx(t)}
	live := f.mustGrant(t, "deployer", "scale_service", time.Hour)
	revoked := f.mustGrant(t, "deployer", "drop_table", 2*time.Hour)
	if _, _, err := s.RevokeGrant(f.ctx, revoked.ID, alice); err != nil {
		t.Fatal(err)
	}
	if n := len(redistest.Keys(t, rdb, prefix+":*grant*")); n < 2*store.Shards {
		t.Fatalf("grant keys = %d; want at least the copies of both", n)
	}
	clk.Advance(time.Hour)
	if keys := redistest.Keys(t, rdb, prefix+":*grant:"+live.ID); len(keys) != 0 {
		t.Errorf("keys of the expired grant: %v; want none", keys)
	}
	clk.Advance(time.Hour)
	if keys := redistest.Keys(t, rdb, prefix+":*grant*"); len(keys) != 0 {
		t.Errorf("grant keys after both expired: %v; want none", keys)
	}
}

// Once RevokeGrant returns, no request created afterwards resolves by the
// grant, however many creates race it: 30 intakes create requests in
// every shard while the grant is revoked in the middle of them. Every
// create that started after the revoke returned is pending; every one
// that finished before the revoke started resolved by it.
func TestRevokeRacingCreates(t *testing.T) {
	t.Parallel()
	for name, b := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			g := f.mustGrant(t, "deployer", "scale_service", time.Hour)
			const workers, each = 30, 6
			var revokeStarted, revokeReturned atomic.Bool
			startRevoke := make(chan struct{})
			var done atomic.Int32
			revoked := make(chan struct{})
			type result struct {
				id                           string
				startedAfter, finishedBefore bool
				status                       aah.Status
				err                          error
			}
			results := make(chan result, workers*(each+1))
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range each + 1 {
						if k == each {
							<-revoked // one more each once the revoke returned: the race's far side
						}
						r := result{id: fmt.Sprintf("race-%d-%d", w, k), startedAfter: revokeReturned.Load()}
						n := newReq(r.id, "deployer")
						n.MatchGrants = resolveByKey("scale_service")
						rec, _, err := f.s.Create(f.ctx, n)
						r.finishedBefore = !revokeStarted.Load()
						r.status, r.err = rec.Status, err
						results <- r
						if done.Add(1) == workers*each/3 {
							close(startRevoke)
						}
					}
				}()
			}
			<-startRevoke
			revokeStarted.Store(true)
			if _, _, err := f.s.RevokeGrant(f.ctx, g.ID, alice); err != nil {
				t.Fatal(err)
			}
			revokeReturned.Store(true)
			close(revoked)
			wg.Wait()
			close(results)
			var before, after int
			for r := range results {
				switch {
				case r.err != nil:
					t.Errorf("Create(%s): %v", r.id, r.err)
				case r.startedAfter && r.status != aah.StatusPending:
					t.Errorf("%s started after the revoke returned and is %s; want pending", r.id, r.status)
				case r.finishedBefore && r.status != aah.StatusResolved:
					t.Errorf("%s finished before the revoke started and is %s; want resolved", r.id, r.status)
				}
				if r.startedAfter {
					after++
				}
				if r.finishedBefore {
					before++
				}
			}
			// The race must have been run on both sides, or it proves nothing.
			if before == 0 || after == 0 {
				t.Errorf("%d creates finished before the revoke, %d started after it; want some of each", before, after)
			}
		})
	}
}
