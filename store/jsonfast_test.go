package store

import (
	"testing"
	"time"
)

func TestJSONStringsIsMarshal(t *testing.T) {
	for _, list := range [][]string{
		nil, {}, {"expire:r1"}, {"expire:r1", "escalate:r1:0", "remind:r1:1"},
		{"U0ALICE", "W0BOB"}, {`a"b`}, {`a\b`}, {"<x>"}, {"a&b"}, {"tab\t"}, {"é"}, {"\x7f"}, {""},
	} {
		if got, want := jsonStrings(list), mustJSON(list); got != want {
			t.Errorf("jsonStrings(%q) = %s, want %s", list, got, want)
		}
	}
}

func TestPendingGlobalEntryIsMarshal(t *testing.T) {
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)
	for _, c := range []struct {
		at        time.Time
		id, entry string
	}{
		{at, "r1", "e4dbe0a7a58bbcdfaa4aae8f9cd8394d138bbe197d37c94a640639aec9e817fc"},
		{at.Truncate(time.Second), "req-2_x.y", "ab"},
		{at.Add(1), "r3", "00"},
		{at, "a<b", "ff"},
		{at, `q"`, "ff"},
		{at, "r4", ""},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "r5", "ff"},
	} {
		want := ""
		func() {
			defer func() { _ = recover() }() // json.Marshal refuses a year past 9999
			want = mustJSON(AuditEntry{At: c.at, RequestID: c.id, EntryHash: c.entry})
		}()
		if want == "" {
			continue
		}
		if got := pendingGlobalEntry(c.at, c.id, c.entry); got != want {
			t.Errorf("pendingGlobalEntry(%v, %q, %q) = %s, want %s", c.at, c.id, c.entry, got, want)
		}
	}
}

// The audit entries appended by hand are json.Marshal's bytes (their hash
// and what Redis holds depend on them), or left to it.
func TestAuditEntriesAppendedAreMarshal(t *testing.T) {
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)
	datas := []map[string]any{
		nil, {}, {"channel": "#approvals"}, {"b": "2", "a": "1", "c": ""}, {"decision": "d1", "value": "approve", "by": "U0ALICE"},
		{"n": 1}, {"ok": true}, {"x": nil}, {"nested": map[string]any{"a": "b"}}, {"k": "a<b"}, {"k\"": "v"}, {"é": "v"}, {"k": "é"},
	}
	strs := []string{"", "r1", "agent:bench", "slack:U0ALICE", "a<b", "a&b", `q"`, `b\s`, "tab\t", "é", "\x7f",
		"e4dbe0a7a58bbcdfaa4aae8f9cd8394d138bbe197d37c94a640639aec9e817fc", "TbvYia6SM/zn9ALzitMNe0Jur5oToZ8OcJKS6Gsy0jc"}
	ats := []time.Time{at, at.Truncate(time.Second), at.Add(1), at.In(time.FixedZone("X", 3600)), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), {}}
	marshal := func(v any) (s string) {
		defer func() { _ = recover() }() // json.Marshal refuses a year past 9999
		return mustJSON(v)
	}
	plain := strs[:4]
	n := 0
	for i, d := range datas {
		for j, s := range strs {
			for k, when := range ats {
				p := func(o int) string { return plain[(i+j+k+o)%len(plain)] }
				for _, e := range []AuditEntry{
					{Seq: int64(i*j - 3), At: when, RequestID: p(1), Event: s, Actor: p(2), Data: d, EntryHash: p(3), Prev: p(0), Hash: p(1)},
					{Seq: int64(i + j), At: when, RequestID: p(0), Event: p(1), Actor: s, Data: d, Prev: s, Hash: s},
					{At: when, RequestID: s, Data: d, EntryHash: s},
				} {
					if got, ok := appendAuditEntry(nil, e); ok {
						n++
						if want := marshal(e); string(got) != want {
							t.Errorf("appendAuditEntry(%+v) = %s, want %s", e, got, want)
						}
					}
				}
				for _, c := range []compactEntry{
					{Seq: int64(i - j), At: when.UnixNano(), Event: s, Actor: p(2), Data: d, Hash: p(3)},
					{Seq: int64(i + k), At: when.UnixNano(), Event: p(1), Actor: s, Data: d, Hash: s},
				} {
					if got, ok := appendCompactEntry(nil, c); ok {
						n++
						if want := marshal(c); string(got) != want {
							t.Errorf("appendCompactEntry(%+v) = %s, want %s", c, got, want)
						}
					}
				}
			}
		}
	}
	if n < 500 {
		t.Errorf("only %d entries were appended by hand: the test checks too few", n)
	}
}
