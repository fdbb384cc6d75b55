package faults

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// figures are what one scenario reports; only correctness is asserted.
type figures struct {
	scenario string
	requests int
	kills    int           // SIGKILLs of a bot (or, for redis, freezes and kills of Redis)
	ready    time.Duration // longest kill → restarted process ready
	done     time.Duration // last kill → every pending job done
	clicks   int           // Slack interactions acked
	past3s   int           // of which acked after Slack's 3 s
	intake   time.Duration // slowest intake answer (2xx or 503)
	retries  int           // intake tries answered 503 or that reached no bot
	dupSeen  int           // request messages Slack accepted beyond one per request
	dupFinal int           // request messages beyond one per request at the end
	dupRes   int           // "resolved" audit entries beyond one per request
	redeliv  int           // callback deliveries beyond one per request
	lost     int           // acknowledged requests missing at the end
	replays  int           // signed Slack requests replayed
	lastKill time.Time
}

// killed notes a kill at t, and the restart ready at ready.
func (f *figures) killed(at, ready time.Time) {
	f.kills++
	f.lastKill = at
	f.ready = max(f.ready, ready.Sub(at))
}

// waitUntil polls cond (every 5 ms) until it holds.
func (w *world) waitUntil(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("waited %v for %s", guard, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitIdle waits until no job is in flight and none is due within a minute
// (timers due later, reminders and deadlines, are not pending work), on
// two snapshots in a row, each one MULTI over every shard's outbox: read
// one by one, a job claimed between the two reads would be in neither.
func (w *world) waitIdle() {
	w.t.Helper()
	deadline := time.Now().Add(guard)
	for quiet := 0; quiet < 2; {
		due, inflight, err := w.outbox()
		if err == nil && due == 0 && inflight == 0 {
			quiet++
			continue
		}
		quiet = 0
		if time.Now().After(deadline) {
			w.t.Fatalf("outbox still busy after %v: %d due, %d in flight (%v)", guard, due, inflight, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *world) outbox() (due, inflight int64, err error) {
	until := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	var dues, inflights []*redis.IntCmd
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = w.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range store.Shards {
			slot := fmt.Sprintf("ab:{s%02d}:jobs:", shard)
			dues = append(dues, p.ZCount(ctx, slot+"due", "-inf", until))
			inflights = append(inflights, p.ZCard(ctx, slot+"inflight"))
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	for i := range dues {
		due += dues[i].Val()
		inflight += inflights[i].Val()
	}
	return due, inflight, nil
}

// waitDone waits until every acknowledged request has its message, each
// resolved one shows it and has been called back, and the outbox is idle
// (so the sweeps that delete duplicates have run). It sets f.done.
func (w *world) waitDone(f *figures) {
	w.t.Helper()
	var missing string
	deadline := time.Now().Add(guard)
	for {
		if missing = w.pending(); missing == "" {
			break
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("waited %v for every request to be posted, and resolved ones updated and called back: %s", guard, missing)
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.waitIdle()
	if !f.lastKill.IsZero() {
		f.done = time.Since(f.lastKill)
	}
}

// pending says what is not done yet: a request without its message, or a
// resolved one whose message does not show it or that was not called back.
func (w *world) pending() string {
	if n := w.slackInflight.Load(); n > 0 {
		return fmt.Sprintf("%d delayed Slack calls still to act", n)
	}
	msgs := w.messagesByRequest()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.order {
		r := w.reqs[id]
		if !r.acked {
			continue
		}
		m := msgs[id]
		switch {
		case len(m) == 0:
			return id + " has no message"
		case !r.resolve:
		case !strings.HasPrefix(m[0].Text, "Resolved"):
			return fmt.Sprintf("%s: %d message(s), the first not showing the resolution: %q", id, len(m), m[0].Text)
		case len(w.recv.deliveries(id)) == 0:
			return id + " not called back"
		}
	}
	return ""
}

// check asserts the invariants of every request and fills in the figures.
func (w *world) check(f *figures) {
	w.t.Helper()
	msgs := w.messagesByRequest()
	w.mu.Lock()
	ids := append([]string(nil), w.order...)
	posts := map[string]int{}
	for k, v := range w.posts {
		posts[k] = v
	}
	for _, d := range w.clickAck {
		f.clicks++
		if d > 3*time.Second {
			f.past3s++
		}
	}
	for _, d := range w.intake {
		f.intake = max(f.intake, d)
	}
	f.retries = w.retries
	w.mu.Unlock()
	f.requests = len(ids)
	for _, id := range ids {
		r := w.reqs[id]
		if !r.acked {
			w.t.Errorf("%s: never acknowledged", id)
			continue
		}
		code, view := w.get(id)
		if code != http.StatusOK {
			f.lost++
			w.t.Errorf("%s: acknowledged, then GET answers %d: lost", id, code)
			continue
		}
		f.dupSeen += max(posts[id]-1, 0)
		f.dupFinal += max(len(msgs[id])-1, 0)
		if len(msgs[id]) != 1 {
			w.t.Errorf("%s: %d messages in Slack, want exactly 1", id, len(msgs[id]))
		}
		wantStatus := "pending"
		if r.resolve {
			wantStatus = "resolved"
		}
		if view["status"] != wantStatus {
			w.t.Errorf("%s: status %v, want %s", id, view["status"], wantStatus)
		}
		if len(msgs[id]) > 0 && strings.HasPrefix(msgs[id][0].Text, "Resolved") != r.resolve {
			w.t.Errorf("%s: the message does not show its final state (%s): %q", id, wantStatus, msgs[id][0].Text)
		}
		_, audit := w.get(id + "/audit")
		if audit["verified"] != true {
			w.t.Errorf("%s: audit chain does not verify: %v", id, audit)
		}
		resolutions := 0
		entries, _ := audit["entries"].([]any)
		for _, e := range entries {
			if e.(map[string]any)["event"] == "resolved" {
				resolutions++
			}
		}
		f.dupRes += max(resolutions-1, 0)
		if want := map[bool]int{true: 1, false: 0}[r.resolve]; resolutions != want {
			w.t.Errorf("%s: %d resolutions in the audit, want %d", id, resolutions, want)
		}
		w.checkCallback(f, id, r.resolve, view)
	}
}

// checkCallback: a resolved request was delivered, every delivery signed
// correctly, all with the one webhook-id and body the bot reports.
func (w *world) checkCallback(f *figures, id string, resolved bool, view map[string]any) {
	got := w.recv.deliveries(id)
	if !resolved {
		if len(got) != 0 {
			w.t.Errorf("%s: called back %d times but not resolved", id, len(got))
		}
		return
	}
	cb, _ := view["callback"].(map[string]any)
	if cb["state"] != "delivered" || len(got) == 0 {
		w.t.Errorf("%s: callback %v, %d deliveries received; want delivered", id, cb["state"], len(got))
		return
	}
	f.redeliv += len(got) - 1
	ids, bodies := map[string]bool{}, map[string]bool{}
	for _, d := range got {
		if !d.valid {
			w.t.Errorf("%s: a delivery's signature does not verify", id)
		}
		ids[d.webhookID], bodies[d.bodyHash] = true, true
	}
	if len(ids) != 1 || len(bodies) != 1 || !ids[fmt.Sprint(cb["webhook_id"])] {
		w.t.Errorf("%s: deliveries carry %d webhook-ids and %d bodies (want 1 and 1, id %v): %+v",
			id, len(ids), len(bodies), cb["webhook_id"], got)
	}
}
