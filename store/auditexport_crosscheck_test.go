package store_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// A request chain rewritten consistently (every hash recomputed, its head
// too) verifies on its own; the global entries still name the original
// entries, and both VerifyAll and verify --file catch that.
func TestRewrittenRequestChainIsCrossChecked(t *testing.T) {
	t.Parallel()
	f := rawBackends()["redis"](t, "") // plain SHA-256: the forger can recompute it
	const shard = 11
	id := idsInShard("forged", shard, 1)[0]
	f.mustCreate(t, newReq(id, "agent"))
	f.mustWithdraw(t, id)
	key := f.key(shard, "audit:"+id)
	entries, err := f.s.Audit(f.ctx, id) // as read: stored compact, rewritten in the full form
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	var head string
	for i, e := range entries {
		if i == 1 {
			e.Actor = "agent:someone-else"
		}
		e.Prev, e.Hash = prev, ""
		payload, _ := json.Marshal(e)
		sum := sha256.Sum256(payload)
		e.Hash = hex.EncodeToString(sum[:])
		b, _ := json.Marshal(e)
		f.rdb.LSet(f.ctx, key, int64(i), string(b))
		prev, head = e.Hash, fmt.Sprintf("%d:%s", e.Seq, e.Hash)
	}
	f.rdb.HSet(f.ctx, f.key(shard, "req:"+id), "audit_head", head)
	if _, problems, err := f.s.VerifiedAudit(f.ctx, id); err != nil || len(problems) != 0 {
		t.Fatalf("the rewritten chain should verify on its own: %v %v", problems, err)
	}
	if v := f.verifyAll(t); len(v.Problems) != 1 || !strings.Contains(v.Problems[0].Error(), "does not hold") {
		t.Errorf("VerifyAll = %+v, want the global entry's reference broken", v)
	}
	var buf bytes.Buffer
	if _, err := f.s.Export(f.ctx, &buf, time.Time{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	_, err = store.NewAuditVerifier(nil).VerifyExport(&buf)
	var ce *store.ChainError
	if !errors.As(err, &ce) || ce.Chain != fmt.Sprintf("shard %02d", shard) || ce.Seq != 2 || !strings.Contains(ce.Reason, "request "+id) {
		t.Errorf("VerifyExport = %v, want shard %02d's entry 2 naming request %s", err, shard, id)
	}
}

// A time-range export holds every request entry its global entries name,
// even one a writer's clock put before the range: the run the export marks
// is then covered by request chains too, and retention never deletes what
// no export holds.
func TestRangedExportHoldsWhatItsGlobalEntriesName(t *testing.T) {
	t.Parallel()
	f := rawBackends()["redis"](t, "")
	const shard = 6
	ids := idsInShard("skew", shard, 2)
	f.clk.Set(t0.Add(5 * time.Second))
	f.mustCreate(t, newReq(ids[0], "agent"))
	f.clk.Set(t0.Add(-5 * time.Second)) // another replica's clock, behind
	f.mustCreate(t, newReq(ids[1], "agent"))
	var buf bytes.Buffer
	sum, err := f.s.Export(f.ctx, &buf, t0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Runs) != 1 || sum.Runs[0].From != 1 || sum.Runs[0].To != 2 {
		t.Fatalf("runs = %+v, want shard %d's entries 1 to 2", sum.Runs, shard)
	}
	if !strings.Contains(buf.String(), `"chain":"request `+ids[1]+`"`) {
		t.Errorf("the export leaves out %s, whose entry its global chain names:\n%s", ids[1], buf.String())
	}
	rep, err := store.NewAuditVerifier(nil).VerifyExport(&buf)
	if err != nil || rep.CrossChecked != 2 {
		t.Errorf("VerifyExport = %+v, %v", rep, err)
	}
}
