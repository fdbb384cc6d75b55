package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// approvalbot audit verify passes on intact chains and names the first bad
// entry of a tampered one. (Not parallel: it sets environment variables.)
func TestAuditVerifyCommand(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	testAuditVerify(t, rdb, redistest.URL(t), prefix)
}

// audit verify reaches a master through Sentinel too (a Cluster is the
// test above, under REDIS_CLUSTER_ADDRS). Skipped without redis-server.
func TestAuditVerifyCommandThroughSentinel(t *testing.T) {
	master := redistest.StartServer(t, "")
	sentinel := redistest.StartServer(t, fmt.Sprintf("sentinel monitor m1 127.0.0.1 %d 1\n", master.Port), "--sentinel")
	rdb := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer rdb.Close()
	testAuditVerify(t, rdb, "redis+sentinel://"+sentinel.Addr+"/m1/0", "sentinel")
}

// testAuditVerify runs the command with REDIS_URL=redisURL on chains it
// writes through rdb, the same Redis.
func testAuditVerify(t *testing.T, rdb redis.UniversalClient, redisURL, prefix string) {
	t.Setenv("REDIS_URL", redisURL)
	t.Setenv("REDIS_PREFIX", prefix)
	t.Setenv("AUDIT_KEY", "cli-test-key")
	t.Setenv("SLACK_BOT_TOKEN", "")
	ctx := context.Background()
	st, err := store.New(rdb, store.Options{Prefix: prefix, AuditKey: []byte("cli-test-key")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id := fmt.Sprintf("cli-%d", i)
		if _, _, err := st.Create(ctx, store.NewRequest{ID: id, Agent: "pm", Document: []byte(`{}`), BodyHash: id, Channel: "C1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := approval.New(st, approval.Options{}).Withdraw(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := auditVerify(ctx, &out); err != nil || !strings.Contains(out.String(), "3 request chains, 6 entries: 0 problems") {
		t.Fatalf("intact chains: %v\n%s", err, out.String())
	}

	// Rewrite the withdrawal of cli-1 as if it never happened.
	key := ""
	for shard := range store.Shards {
		k := fmt.Sprintf("%s:{s%02d}:audit:cli-1", prefix, shard)
		if n, _ := rdb.Exists(ctx, k).Result(); n == 1 {
			key = k
		}
	}
	raw, _ := rdb.LIndex(ctx, key, 1).Result()
	rdb.LSet(ctx, key, 1, strings.Replace(raw, `"withdrawn"`, `"posted"`, 1))
	out.Reset()
	err = auditVerify(ctx, &out)
	if err == nil || !strings.Contains(out.String(), "BROKEN: audit chain of request cli-1 is broken at entry 2") {
		t.Errorf("tampered chain: err=%v\n%s", err, out.String())
	}
}
