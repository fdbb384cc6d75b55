package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// The bot on a Sentinel-managed master (REDIS_URL=redis+sentinel://…) keeps
// working when the master dies, without a restart, and loses nothing that
// had reached the replica: a master and its replica, one Sentinel (enough
// to promote; production runs three), the bot through bot.OpenRedis as
// main opens it. Before the kill it posts requests and resolves one; it
// waits until the replica has every write the master acknowledged (Redis
// replicates asynchronously: a write acknowledged but not yet replicated
// when the master dies is lost, see docs/deploy.md), kills the master with
// SIGKILL and waits for the Sentinel to promote the replica. Then every
// request reads as it was, with intact audit chains, a pending one can be
// answered, a new one is posted and resolved, and every message was posted
// exactly once. Skipped without redis-server on PATH (a Sentinel is
// redis-server --sentinel) and under -short.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a master, a replica and a Sentinel and waits for a failover")
	}
	t.Parallel()
	ctx := ctxTimeout(t, 5*guard)
	master := redistest.StartServer(t, "")
	replica := redistest.StartServer(t, "", "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	replicaClient := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer replicaClient.Close()
	eventually(t, "the replica's link to the master is up", func() bool {
		return infoField(ctx, replicaClient, "replication", "master_link_status") == "up"
	})
	const name = "approvalbot"
	sentinel := redistest.StartServer(t, fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %s 500\nsentinel failover-timeout %s 10000\n", name, master.Port, name, name),
		"--sentinel")
	sentinelClient := redis.NewSentinelClient(&redis.Options{Addr: sentinel.Addr})
	defer sentinelClient.Close()
	// A Sentinel promotes only a replica it knows of; it learns of them
	// from the master's INFO.
	eventually(t, "the Sentinel knows the replica", func() bool {
		replicas, err := sentinelClient.Replicas(ctx, name).Result()
		return err == nil && len(replicas) == 1 && replicas[0]["port"] == strconv.Itoa(replica.Port)
	})

	rdb, closeRedis, err := bot.OpenRedis(ctx, bot.Config{RedisURL: "redis+sentinel://" + sentinel.Addr + "/" + name + "/0"},
		testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeRedis)
	if _, ok := rdb.(*redis.Client); !ok {
		t.Fatalf("client %T; want go-redis's failover client (a *redis.Client)", rdb)
	}
	h := newHarnessOn(t, rdb, "failover", slackemu.New(slackemu.Options{}))
	h.startJobs()
	withReviewers := func(id string) []byte {
		return exampleWith(t, id, func(doc map[string]any) {
			doc["extensions"] = map[string]any{"slack": map[string]any{"reviewers": []string{alice.id}}}
		})
	}
	// Approve all, then submit (the other decisions take their defaults).
	resolve := func(id string) {
		t.Helper()
		ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionApproveAll, blocks.RequestScope)))
		ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	}
	resolved := h.postAndWait(withReviewers("before-resolved"))
	resolve(resolved)
	pending := h.postAndWait(withReviewers("before-pending"))
	h.waitIdle()
	auditLen := map[string]int{resolved: auditOf(t, h, resolved), pending: auditOf(t, h, pending)}

	// Every write acknowledged so far is on the replica: its offset reached
	// the master's (read after the writes, so it covers all of them).
	masterClient := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer masterClient.Close()
	acked, err := strconv.ParseInt(infoField(ctx, masterClient, "replication", "master_repl_offset"), 10, 64)
	if err != nil {
		t.Fatalf("master_repl_offset: %v", err)
	}
	eventually(t, "the replica has every acknowledged write", func() bool {
		got, err := strconv.ParseInt(infoField(ctx, replicaClient, "replication", "slave_repl_offset"), 10, 64)
		return err == nil && got >= acked
	})

	master.Kill()
	eventually(t, "the Sentinel promotes the replica", func() bool {
		addr, err := sentinelClient.GetMasterAddrByName(ctx, name).Result()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.Port) &&
			infoField(ctx, replicaClient, "replication", "role") == "master"
	})

	// Until the client has moved to the new master, the API answers 503
	// with Retry-After (its commands fail fast, never 500): an agent retries.
	eventually(t, "the API answers again after the failover", func() bool {
		r := h.do(http.MethodGet, "/v1/requests/"+resolved, tokenPM, "", nil)
		if r.Status != http.StatusOK && r.Status != http.StatusServiceUnavailable {
			t.Fatalf("GET during the failover: %d %s; want 200, or 503 while it moves", r.Status, r.Body)
		}
		return r.Status == http.StatusOK
	})
	// Nothing acknowledged is lost, and the chains still verify.
	if got := h.get(resolved); got["status"] != string(aah.StatusResolved) {
		t.Errorf("%s after failover: status %v; want resolved", resolved, got["status"])
	}
	if got := h.get(pending); got["status"] != string(aah.StatusPending) {
		t.Errorf("%s after failover: status %v; want pending", pending, got["status"])
	}
	for id, n := range auditLen {
		if got := auditOf(t, h, id); got != n {
			t.Errorf("%s: %d audit entries after failover; want the %d before", id, got, n)
		}
	}
	// The same process, never restarted, keeps working: it answers the
	// pending request and posts and resolves a new one. For up to a second
	// after the failover a write may still fail, as an agent and a
	// reviewer are told: dials failed while no master answered, and
	// go-redis's pool then fails new connections at once until its probe,
	// once a second, reaches the new master. The agent resubmits the
	// identical body on 503 and the reviewer clicks again, as told.
	var after string
	eventually(t, "the API accepts a request again", func() bool {
		r := h.post(withReviewers("after"))
		switch r.Status {
		case http.StatusAccepted, http.StatusOK:
			after = r.json(t)["id"].(string)
			return true
		case http.StatusServiceUnavailable:
			return false
		}
		t.Fatalf("POST after the failover: %d %s; want 202, or 503 while the client moves", r.Status, r.Body)
		return false
	})
	for _, id := range []string{pending, after} {
		eventually(t, id+" is posted and resolved by clicks", func() bool {
			if rec, err := h.store.Get(ctx, id); err != nil || !rec.Posted() {
				return false
			}
			resolve(id)
			return h.get(id)["status"] == string(aah.StatusResolved)
		})
	}
	h.waitIdle()
	for _, id := range []string{pending, after} {
		if got := h.get(id); got["status"] != string(aah.StatusResolved) {
			t.Errorf("%s: status %v after failover; want resolved", id, got["status"])
		}
	}
	if n := len(h.emu.CallsTo("chat.postMessage")); n != 3 {
		t.Errorf("%d messages posted for 3 requests: a failover must not post twice or drop a post", n)
	}
}

// auditOf is the length of the request's audit chain, which must verify.
func auditOf(t *testing.T, h *harness, id string) int {
	t.Helper()
	r := h.do(http.MethodGet, "/v1/requests/"+id+"/audit", tokenPM, "", nil)
	m := r.json(t)
	if r.Status != http.StatusOK || m["verified"] != true {
		t.Fatalf("audit of %s: %d %s", id, r.Status, r.Body)
	}
	return len(m["entries"].([]any))
}

// infoField is one field of a section of INFO, or "" if unreadable (the
// callers poll until it says what they wait for).
func infoField(ctx context.Context, rdb *redis.Client, section, field string) string {
	info, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
