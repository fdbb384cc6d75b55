package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// exportFixture is a store on a fake clock with three requests, an hour
// apart, each requested, posted a minute later and withdrawn a minute after
// that, and a refused intake half an hour in.
func exportFixture(t *testing.T) (fixture, []string) {
	t.Helper()
	f := newFixture(t, realRedis(), func(o *store.Options) { o.AuditKey = []byte("export-key") })
	ids := []string{"exp-0", "exp-1", "exp-2"}
	for i, id := range ids {
		f.clk.Set(t0.Add(time.Duration(i) * time.Hour))
		if _, _, err := f.s.Create(f.ctx, newReq(id, "agent")); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Minute)
		if err := f.s.MarkPosted(f.ctx, id, "C1", "1.1", 1); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Minute)
		if _, err := approval.New(f.s, approval.Options{}).Withdraw(f.ctx, id); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			f.clk.Set(t0.Add(30 * time.Minute))
			if err := f.s.AuditIntakeRefusal(f.ctx, store.IntakeRefusal{Agent: "agent", BodyHash: "refused", Rule: "no_deciders"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f, ids
}

func export(t *testing.T, f fixture, since, until time.Time) []string {
	t.Helper()
	var buf bytes.Buffer
	if _, _, err := f.s.ExportAudit(f.ctx, &buf, since, until); err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

func verifyExport(lines []string) (store.ExportReport, error) {
	return store.NewAuditVerifier([]byte("export-key")).VerifyExport(strings.NewReader(strings.Join(lines, "")))
}

// entryLine finds the line of entry seq of chain.
func entryLine(t *testing.T, lines []string, chain string, seq int64) int {
	t.Helper()
	for i, l := range lines {
		var el store.ExportLine
		if err := json.Unmarshal([]byte(l), &el); err != nil {
			t.Fatal(err)
		}
		if el.Kind == store.ExportEntry && el.Chain == chain && el.Entry.Seq == seq {
			return i
		}
	}
	t.Fatalf("no entry %d of %s in the export", seq, chain)
	return -1
}

func TestAuditExportVerifiesOffline(t *testing.T) {
	t.Parallel()
	f, ids := exportFixture(t)
	lines := export(t, f, time.Time{}, time.Time{})
	rep, err := verifyExport(lines)
	if err != nil {
		t.Fatalf("VerifyExport: %v\n%s", err, strings.Join(lines, ""))
	}
	shards := map[int]bool{shardOf("refused"): true}
	for _, id := range ids {
		shards[shardOf(id)] = true
	}
	// 9 request entries, their 9 global entries and the refusal.
	if rep.Chains != len(ids)+len(shards) || rep.Entries != 19 || len(rep.Partial) != 0 {
		t.Errorf("report = %+v, want %d chains, 19 entries, none partial", rep, len(ids)+len(shards))
	}
	if _, err := store.NewAuditVerifier([]byte("another key")).VerifyExport(strings.NewReader(strings.Join(lines, ""))); err == nil {
		t.Error("an export verified under another key")
	}
	// Every head in the file is "<seq>:<hash in hex>", as in exports made
	// before the records kept theirs in base64 (chainHead.field).
	for _, l := range lines {
		var el store.ExportLine
		if err := json.Unmarshal([]byte(l), &el); err != nil {
			t.Fatal(err)
		}
		if el.Kind != store.ExportChain || el.Head == "" {
			continue
		}
		if _, hash, _ := strings.Cut(el.Head, ":"); len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
			t.Errorf("%s's head is %q: want the hash in hex", el.Chain, el.Head)
		}
	}
}

// Editing, removing or dropping the last entry of a chain in the file is
// caught, naming the chain and the entry.
func TestAuditExportDetectsTampering(t *testing.T) {
	t.Parallel()
	f, _ := exportFixture(t)
	lines := export(t, f, time.Time{}, time.Time{})
	for name, tc := range map[string]struct {
		edit    func([]string) []string
		wantSeq int64
		reason  string
	}{
		"field changed": {func(ls []string) []string {
			i := entryLine(t, ls, "request exp-1", 3)
			ls[i] = strings.Replace(ls[i], `"withdrawn"`, `"posted"`, 1)
			return ls
		}, 3, "modified"},
		"middle line removed": {func(ls []string) []string {
			return slices.Delete(ls, entryLine(t, ls, "request exp-1", 2), entryLine(t, ls, "request exp-1", 2)+1)
		}, 2, "removed or inserted"},
		"last line of a full chain removed": {func(ls []string) []string {
			i := entryLine(t, ls, "request exp-1", 3)
			return slices.Delete(ls, i, i+1)
		}, 3, "removed from its end"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := verifyExport(tc.edit(slices.Clone(lines)))
			var ce *store.ChainError
			if !errors.As(err, &ce) || ce.Chain != "request exp-1" || ce.Seq != tc.wantSeq || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("VerifyExport = %v, want request exp-1 broken at entry %d (%s)", err, tc.wantSeq, tc.reason)
			}
		})
	}
	// Cutting the file short, or marking a chain of a full export partial
	// so that its end is not checked, is caught too.
	if _, err := verifyExport(lines[:len(lines)-1]); err == nil || !strings.Contains(err.Error(), "no trailer") {
		t.Errorf("without its trailer: %v", err)
	}
	edited := slices.Clone(lines)
	for i, l := range edited {
		edited[i] = strings.Replace(l, `,"complete":true`, "", 1)
	}
	if _, err := verifyExport(edited); err == nil || !strings.Contains(err.Error(), "marks it partial") {
		t.Errorf("a full export with partial chains: %v", err)
	}
}

// A time range exports the entries within it; chains it cuts verify as far
// as they go and are reported partial.
func TestAuditExportTimeRange(t *testing.T) {
	t.Parallel()
	f, _ := exportFixture(t)

	// The second request's whole history, and nothing else.
	lines := export(t, f, t0.Add(time.Hour), t0.Add(time.Hour+2*time.Minute))
	rep, err := verifyExport(lines)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(lines, "")
	if !strings.Contains(all, `"chain":"request exp-1"`) || strings.Contains(all, "exp-0") || strings.Contains(all, "exp-2") ||
		strings.Contains(all, store.EventIntakeRefused) {
		t.Errorf("export of exp-1's hour holds other entries:\n%s", all)
	}
	if rep.Entries != 6 || slices.Contains(rep.Partial, "request exp-1") {
		t.Errorf("report = %+v, want exp-1's 3 entries and their 3 global ones, exp-1 complete", rep)
	}
	// exp-1's shard chain is cut when it holds entries outside the range too.
	shard := shardOf("exp-1")
	cutShard := shardOf("exp-0") == shard || shardOf("exp-2") == shard || shardOf("refused") == shard
	if got := slices.Contains(rep.Partial, fmt.Sprintf("shard %02d", shard)); got != cutShard {
		t.Errorf("partial = %v: shard %02d partial %v, want %v", rep.Partial, shard, got, cutShard)
	}

	// From after exp-1 was requested: its chain is cut, its links still check.
	lines = export(t, f, t0.Add(time.Hour+30*time.Second), t0.Add(time.Hour+2*time.Minute))
	rep, err = verifyExport(lines)
	if err != nil || rep.Entries != 4 || !slices.Contains(rep.Partial, "request exp-1") {
		t.Fatalf("cut export: %+v, %v", rep, err)
	}
	i := entryLine(t, lines, "request exp-1", 3)
	lines[i] = strings.Replace(lines[i], `"withdrawn"`, `"posted"`, 1)
	var ce *store.ChainError
	if _, err := verifyExport(lines); !errors.As(err, &ce) || ce.Seq != 3 {
		t.Errorf("an edited entry of a partial chain: %v", err)
	}
}

// The trailer's digest covers every line before it: editing the header or
// a chain line of a time-range export, which no entry hash covers, is
// caught; so is a trailer whose counts were adjusted to lines removed.
func TestAuditExportDigestCoversHeaderAndChainLines(t *testing.T) {
	t.Parallel()
	f, _ := exportFixture(t)
	full := export(t, f, time.Time{}, time.Time{})
	ranged := export(t, f, t0.Add(time.Hour+30*time.Second), t0.Add(time.Hour+2*time.Minute))
	for name, tc := range map[string]struct {
		lines []string
		edit  func([]string) []string
		want  string
	}{
		"header's time range widened": {ranged, func(ls []string) []string {
			ls[0] = strings.Replace(ls[0], `"since":"2025-03-14T16:09:56Z"`, `"since":"2025-03-14T16:00:00Z"`, 1)
			return ls
		}, "digest does not match"},
		"exported_at changed": {full, func(ls []string) []string {
			ls[0] = strings.Replace(ls[0], `"exported_at":"2025`, `"exported_at":"2024`, 1)
			return ls
		}, "digest does not match"},
		"a partial chain's first entry dropped, the counts adjusted": {ranged, func(ls []string) []string {
			// The shard chain's: its links from the next one still check,
			// and the request entry it named stays in the file.
			shard := fmt.Sprintf(`"chain":"shard %02d"`, shardOf("exp-1"))
			i := slices.IndexFunc(ls, func(l string) bool { return strings.Contains(l, `"kind":"entry",`+shard) })
			ls = slices.Delete(ls, i, i+1)
			var tr store.ExportLine
			_ = json.Unmarshal([]byte(ls[len(ls)-1]), &tr)
			tr.Entries--
			tr.Lines--
			b, _ := json.Marshal(tr)
			ls[len(ls)-1] = string(b) + "\n"
			return ls
		}, "digest does not match"},
		"a line dropped, the line count not": {ranged, func(ls []string) []string {
			shard := fmt.Sprintf(`"chain":"shard %02d"`, shardOf("exp-1"))
			i := slices.IndexFunc(ls, func(l string) bool { return strings.Contains(l, `"kind":"entry",`+shard) })
			ls = slices.Delete(ls, i, i+1)
			ls[len(ls)-1] = strings.Replace(ls[len(ls)-1], fmt.Sprintf(`"entries":%d`, 4), `"entries":3`, 1)
			return ls
		}, "lines before it"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := verifyExport(tc.lines); err != nil {
				t.Fatalf("unedited: %v", err)
			}
			if _, err := verifyExport(tc.edit(slices.Clone(tc.lines))); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifyExport = %v, want %q", err, tc.want)
			}
		})
	}
}

// An export of the first format (no digest) still verifies, reported as
// such.
func TestAuditExportFormatOneStillVerifies(t *testing.T) {
	t.Parallel()
	f, _ := exportFixture(t)
	lines := export(t, f, time.Time{}, time.Time{})
	lines[0] = strings.Replace(lines[0], store.ExportFormat, store.ExportFormatV1, 1)
	var tr store.ExportLine
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &tr)
	tr.Lines, tr.Digest = 0, ""
	b, _ := json.Marshal(tr)
	lines[len(lines)-1] = string(b) + "\n"
	rep, err := verifyExport(lines)
	if err != nil || !rep.Legacy {
		t.Errorf("format 1 export: %+v, %v", rep, err)
	}
}
