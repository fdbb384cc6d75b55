package store

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// A request's audit chain (<p>:{sNN}:audit:<id>) stores its entries in a
// compact form since issue #17 (a pending request under 4 KB of Redis):
// short keys, the time in Unix nanoseconds, the hash in base64, and
// neither the request id (the key names it) nor prev (the hash of the
// entry before it in the same list, "" for the first). Entries read back
// as the very AuditEntry that was hashed, so hashes, verification, the API
// and exports are unchanged; only what Redis holds is smaller (~110 bytes
// less per entry, ~180 from the second on).
//
// Entries written before keep their full JSON form and read as before; a
// chain may hold both, old ones first. Leaving prev out takes nothing from
// the chain's tamper evidence: each hash still covers its prev, read as
// the hash of the entry stored before it, so removing, reordering or
// editing an entry breaks the hash of the entry that follows it.
//
// The shard's global chain is not stored this way (readShardChain).
type compactEntry struct {
	Seq   int64          `json:"s"`
	At    int64          `json:"t"` // Unix ns of the entry's At (UTC)
	Event string         `json:"e,omitempty"`
	Actor string         `json:"a,omitempty"`
	Data  map[string]any `json:"d,omitempty"`
	Hash  string         `json:"h"` // base64 (raw, std) of the hash's bytes
}

// storedEntry decodes either form: Seq set means the full one.
type storedEntry struct {
	AuditEntry
	compactEntry
}

// encodeRequestEntry is the stored form of a request chain's entry e,
// whose Prev must be the hash of the entry stored before it.
func encodeRequestEntry(e AuditEntry) string {
	c := compactEntry{Seq: e.Seq, At: e.At.UnixNano(), Event: e.Event, Actor: e.Actor, Data: e.Data, Hash: e.Hash}
	if raw, err := hex.DecodeString(e.Hash); err == nil && len(raw) > 0 {
		c.Hash = base64.RawStdEncoding.EncodeToString(raw)
	}
	if b, ok := appendCompactEntry(make([]byte, 0, 128+len(c.Hash)), c); ok {
		return string(b) // json.Marshal's bytes, without its reflection
	}
	return mustJSON(c)
}

// decodeRequestChain decodes the stored entries of request id's chain at
// key, oldest first, in either form.
func decodeRequestChain(key, id string, raw []string) ([]AuditEntry, error) {
	out := make([]AuditEntry, len(raw))
	prev := ""
	for i, r := range raw {
		var se storedEntry
		if err := json.Unmarshal([]byte(r), &se); err != nil {
			return nil, fmt.Errorf("store: audit %s entry %d is not JSON: %w", key, i, err)
		}
		e := se.AuditEntry
		if c := se.compactEntry; e.Seq == 0 && c.Seq != 0 {
			e = AuditEntry{Seq: c.Seq, At: time.Unix(0, c.At).UTC(), RequestID: id, Event: c.Event, Actor: c.Actor,
				Data: c.Data, Prev: prev, Hash: c.Hash}
			if b, err := base64.RawStdEncoding.DecodeString(c.Hash); err == nil {
				e.Hash = hex.EncodeToString(b)
			}
		}
		out[i], prev = e, e.Hash
	}
	return out, nil
}
