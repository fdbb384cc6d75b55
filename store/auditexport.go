package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
)

// ExportFormat names the layout of an audit export; a verifier refuses
// another, rather than misreading it.
const ExportFormat = "approvalbot-audit-export/1"

// Kinds of ExportLine.
const (
	ExportHeader  = "header"
	ExportChain   = "chain"
	ExportEntry   = "entry"
	ExportTrailer = "trailer"
)

// ExportLine is one line of an audit export (NDJSON). The first line is the
// header (the export's parameters), the last the trailer (how many chains and
// entries precede it, so a truncated file shows). In between, each chain is a
// chain line (its head as stored when it was read, and whether the export
// holds its whole history) followed by its entries, oldest first. The heads
// travel on the chain lines rather than in the header so that the export
// streams: a header holding them all would need every chain read first.
type ExportLine struct {
	Kind string `json:"kind"`

	// Header.
	Format     string     `json:"format,omitempty"`
	Hash       string     `json:"hash,omitempty"` // "hmac-sha256" (AUDIT_KEY set) or "sha256"
	ExportedAt *time.Time `json:"exported_at,omitempty"`
	Since      *time.Time `json:"since,omitempty"` // absent: from the beginning
	Until      *time.Time `json:"until,omitempty"` // absent: up to the export

	// Chain and entry lines.
	Chain     string `json:"chain,omitempty"`      // "request <id>" or "shard NN"
	RequestID string `json:"request_id,omitempty"` // request chains only
	// Head (chain line) is the chain's "<seq>:<hash>" as stored.
	Head string `json:"head,omitempty"`
	// Complete (chain line): the chain's entries 1 to Head follow; else a
	// time range cut it and only the entries within it follow.
	Complete bool        `json:"complete,omitempty"`
	Entry    *AuditEntry `json:"entry,omitempty"` // entry line: the entry with its seq, prev and hash

	// Trailer.
	Chains  int `json:"chains,omitempty"`
	Entries int `json:"entries,omitempty"`
}

// exportPage is how many entries of a shard's global chain one read
// fetches: the global chains hold every event and are read a page at a time.
const exportPage = 500

// ExportAudit writes every audit chain to w as NDJSON (see ExportLine): each
// shard's global chain (with the standalone intake_refused entries) and every
// request chain it references. since and until (zero: unbounded) restrict it
// to entries whose time is within them; a chain is then cut to the
// contiguous run from its first entry at or after since to its last at or
// before until, so its links stay checkable even if clocks disagreed.
//
// There is no index of audit chains to read, and no SCAN: each shard's
// global chain references every request entry of the shard, so it is the
// list of request chains. It is read a page at a time up to the head read
// first (entries past it are newer than the export); each request chain is
// read whole, with its head, in one transaction. The ids of one shard's
// exported requests are the only thing held beyond one chain.
func (s *Store) ExportAudit(ctx context.Context, w io.Writer, since, until time.Time) (chains, entries int, err error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	at := s.now().UTC()
	header := ExportLine{Kind: ExportHeader, Format: ExportFormat, Hash: "sha256", ExportedAt: &at}
	if len(s.hasher.key) > 0 {
		header.Hash = "hmac-sha256"
	}
	if !since.IsZero() {
		t := since.UTC()
		header.Since = &t
	}
	if !until.IsZero() {
		t := until.UTC()
		header.Until = &t
	}
	if err := enc.Encode(header); err != nil {
		return 0, 0, fmt.Errorf("store: export audit: write header: %w", err)
	}
	within := func(e AuditEntry) (afterSince, beforeUntil bool) {
		return since.IsZero() || !e.At.Before(since), until.IsZero() || !e.At.After(until)
	}
	for shard := range Shards {
		ids, n, err := s.exportShard(ctx, enc, shard, within)
		if err != nil {
			return chains, entries, err
		}
		if n > 0 {
			chains++
			entries += n
		}
		for _, id := range ids {
			chain, head, err := s.requestChain(ctx, id)
			if err != nil {
				return chains, entries, err
			}
			lo, hi := cut(len(chain), func(i int) AuditEntry { return chain[i] }, within)
			if lo > hi {
				continue
			}
			if err := writeChain(enc, "request "+id, id, head, lo == 0 && hi == len(chain)-1, chain[lo:hi+1]); err != nil {
				return chains, entries, err
			}
			chains++
			entries += hi - lo + 1
		}
	}
	if err := enc.Encode(ExportLine{Kind: ExportTrailer, Chains: chains, Entries: entries}); err != nil {
		return chains, entries, fmt.Errorf("store: export audit: write trailer: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return chains, entries, fmt.Errorf("store: export audit: %w", err)
	}
	return chains, entries, nil
}

// exportShard writes the part of a shard's global chain within the range
// and returns the ids of the requests it references, in order, and how
// many entries it wrote. It reads the chain twice, a page at a time: once to
// find the run to export, once to write it.
func (s *Store) exportShard(ctx context.Context, enc *json.Encoder, shard int, within func(AuditEntry) (bool, bool)) ([]string, int, error) {
	name := fmt.Sprintf("shard %02d", shard)
	key := s.keys.auditShard(shard)
	head, err := s.rdb.Get(ctx, s.keys.auditShardHead(shard)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("store: export audit: read head of %s: %w", name, err)
	}
	n := parseHead(head).seq
	lo, hi := int64(-1), int64(-1)
	err = s.pageChain(ctx, key, 0, n-1, func(i int64, e AuditEntry) error {
		after, before := within(e)
		if after && lo < 0 {
			lo = i
		}
		if before {
			hi = i
		}
		return nil
	})
	if err != nil || lo < 0 || hi < lo {
		return nil, 0, err
	}
	complete := lo == 0 && hi == n-1
	if err := enc.Encode(ExportLine{Kind: ExportChain, Chain: name, Head: head, Complete: complete}); err != nil {
		return nil, 0, fmt.Errorf("store: export audit: write %s: %w", name, err)
	}
	var ids []string
	seen := map[string]bool{}
	written := 0
	err = s.pageChain(ctx, key, lo, hi, func(_ int64, e AuditEntry) error {
		if e.EntryHash != "" && !seen[e.RequestID] {
			seen[e.RequestID] = true
			ids = append(ids, e.RequestID)
		}
		written++
		return enc.Encode(ExportLine{Kind: ExportEntry, Chain: name, Entry: &e})
	})
	if err != nil {
		return nil, written, fmt.Errorf("store: export audit: %s: %w", name, err)
	}
	return ids, written, nil
}

// pageChain calls fn on the entries from..to (list indexes, inclusive) of
// the chain at key, reading exportPage of them at a time.
func (s *Store) pageChain(ctx context.Context, key string, from, to int64, fn func(int64, AuditEntry) error) error {
	for start := from; start <= to; start += exportPage {
		raw, err := s.rdb.LRange(ctx, key, start, min(start+exportPage-1, to)).Result()
		if err != nil {
			return fmt.Errorf("store: read audit %s: %w", key, err)
		}
		page, err := decodeChain(key, raw)
		if err != nil {
			return err
		}
		for i, e := range page {
			if err := fn(start+int64(i), e); err != nil {
				return err
			}
		}
		if len(raw) < exportPage {
			return nil // the list is shorter than its head says: export what is there, verify tells
		}
	}
	return nil
}

// cut is the run [lo, hi] of a chain of n entries to export: from its first
// entry at or after since to its last at or before until (lo > hi: none).
func cut(n int, at func(int) AuditEntry, within func(AuditEntry) (bool, bool)) (lo, hi int) {
	lo, hi = n, -1
	for i := range n {
		after, before := within(at(i))
		if after && lo == n {
			lo = i
		}
		if before {
			hi = i
		}
	}
	return lo, hi
}

func writeChain(enc *json.Encoder, name, id, head string, complete bool, entries []AuditEntry) error {
	if err := enc.Encode(ExportLine{Kind: ExportChain, Chain: name, RequestID: id, Head: head, Complete: complete}); err != nil {
		return fmt.Errorf("store: export audit: write %s: %w", name, err)
	}
	for i := range entries {
		if err := enc.Encode(ExportLine{Kind: ExportEntry, Chain: name, RequestID: id, Entry: &entries[i]}); err != nil {
			return fmt.Errorf("store: export audit: write %s: %w", name, err)
		}
	}
	return nil
}
