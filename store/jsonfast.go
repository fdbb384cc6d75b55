package store

import (
	"slices"
	"strconv"
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
	e := AuditEntry{At: at, RequestID: id, EntryHash: entryHash}
	if b, ok := appendAuditEntry(make([]byte, 0, 64+len(time.RFC3339Nano)+len(id)+len(entryHash)), e); ok {
		return string(b)
	}
	return mustJSON(e)
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

// appendAuditEntry appends json.Marshal(e), and reports whether it could:
// an entry in UTC whose strings are plain (jsonPlain) and whose Data holds
// only plain strings, what intake writes. The caller marshals any other.
func appendAuditEntry(b []byte, e AuditEntry) ([]byte, bool) {
	if !plainEntry(e.At, e.RequestID, e.Event, e.Actor, e.EntryHash, e.Prev, e.Hash) {
		return b, false
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"at":"`...)
	b = e.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","request_id":"`...)
	b = append(b, e.RequestID...)
	b = append(b, '"')
	b = appendOmitEmpty(b, `,"event":"`, e.Event)
	b = appendOmitEmpty(b, `,"actor":"`, e.Actor)
	var ok bool
	if b, ok = appendPlainData(b, `,"data":`, e.Data); !ok {
		return b, false
	}
	b = appendOmitEmpty(b, `,"entry_hash":"`, e.EntryHash)
	b = append(b, `,"prev":"`...)
	b = append(b, e.Prev...)
	b = append(b, `","hash":"`...)
	b = append(b, e.Hash...)
	return append(b, `"}`...), true
}

// appendCompactEntry is appendAuditEntry for a request chain's compact
// entry (auditcompact.go).
func appendCompactEntry(b []byte, c compactEntry) ([]byte, bool) {
	if !jsonPlain(c.Event) || !jsonPlain(c.Actor) || !jsonPlain(c.Hash) {
		return b, false
	}
	b = append(b, `{"s":`...)
	b = strconv.AppendInt(b, c.Seq, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, c.At, 10)
	b = appendOmitEmpty(b, `,"e":"`, c.Event)
	b = appendOmitEmpty(b, `,"a":"`, c.Actor)
	var ok bool
	if b, ok = appendPlainData(b, `,"d":`, c.Data); !ok {
		return b, false
	}
	b = append(b, `,"h":"`...)
	b = append(b, c.Hash...)
	return append(b, `"}`...), true
}

// plainEntry reports whether an entry at with these strings can be
// appended as it is: at in UTC, within the years json.Marshal writes, and
// every string plain.
func plainEntry(at time.Time, strs ...string) bool {
	if at.Location() != time.UTC || at.Year() < 0 || at.Year() > 9999 {
		return false
	}
	for _, s := range strs {
		if !jsonPlain(s) {
			return false
		}
	}
	return true
}

// appendOmitEmpty appends prefix, s and a closing quote unless s is empty
// (omitempty); prefix ends with the opening quote.
func appendOmitEmpty(b []byte, prefix, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, prefix...)
	b = append(b, s...)
	return append(b, '"')
}

// appendPlainData appends prefix and data as json.Marshal writes a map
// (keys sorted) unless it is empty (omitempty), and reports whether it
// could: every key and value a plain string.
func appendPlainData(b []byte, prefix string, data map[string]any) ([]byte, bool) {
	if len(data) == 0 {
		return b, true
	}
	var stack [8]string
	keys := stack[:0]
	for k, v := range data {
		if s, ok := v.(string); !ok || !jsonPlain(k) || !jsonPlain(s) {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, prefix...)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, `":"`...)
		b = append(b, data[k].(string)...)
		b = append(b, '"')
	}
	return append(b, '}'), true
}
