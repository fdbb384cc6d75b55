package faults

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// size is how hard a run pushes: the reduced form (go test ./...) or the
// full one (FAULTS=full).
type size struct {
	full     bool
	requests int // per scenario
	kills    int // per kill scenario
}

func sizeFromEnv() size {
	if os.Getenv("FAULTS") == "full" {
		guard = 15 * time.Minute
		return size{full: true, requests: 60, kills: 3}
	}
	return size{requests: 8, kills: 1}
}

type scenario struct {
	name string
	run  func(w *world, sz size, f *figures)
}

var scenarios = []scenario{
	{"intake", intakeKills},
	{"posting", postingKills},
	{"callbacks", callbackKills},
	{"redis", redisFreezeAndRestart},
	{"slack-after-effect", slackFailsAfterActing},
	{"slack-late", slackActsLate},
	{"replays", replays},
}

// TestFaults runs every scenario, then checks the invariants of every
// request and replays every signed Slack request of the scenario (see the
// package doc). The reduced form runs the scenarios in parallel; the full
// one runs them one after another, so that their timings do not mix, and
// prints the figures.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault suite runs the real binary and real Redis: not in -short")
	}
	sz := sizeFromEnv()
	approvalbotBinary(t)
	results := make([]*figures, len(scenarios))
	t.Run("scenarios", func(t *testing.T) {
		for i, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				if !sz.full {
					t.Parallel()
				}
				w := newWorld(t)
				f := &figures{scenario: sc.name}
				sc.run(w, sz, f)
				w.waitDone(f)
				w.check(f)
				f.replays = w.replay()
				w.auditVerify()
				results[i] = f
			})
		}
	})
	t.Log("\n" + table(results, sz))
}

// intakeKills: agents submit at once; the bot is SIGKILLed as the k-th
// share of them has been acknowledged, others in flight, and restarted;
// the agents resubmit whatever was not acknowledged, with the same ids.
func intakeKills(w *world, sz size, f *figures) {
	b := w.startBot("bot")
	ids := w.newRequests("intake", sz.requests*2, false)
	acked := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		for _, r := range w.reqs {
			if r.acked {
				n++
			}
		}
		return n
	}
	wg := w.submitAll(ids, 8)
	for k := 1; k <= sz.kills; k++ {
		w.waitUntil("acknowledgements before the kill", func() bool { return acked() >= k*len(ids)/(sz.kills+1) })
		at := time.Now()
		b.kill()
		b.start()
		f.killed(at, time.Now())
	}
	wg.Wait()
}

// postingKills: Slack answers chat.postMessage 1.5 s late, so posts are in
// flight when one of two bots is SIGKILLed; those posts reach Slack after
// their worker died, unrecorded. The other bot, or the restarted one, takes
// the jobs over once their lease runs out and must adopt what it finds.
func postingKills(w *world, sz size, f *figures) {
	bots := []*botProc{w.startBot("bot-a"), w.startBot("bot-b")}
	w.slackDelay.Store("chat.postMessage", 1500*time.Millisecond)
	ids := w.newRequests("post", sz.requests*2, false)
	w.submitAll(ids, 8).Wait()
	for k := 1; k <= sz.kills; k++ {
		w.waitUntil("posts in flight", func() bool {
			w.mu.Lock()
			n := len(w.posts)
			w.mu.Unlock()
			// Kill anyway once every request has reached Slack: nothing is
			// left to catch in flight.
			return w.slackInflight.Load() > 0 && n >= (k-1)*len(ids)/sz.kills/2 || n == len(ids)
		})
		b := bots[k%2]
		at := time.Now()
		b.kill()
		if k == sz.kills {
			w.slackDelay.Store("chat.postMessage", time.Duration(0))
		}
		b.start()
		f.killed(at, time.Now())
	}
}

// callbackKills: the agents' endpoint answers 1.5 s late, and the bot is
// SIGKILLed while deliveries are in flight; they are redelivered (with the
// same webhook-id) after the restart.
func callbackKills(w *world, sz size, f *figures) {
	b := w.startBot("bot")
	ids := w.newRequests("cb", sz.requests, true)
	w.submitAll(ids, 8).Wait()
	w.waitUntil("every request posted", func() bool { return w.posted(ids) })
	w.recv.delay.Store(int64(1500 * time.Millisecond))
	wg := w.resolveAll(ids, 4)
	for k := 1; k <= sz.kills; k++ {
		w.waitUntil("deliveries in flight", func() bool {
			return w.recv.inflight.Load() > 0 && w.recv.total() >= (k-1)*len(ids)/sz.kills || w.recv.reached() == len(ids)
		})
		at := time.Now()
		b.kill()
		if k == sz.kills {
			w.recv.delay.Store(0)
		}
		b.start()
		f.killed(at, time.Now())
	}
	wg.Wait()
}

// redisFreezeAndRestart: with two bots running, Redis is frozen (SIGSTOP)
// for 5 s while agents submit and reviewers click, then thawed; later it is
// SIGKILLed while agents submit and restarted on the same port and
// directory 2 s later. The bots are never restarted. Its "kill→ready" is
// from the thaw or the restart of Redis to both bots' /readyz answering 200.
func redisFreezeAndRestart(w *world, sz size, f *figures) {
	bots := []*botProc{w.startBot("bot-a"), w.startBot("bot-b")}
	for round := 0; round < max(sz.kills-1, 1); round++ {
		first := w.newRequests(fmt.Sprintf("freeze%d-a", round), sz.requests/2, true)
		second := w.newRequests(fmt.Sprintf("freeze%d-b", round), sz.requests/2, false)
		w.submitAll(first, 8).Wait()
		w.waitUntil("the first half posted", func() bool { return w.posted(first) })

		w.redisOutage.Store(true)
		signal(w, syscall.SIGSTOP)
		var wg sync.WaitGroup
		wg.Go(func() { w.submitAll(second, 8).Wait() })
		wg.Go(func() { w.resolveAll(first, 8).Wait() })
		time.Sleep(5 * time.Second) // the fault's length
		signal(w, syscall.SIGCONT)
		at := time.Now()
		w.botsReady()
		f.killed(at, time.Now())
		wg.Wait()
		w.redisOutage.Store(false)

		third := w.newRequests(fmt.Sprintf("restart%d", round), sz.requests/2, false)
		w.redisOutage.Store(true)
		w.redis.Kill()
		wg.Go(func() { w.submitAll(third, 8).Wait() })
		time.Sleep(2 * time.Second) // the outage's length
		w.redis.Restart(w.t)
		at = time.Now()
		w.botsReady()
		f.killed(at, time.Now())
		wg.Wait()
		w.redisOutage.Store(false)
	}
	for _, b := range bots {
		if b.runs != 1 || !b.alive() {
			w.t.Errorf("%s was restarted or died (%d runs): it must ride out Redis's outages", b.name, b.runs)
		}
	}
}

// botsReady waits until every bot answers /readyz with 200.
func (w *world) botsReady() {
	w.t.Helper()
	for _, b := range w.bots {
		b.mu.Lock()
		done := b.done
		b.mu.Unlock()
		b.waitReady(done)
	}
}

// posted reports whether every one of ids has a message in Slack.
func (w *world) posted(ids []string) bool {
	msgs := w.messagesByRequest()
	for _, id := range ids {
		if len(msgs[id]) == 0 {
			return false
		}
	}
	return true
}

func signal(w *world, sig syscall.Signal) {
	if err := syscall.Kill(w.redis.Pid(), sig); err != nil {
		w.t.Fatalf("signal redis-server: %v", err)
	}
}

// slackFailsAfterActing: chat.postMessage and chat.update take effect and
// then answer 502/503 or drop the connection.
func slackFailsAfterActing(w *world, sz size, f *figures) {
	w.startBot("bot")
	n := max(sz.requests/4, 1)
	w.emu.InjectFailAfterEffect("chat.postMessage", http.StatusBadGateway, n)
	w.emu.InjectFailAfterEffect("chat.postMessage", 0, n)
	w.emu.InjectFailAfterEffect("chat.update", http.StatusServiceUnavailable, n)
	w.emu.InjectFailAfterEffect("chat.update", 0, n)
	ids := w.newRequests("after", sz.requests, true)
	w.submitAll(ids, 8).Wait()
	w.waitUntil("every request posted", func() bool { return w.posted(ids) })
	w.resolveAll(ids, 4).Wait()
}

// slackActsLate: the first post of every request reaches Slack 6 s late,
// after the bot stopped waiting for it (3/4 of its 5 s lease): the retry
// finds nothing yet and posts again, then the late one lands. Slack shows
// two messages until the sweep, one lease after the message was recorded,
// deletes the one not recorded (architecture.md: "Not guaranteed").
func slackActsLate(w *world, sz size, f *figures) {
	w.startBot("bot")
	ids := w.newRequests("late", sz.requests, false)
	w.lateFirst.Store(int32(len(ids)))
	w.submitAll(ids, 8).Wait()
}

// replays: a comment dialog, a slash command and the approving click for
// every request, then the bot is SIGKILLed and restarted: the replays
// (TestFaults sends them after every scenario) reach a process that never
// saw the originals.
func replays(w *world, sz size, f *figures) {
	b := w.startBot("bot")
	ids := w.newRequests("replay", sz.requests, true)
	w.submitAll(ids, 8).Wait()
	w.waitUntil("every request posted", func() bool { return w.posted(ids) })
	for i, id := range ids {
		if status, body, _ := w.sendSlack(b, "/slack/interactions", commentBody(id, fmt.Sprint("comment ", i))); status != http.StatusOK {
			w.t.Fatalf("comment on %s: %d %s", id, status, body)
		}
		if status, body, _ := w.sendSlack(b, "/slack/commands", w.slashBody()); status != http.StatusOK || len(body) == 0 {
			w.t.Fatalf("/approvals all: %d %s", status, body)
		}
	}
	w.resolveAll(ids, 4).Wait()
	w.waitIdle()
	at := time.Now()
	b.kill()
	b.start()
	f.killed(at, time.Now())
}

// table formats the figures as BENCHMARKS.md records them.
func table(results []*figures, sz size) string {
	var s strings.Builder
	form := "reduced"
	if sz.full {
		form = "full"
	}
	fmt.Fprintf(&s, "Fault suite (%s form), %s\n", form, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	s.WriteString("| scenario | requests | kills | kill→ready (max) | last kill→all done | Slack acks (past 3 s) | intake retries | slowest intake answer | duplicate posts seen / final | duplicate resolutions | callback redeliveries | lost acknowledged | replays |\n")
	s.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range results {
		if f == nil {
			continue
		}
		fmt.Fprintf(&s, "| %s | %d | %d | %s | %s | %d (%d) | %d | %s | %d / %d | %d | %d | %d | %d |\n",
			f.scenario, f.requests, f.kills, round(f.ready), round(f.done), f.clicks, f.past3s, f.retries, round(f.intake),
			f.dupSeen, f.dupFinal, f.dupRes, f.redeliv, f.lost, f.replays)
	}
	return s.String()
}

func round(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return d.Round(10 * time.Millisecond).String()
}
