package store

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
)

// ExportFormat names the layout of an audit export; a verifier refuses
// another, rather than misreading it.
const ExportFormat = "approvalbot-audit-export/2"

// ExportFormatV1 is the first layout, without the trailer's digest (its
// header and line count were covered by no hash): VerifyExport still reads
// it, and says so.
const ExportFormatV1 = "approvalbot-audit-export/1"

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
	// Base (a shard's chain line) is the "<seq>:<hash>" of the last entry
	// the retention sweep removed from the chain's front: a complete chain
	// then runs from the entry after it, linked to it.
	Base string `json:"base,omitempty"`
	// FirstGlobalSeq (a request's chain line) is the global seq of the
	// request's first entry: global entries before it name an earlier
	// request of the same id, deleted by retention.
	FirstGlobalSeq int64 `json:"first_global_seq,omitempty"`
	// Complete (chain line): the chain's entries 1 to Head follow; else a
	// time range cut it and only the entries within it follow.
	Complete bool        `json:"complete,omitempty"`
	Entry    *AuditEntry `json:"entry,omitempty"` // entry line: the entry with its seq, prev and hash

	// Trailer.
	Chains  int `json:"chains,omitempty"`
	Entries int `json:"entries,omitempty"`
	// Lines is how many lines precede the trailer, and Digest the hex
	// HMAC-SHA256 (under AUDIT_KEY) or SHA-256 of all of them, bytes as
	// written, newlines included: the header and the chain lines are
	// covered too, and a file cut short or edited anywhere shows.
	Lines  int    `json:"lines,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// exportPage is how many entries of a shard's global chain one read
// fetches: the global chains hold every event and are read a page at a time.
const exportPage = 500

// ExportSummary is what an export wrote: its counts, and the run of each
// shard's global chain it holds (for MarkExported, once the export is safe).
type ExportSummary struct {
	Chains, Entries int
	Runs            []ExportRun
}

// ExportAudit is Export, returning its counts only.
func (s *Store) ExportAudit(ctx context.Context, w io.Writer, since, until time.Time) (chains, entries int, err error) {
	sum, err := s.Export(ctx, w, since, until)
	return sum.Chains, sum.Entries, err
}

// Export writes every audit chain to w as NDJSON (see ExportLine): each
// shard's global chain (with the standalone intake_refused entries, from
// its base when retention trimmed it) and every request chain it
// references or the shard's indexes hold (eachRequest). since and until (zero: unbounded)
// restrict it to entries whose time is within them; a chain is then cut to
// the contiguous run from its first entry at or after since to its last at
// or before until, so its links stay checkable even if clocks disagreed.
//
// There is no index of audit chains to read, and no SCAN: each shard's
// global chain references every request entry of the shard still in it, so
// it is the list of request chains, completed by the shard's indexes. It is
// read a page at a time up to the head read first (entries past it are
// newer than the export); each request chain is read whole, with its head,
// in one transaction. The ids of one shard's exported requests are the only
// thing held beyond one chain. The trailer carries the digest of every line
// before it. Export marks nothing: the caller calls MarkExported with the
// runs once the export is stored safely. Pending global entries (seal.go)
// are sealed first.
func (s *Store) Export(ctx context.Context, w io.Writer, since, until time.Time) (ExportSummary, error) {
	var sum ExportSummary
	// What was written before the export is exported: pending global
	// entries are sealed first (seal.go; refused under another audit key).
	if err := s.Seal(ctx); err != nil {
		return sum, fmt.Errorf("store: export audit: %w", err)
	}
	bw := bufio.NewWriter(w)
	digest := s.hasher.new()
	enc := json.NewEncoder(io.MultiWriter(bw, digest))
	lines := 0
	write := func(l ExportLine) error {
		lines++
		return enc.Encode(l)
	}
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
	if err := write(header); err != nil {
		return sum, fmt.Errorf("store: export audit: write header: %w", err)
	}
	within := func(e AuditEntry) (afterSince, beforeUntil bool) {
		return since.IsZero() || !e.At.Before(since), until.IsZero() || !e.At.After(until)
	}
	ranged := !since.IsZero() || !until.IsZero()
	for shard := range Shards {
		// With a range, the request entries the exported global entries
		// name: each request chain is widened to hold them, even if a
		// writer's clock put one just outside the range, so the global
		// run the export marks is covered by the request chains too.
		var named map[string]bool
		if ranged {
			named = map[string]bool{}
		}
		ids, run, err := s.exportShard(ctx, write, shard, within, named)
		if err != nil {
			return sum, err
		}
		if n := int(run.To - run.From + 1); run.To > 0 {
			sum.Chains++
			sum.Entries += n
			sum.Runs = append(sum.Runs, run)
		}
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			seen[id] = true
		}
		// Requests whose global entries retention trimmed are in no
		// global entry: the shard's indexes name them.
		err = s.eachRequest(ctx, shard, func(id string) error {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
			return nil
		})
		if err != nil {
			return sum, err
		}
		for _, id := range ids {
			c, err := s.readRequestChain(ctx, id)
			if err != nil {
				return sum, err
			}
			chain := c.entries
			lo, hi := cut(len(chain), func(i int) AuditEntry { return chain[i] }, within)
			for i, e := range chain {
				if named[e.Hash] {
					lo, hi = min(lo, i), max(hi, i)
				}
			}
			if lo > hi {
				continue
			}
			line := ExportLine{Kind: ExportChain, Chain: "request " + id, RequestID: id, Head: c.head,
				Complete: lo == 0 && hi == len(chain)-1, FirstGlobalSeq: c.gseq0}
			if err := writeChain(write, line, chain[lo:hi+1]); err != nil {
				return sum, err
			}
			sum.Chains++
			sum.Entries += hi - lo + 1
		}
	}
	trailer := ExportLine{Kind: ExportTrailer, Chains: sum.Chains, Entries: sum.Entries, Lines: lines,
		Digest: hex.EncodeToString(digest.Sum(nil))}
	if err := json.NewEncoder(bw).Encode(trailer); err != nil {
		return sum, fmt.Errorf("store: export audit: write trailer: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return sum, fmt.Errorf("store: export audit: %w", err)
	}
	return sum, nil
}

// exportShard writes the part of a shard's global chain within the range
// and returns the ids of the requests it references, in order, and the run
// of global seqs it wrote (To 0: none); it adds the request entries they
// name to named, unless it is nil. It reads the chain twice, a page at
// a time: once to find the run to export, once to write it.
func (s *Store) exportShard(ctx context.Context, write func(ExportLine) error, shard int, within func(AuditEntry) (bool, bool),
	named map[string]bool) ([]string, ExportRun, error) {
	name := fmt.Sprintf("shard %02d", shard)
	key := s.keys.auditShard(shard)
	var headCmd, baseCmd *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		headCmd = p.Get(ctx, s.keys.auditShardHead(shard))
		baseCmd = p.Get(ctx, s.keys.auditShardBase(shard))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, ExportRun{}, fmt.Errorf("store: export audit: read head of %s: %w", name, err)
	}
	head, base := headCmd.Val(), parseHead(baseCmd.Val())
	// The list holds base+1..head: index i is entry base+1+i, unless the
	// retention sweep trims the chain while it is read (checked below).
	n := parseHead(head).seq - base.seq
	inPlace := func(i int64, e AuditEntry) error {
		if e.Seq != base.seq+1+i {
			return fmt.Errorf("store: export audit: %s: entry %d is at %d: the retention sweep trimmed the chain during the export; export again", name, e.Seq, base.seq+1+i)
		}
		return nil
	}
	lo, hi := int64(-1), int64(-1)
	err = s.pageChain(ctx, key, 0, n-1, func(i int64, e AuditEntry) error {
		after, before := within(e)
		if after && lo < 0 {
			lo = i
		}
		if before {
			hi = i
		}
		return inPlace(i, e)
	})
	if err != nil || lo < 0 || hi < lo {
		return nil, ExportRun{}, err
	}
	line := ExportLine{Kind: ExportChain, Chain: name, Head: head, Complete: lo == 0 && hi == n-1}
	if base.seq > 0 {
		line.Base = base.String()
	}
	if err := write(line); err != nil {
		return nil, ExportRun{}, fmt.Errorf("store: export audit: write %s: %w", name, err)
	}
	var ids []string
	seen := map[string]bool{}
	run := ExportRun{Shard: shard}
	err = s.pageChain(ctx, key, lo, hi, func(i int64, e AuditEntry) error {
		if err := inPlace(i, e); err != nil {
			return err
		}
		if named != nil && e.EntryHash != "" {
			named[e.EntryHash] = true
		}
		if e.EntryHash != "" && !seen[e.RequestID] {
			seen[e.RequestID] = true
			ids = append(ids, e.RequestID)
		}
		if run.From == 0 {
			run.From = e.Seq
		}
		run.To = e.Seq
		return write(ExportLine{Kind: ExportEntry, Chain: name, Entry: &e})
	})
	if err != nil {
		return nil, ExportRun{}, fmt.Errorf("store: export audit: %s: %w", name, err)
	}
	return ids, run, nil
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

func writeChain(write func(ExportLine) error, line ExportLine, entries []AuditEntry) error {
	if err := write(line); err != nil {
		return fmt.Errorf("store: export audit: write %s: %w", line.Chain, err)
	}
	for i := range entries {
		if err := write(ExportLine{Kind: ExportEntry, Chain: line.Chain, RequestID: line.RequestID, Entry: &entries[i]}); err != nil {
			return fmt.Errorf("store: export audit: write %s: %w", line.Chain, err)
		}
	}
	return nil
}
