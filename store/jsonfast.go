package store

import (
	"strings"
	"time"
)

// Intake writes a few small JSON values per request (its timers, its
// reviewers, its global audit entry) whose strings are almost always plain
// ASCII: these build them without encoding/json's reflection, byte for byte
// as json.Marshal would (jsonfast_test.go), and leave anything else to it.

// jsonStrings is mustJSON(list).
func jsonStrings(list []string) string {
	if list == nil {
		return "null"
	}
	n := 2
	for _, s := range list {
		if !jsonPlain(s) {
			return mustJSON(list)
		}
		n += len(s) + 3
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, s := range list {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String()
}

// pendingGlobalEntry is mustJSON(AuditEntry{At: at, RequestID: id,
// EntryHash: entryHash}): an unsealed global audit entry, which the create's
// script numbers by replacing its leading `{"seq":0`. Entries are in UTC;
// any other time (or an odd id) goes through json.Marshal.
func pendingGlobalEntry(at time.Time, id, entryHash string) string {
	if !jsonPlain(id) || !jsonPlain(entryHash) || entryHash == "" || at.Location() != time.UTC || at.Year() < 0 || at.Year() > 9999 {
		return mustJSON(AuditEntry{At: at, RequestID: id, EntryHash: entryHash})
	}
	b := make([]byte, 0, 64+len(time.RFC3339Nano)+len(id)+len(entryHash))
	b = append(b, `{"seq":0,"at":"`...)
	b = at.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","request_id":"`...)
	b = append(b, id...)
	b = append(b, `","entry_hash":"`...)
	b = append(b, entryHash...)
	b = append(b, `","prev":"","hash":""}`...)
	return string(b)
}

// jsonPlain reports whether json.Marshal writes s as it is, between quotes:
// printable ASCII other than the characters it escapes.
func jsonPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
