package store

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// AuditEvent is something that happened to a request, as a caller describes
// it; Update turns it into chained AuditEntries.
type AuditEvent struct {
	Event string         // requested, posted, answered, submitted, resolved, withdrawn, click_refused, delivery_*...
	Actor string         // "agent:<name>", "human:<slack user id>" or "system"
	Data  map[string]any // details: decision id, value, previous value, error...
}

// AuditEntry is one link of a hash chain. Each request has a chain of its
// events; each shard has a global chain whose entries reference request
// entries (and hold refused intakes, which have no request; see
// AuditIntakeRefusal). Hash covers every other field, Prev included, so changing,
// removing or reordering an entry breaks every later hash.
type AuditEntry struct {
	Seq       int64          `json:"seq"`
	At        time.Time      `json:"at"`
	RequestID string         `json:"request_id"`
	Event     string         `json:"event,omitempty"`
	Actor     string         `json:"actor,omitempty"`
	Data      map[string]any `json:"data,omitempty"`
	// EntryHash (global chain only) is the hash of the request entry this
	// global entry records.
	EntryHash string `json:"entry_hash,omitempty"`
	Prev      string `json:"prev"`
	Hash      string `json:"hash"`
}

// auditHasher computes entry hashes: HMAC-SHA256 with the audit key when one
// is configured (then only a holder of the key can forge a consistent chain),
// plain SHA-256 otherwise (detects edits by anyone who does not recompute
// the whole chain).
type auditHasher struct{ key []byte }

func (a auditHasher) sum(e AuditEntry) string {
	e.Hash = ""
	var buf [512]byte
	payload, ok := appendAuditEntry(buf[:0], e) // json.Marshal's bytes, without its reflection
	if !ok {
		payload, _ = json.Marshal(e)
	}
	h := a.new()
	h.Write(payload)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// hashSuffix is how json.Marshal ends an entry whose Hash is empty (Hash is
// its last field).
const hashSuffix = `"hash":""}`

// seal hashes e and returns its hash and its JSON with the hash in, from
// one encoding: the JSON is the hashed payload with the hash written into
// its last field.
func (a auditHasher) seal(e AuditEntry) (sum, encoded string) {
	e.Hash = ""
	payload, _ := json.Marshal(e)
	return a.sealPayload(payload)
}

// sealPayload is seal for an entry already encoded with an empty hash.
func (a auditHasher) sealPayload(payload []byte) (sum, encoded string) {
	h := a.new()
	h.Write(payload)
	sum = hex.EncodeToString(h.Sum(nil))
	head, ok := bytes.CutSuffix(payload, []byte(hashSuffix))
	if !ok {
		panic("store: an audit entry's JSON does not end with its hash") // Hash is AuditEntry's last field
	}
	return sum, string(head) + `"hash":"` + sum + `"}`
}

// new is the hash of one entry, or of an export's lines.
func (a auditHasher) new() hash.Hash {
	if len(a.key) > 0 {
		return hmac.New(sha256.New, a.key)
	}
	return sha256.New()
}

// chainHead is a chain's last sequence number and hash, stored as "seq:hash".
type chainHead struct {
	seq  int64
	hash string
}

// parseHead reads a head in either form: String's or field's.
func parseHead(s string) chainHead {
	seq, h, _ := strings.Cut(s, ":")
	n, _ := strconv.ParseInt(seq, 10, 64)
	if len(h) == base64.RawStdEncoding.EncodedLen(sha256.Size) {
		if raw, err := base64.RawStdEncoding.DecodeString(h); err == nil {
			h = hex.EncodeToString(raw)
		}
	}
	return chainHead{seq: n, hash: h}
}

// String is "<seq>:<hash in hex>", as the shards' head and base keys hold it.
func (c chainHead) String() string { return strconv.FormatInt(c.seq, 10) + ":" + c.hash }

// field is the head as a request's audit_head field holds it: the hash in
// base64, as its chain's entries hold it (auditcompact.go), so the field
// keeps under 64 bytes (storedDocument says why that matters).
func (c chainHead) field() string {
	raw, err := hex.DecodeString(c.hash)
	if err != nil || len(raw) != sha256.Size {
		return c.String()
	}
	return strconv.FormatInt(c.seq, 10) + ":" + base64.RawStdEncoding.EncodeToString(raw)
}

// Audit returns a request's audit chain, oldest first.
func (s *Store) Audit(ctx context.Context, id string) ([]AuditEntry, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	key := s.keys.auditRequest(id)
	raw, err := s.rdb.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("store: read audit %s: %w", key, err)
	}
	return decodeRequestChain(key, id, raw)
}

func decodeChain(key string, raw []string) ([]AuditEntry, error) {
	out := make([]AuditEntry, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal([]byte(r), &out[i]); err != nil {
			return nil, fmt.Errorf("store: audit %s entry %d is not JSON: %w", key, i, err)
		}
	}
	return out, nil
}

// VerifiedAudit returns a request's audit chain, oldest first, and whether
// it verifies the way "approvalbot audit verify" checks it: problems is
// empty when it does, else the *ChainErrors found (every hash, and that the
// chain ends at the head the request records, so entries removed from its
// end show too). err is a failure to read it (ErrNotFound for an unknown
// request, or one deleted by the retention sweep).
//
// The chain and the record's head are read together, and a request gone
// by then is ErrNotFound: read apart, a request deleted between the two
// reads looked like an empty chain that verifies.
func (s *Store) VerifiedAudit(ctx context.Context, id string) (entries []AuditEntry, problems []error, err error) {
	if !aah.ValidRequestID(id) {
		return nil, nil, ErrNotFound
	}
	entries, head, err := s.requestChain(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if head == "" && len(entries) == 0 {
		return nil, nil, ErrNotFound
	}
	return entries, s.verifyRequestChain(id, entries, head), nil
}

// requestChain reads a request's audit chain and the head its record holds
// in one transaction (both keys are in the request's shard): read apart, a
// change committed between the two reads would look like a truncation.
func (s *Store) requestChain(ctx context.Context, id string) ([]AuditEntry, string, error) {
	c, err := s.readRequestChain(ctx, id)
	return c.entries, c.head, err
}

// requestChainRead is a request's chain as read with its record's fields.
type requestChainRead struct {
	entries []AuditEntry
	head    string // the record's audit_head as chainHead.String writes it ("" when the request does not exist)
	// gseq0 is the global seq of the request's first entry (0: unknown,
	// a request stored before it was recorded).
	gseq0 int64
}

func (s *Store) readRequestChain(ctx context.Context, id string) (requestChainRead, error) {
	key := s.keys.auditRequest(id)
	var chain *redis.StringSliceCmd
	var fields *redis.SliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		chain = p.LRange(ctx, key, 0, -1)
		fields = p.HMGet(ctx, s.keys.request(id), "audit_head", gseq0Field)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return requestChainRead{}, fmt.Errorf("store: read audit %s and its head: %w", key, err)
	}
	entries, err := decodeRequestChain(key, id, chain.Val())
	out := requestChainRead{entries: entries}
	if v := fields.Val(); len(v) == 2 {
		if head, _ := v[0].(string); head != "" {
			// As String writes it (the hash in hex), whichever form the
			// record holds (chainHead.field): exports carry it so.
			out.head = parseHead(head).String()
		}
		g, _ := v[1].(string)
		out.gseq0, _ = strconv.ParseInt(g, 10, 64)
	}
	return out, err
}

// verifyRequestChain checks a request's chain: its hashes, and that it ends
// at head, the head its record holds.
func (s *Store) verifyRequestChain(id string, entries []AuditEntry, head string) []error {
	var problems []error
	name := "request " + id
	if err := s.VerifyChain(name, entries); err != nil {
		problems = append(problems, err)
	}
	if err := tailMatches(name, entries, head); err != nil {
		problems = append(problems, err)
	}
	return problems
}

// ChainError names the first entry of a chain that does not verify.
type ChainError struct {
	Chain  string // "request <id>" or "shard NN"
	Seq    int64  // position (1-based) of the first bad entry
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit chain of %s is broken at entry %d: %s", e.Chain, e.Seq, e.Reason)
}

// VerifyChain recomputes a chain's hashes; it returns a *ChainError naming
// the first entry that does not match.
func (s *Store) VerifyChain(name string, entries []AuditEntry) error {
	return AuditVerifier{hasher: s.hasher}.verifyFrom(name, chainHead{}, entries)
}

// AuditVerifier checks audit entries without Redis, with the same hashing
// as the Store that wrote them: "approvalbot audit verify --file" checks an
// export offline with it, so the offline and the live checks cannot drift.
type AuditVerifier struct{ hasher auditHasher }

// NewAuditVerifier verifies entries hashed under key (AUDIT_KEY; empty for
// plain SHA-256), as Options.AuditKey hashes them.
func NewAuditVerifier(key []byte) AuditVerifier { return AuditVerifier{hasher: auditHasher{key: key}} }

// CheckLink checks that e is the entry that follows the entry (prevSeq,
// prevHash) of chain name: its sequence number, its link and its own hash.
// prevSeq 0 and prevHash "" check a chain's first entry.
func (v AuditVerifier) CheckLink(name string, prevSeq int64, prevHash string, e AuditEntry) error {
	seq := prevSeq + 1
	switch {
	case e.Seq != seq:
		return &ChainError{Chain: name, Seq: seq, Reason: fmt.Sprintf("sequence number is %d, want %d (an entry was removed or inserted)", e.Seq, seq)}
	case e.Prev != prevHash:
		return &ChainError{Chain: name, Seq: seq, Reason: "prev does not match the hash of the entry before it"}
	}
	return v.CheckHash(name, e)
}

// CheckHash checks only that e's hash covers its content: for the first
// entry of a partial chain, whose predecessor is not at hand.
func (v AuditVerifier) CheckHash(name string, e AuditEntry) error {
	if v.hasher.sum(e) != e.Hash {
		return &ChainError{Chain: name, Seq: e.Seq, Reason: "hash does not match the entry's content (it was modified)"}
	}
	return nil
}

func (v AuditVerifier) verifyFrom(name string, prev chainHead, entries []AuditEntry) error {
	for _, e := range entries {
		if err := v.CheckLink(name, prev.seq, prev.hash, e); err != nil {
			return err
		}
		prev = chainHead{seq: e.Seq, hash: e.Hash}
	}
	return nil
}

// queueAudit appends events to the request's chain, linked to reqHead (read
// with the request), and records them for its shard's global chain: the
// write's script gives them their sequence numbers (cmdGlobalAudit) and the
// sealer links them (seal.go). first marks the request's first entries (a
// create): the script records the global seq of the first as audit_gseq0.
// It returns the request chain's new head.
func (s *Store) queueAudit(ctx context.Context, p redis.Pipeliner, id string, at time.Time, reqHead chainHead, events []AuditEvent, first bool) chainHead {
	shard := shardOf(id)
	args := []any{cmdGlobalAudit, s.keys.auditShard(shard), s.keys.auditShardPending(shard), s.keys.auditShardBase(shard),
		s.keys.auditShardSeq(shard), s.keys.request(id), boolArg(first)}
	entries := make([]any, 0, len(events))
	for _, ev := range events {
		e := AuditEntry{Seq: reqHead.seq + 1, At: at.UTC(), RequestID: id, Event: ev.Event, Actor: ev.Actor, Data: ev.Data, Prev: reqHead.hash}
		e.Hash = s.hasher.sum(e)
		entries = append(entries, encodeRequestEntry(e)) // auditcompact.go
		reqHead = chainHead{seq: e.Seq, hash: e.Hash}
		// Seq 0 (the script writes the real one), Prev and Hash empty (the
		// sealer writes them): an unsealed global entry.
		args = append(args, pendingGlobalEntry(e.At, id, e.Hash))
	}
	if len(entries) > 0 {
		p.RPush(ctx, s.keys.auditRequest(id), entries...)
	}
	p.Do(ctx, args...)
	return reqHead
}

// Request hash fields of the audit's global chain: gseqField is the global
// seq of the request's newest audit entry, gseq0Field that of its first
// (set at Create: global entries before it belong to an earlier request of
// the same id, deleted by retention).
const (
	gseqField  = "audit_gseq"
	gseq0Field = "audit_gseq0"
)

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("store: encode %T: %v", v, err)) // only plain data is encoded
	}
	return string(b)
}

var errNoChange = errors.New("store: no change")
