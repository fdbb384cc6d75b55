package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// auditFixture is a store with an audit key and a request with a few events.
func auditFixture(t *testing.T, key string) (*store.Store, string, func(string) string) {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	st, err := store.New(rdb, store.Options{Prefix: prefix, AuditKey: []byte(key)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := "audited-1"
	if _, _, err := st.Create(ctx, newReq(id, "agent")); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkPosted(ctx, id, "C1", "1.1", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.New(st, approval.Options{}).Withdraw(ctx, id); err != nil {
		t.Fatal(err)
	}
	keyOf := func(name string) string {
		return fmt.Sprintf("%s:{s%02d}:%s", prefix, shardOf(id), name)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return st, id, keyOf
}

func TestAuditChainsVerify(t *testing.T) {
	t.Parallel()
	st, id, _ := auditFixture(t, "k1")
	entries, err := st.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, e := range entries {
		events = append(events, e.Event)
	}
	if fmt.Sprint(events) != "[requested posted withdrawn]" || entries[0].Actor != "agent:agent" {
		t.Errorf("events = %v (actor %q)", events, entries[0].Actor)
	}
	if err := st.VerifyChain("request "+id, entries); err != nil {
		t.Error(err)
	}
	rep, err := st.VerifyAll(context.Background())
	if err != nil || len(rep.Problems) != 0 || rep.Requests != 1 || rep.Entries != 3 {
		t.Errorf("VerifyAll = %+v, %v", rep, err)
	}
}

// Changing, removing or forging an entry is caught, naming the first bad one.
func TestAuditChainsDetectTampering(t *testing.T) {
	t.Parallel()
	for name, wantSeq := range map[string]int64{"modified": 2, "removed": 2, "forged without the key": 2} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st, id, keyOf := auditFixture(t, "secret-key")
			rdb, _ := redistest.Client(t)
			ctx := context.Background()
			reqKey := keyOf("audit:" + id)
			raw, err := rdb.LIndex(ctx, reqKey, 1).Result()
			if err != nil {
				t.Fatal(err)
			}
			// The entry as read (stored compact), rewritten in the full
			// form, which the store reads too.
			entries, err := st.Audit(ctx, id)
			if err != nil || len(entries) < 2 {
				t.Fatalf("Audit = %d entries, %v", len(entries), err)
			}
			e := entries[1]
			switch name {
			case "modified":
				e.Data["ts"] = "9.9"
				b, _ := json.Marshal(e)
				rdb.LSet(ctx, reqKey, 1, b)
			case "removed":
				rdb.LRem(ctx, reqKey, 1, raw)
			case "forged without the key":
				// The forger edits the entry and recomputes a consistent hash
				// the only way they can without the key: plain SHA-256.
				e.Data["ts"] = "9.9"
				e.Hash = ""
				payload, _ := json.Marshal(e)
				sum := sha256.Sum256(payload)
				e.Hash = hex.EncodeToString(sum[:])
				b, _ := json.Marshal(e)
				rdb.LSet(ctx, reqKey, 1, b)
			}
			entries, _ = st.Audit(ctx, id)
			var ce *store.ChainError
			if err := st.VerifyChain("request "+id, entries); !errors.As(err, &ce) || ce.Seq != wantSeq {
				t.Errorf("VerifyChain = %v, want a ChainError at entry %d", err, wantSeq)
			}
			rep, _ := st.VerifyAll(ctx)
			if len(rep.Problems) == 0 {
				t.Error("VerifyAll found nothing")
			}
		})
	}
}

// Dropping the newest entries, from the request's chain and from the shard's
// global chain alike, leaves every remaining hash valid; the stored heads
// still give it away.
func TestAuditTruncationIsDetected(t *testing.T) {
	t.Parallel()
	st, id, keyOf := auditFixture(t, "k")
	rdb, _ := redistest.Client(t)
	ctx := context.Background()
	rdb.RPop(ctx, keyOf("audit:"+id))
	rdb.RPop(ctx, keyOf("audit"))
	entries, _ := st.Audit(ctx, id)
	if err := st.VerifyChain("request "+id, entries); err != nil {
		t.Fatalf("the truncated chain's hashes should still verify: %v", err)
	}
	rep, err := st.VerifyAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 2 {
		t.Errorf("VerifyAll problems = %v, want the request's and the shard's truncation", rep.Problems)
	}
}

// A refused intake has no request, so it is audited as a standalone entry
// of the global chain of its shard, between the request entries there: it
// verifies with them, and editing it is caught like editing any link.
func TestIntakeRefusalsAreAudited(t *testing.T) {
	t.Parallel()
	st, id, keyOf := auditFixture(t, "k1")
	ctx := context.Background()
	refusal := store.IntakeRefusal{ArtifactID: id, Agent: "planner", BodyHash: "abc123", Rule: "policy_floor",
		Problems: []string{"extensions.slack.quorum: 1 is below the workspace's APPROVAL_QUORUM=2"}}
	if err := st.AuditIntakeRefusal(ctx, refusal); err != nil {
		t.Fatal(err)
	}
	// A request after it in the same shard chains on from it.
	if _, err := st.Update(ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Audit: []store.AuditEvent{{Event: "click_refused", Actor: "human:U0MALLORY"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.AuditIntakeRefusal(ctx, store.IntakeRefusal{Agent: "planner", BodyHash: "def456", Rule: "no_deciders"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.IntakeRefusals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("IntakeRefusals = %+v, want 2", got)
	}
	var first store.AuditEntry
	for _, e := range got {
		if e.RequestID == id {
			first = e
		}
	}
	if first.Actor != "agent:planner" || first.Data["rule"] != "policy_floor" || first.Data["body_hash"] != "abc123" {
		t.Errorf("refusal entry = %+v", first)
	}
	if _, err := st.Get(ctx, "def456"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused request was stored: %v", err)
	}
	rep, err := st.VerifyAll(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.Requests != 1 {
		t.Fatalf("VerifyAll = %+v, %v", rep, err)
	}

	// Rewrite the refusal's rule in place, once sealed: its hash no longer
	// matches.
	if err := st.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	rdb, _ := redistest.Client(t)
	raw, err := rdb.LRange(ctx, keyOf("audit"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range raw {
		var e store.AuditEntry
		if err := json.Unmarshal([]byte(r), &e); err != nil {
			t.Fatal(err)
		}
		if e.Event == store.EventIntakeRefused {
			e.Data["rule"] = "nothing to see"
			b, _ := json.Marshal(e)
			if err := rdb.LSet(ctx, keyOf("audit"), int64(i), string(b)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rep, _ := st.VerifyAll(ctx); len(rep.Problems) == 0 {
		t.Error("VerifyAll did not notice an edited refusal")
	}
}
