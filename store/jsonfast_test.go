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
