package store

import (
	"bufio"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// ExportReport is the outcome of verifying an audit export.
type ExportReport struct {
	Chains, Entries int
	// Partial names the chains a time range cut: their links within it
	// verified, but not that they start at entry 1 or end at their head.
	Partial []string
	// Trimmed names the shard chains that start after a base (retention
	// removed their older entries, after an export).
	Trimmed []string
	// CrossChecked counts the global entries matched against the request
	// entry they name; Unchecked those whose request entry is not in the
	// file: its request was deleted by retention, or a time range left it
	// out.
	CrossChecked, Unchecked int
	// Legacy: the export is of format 1, whose header and line count no
	// digest covers.
	Legacy bool
}

// exportedChain is what VerifyExport knows of one chain while reading it.
type exportedChain struct {
	name     string
	request  string // request chains: the request id
	head     chainHead
	complete bool
	started  bool      // an entry was read
	last     chainHead // the last entry read (the base before any)
	// Request chains: the global seq of the request's first entry, the
	// hashes read and the times of the first and last entry.
	firstGlobal     int64
	hashes          map[string]bool
	firstAt, lastAt time.Time
}

// globalRef is a global entry naming a request entry, kept until the
// request's chain in the file was read.
type globalRef struct {
	chain string
	seq   int64
	at    time.Time
}

// maxExportLine bounds one line of an export (an entry's data is small; this
// is far above any, and keeps a corrupt file from exhausting memory).
const maxExportLine = 4 << 20

// VerifyExport checks an audit export (see ExportAudit) offline, with v
// hashing as the exporting store did. It recomputes every entry's hash and
// link in order, checks that each complete chain runs from entry 1 to the
// head it was exported with, and that the trailer counts what precedes it.
// It checks that each global entry naming an entry of a request chain in
// the file matches it (the request entry with that hash is there), and the
// trailer's digest over every line before it (so the header, the chain
// lines and the line count are covered too: with AUDIT_KEY nobody without
// the key can edit them). It returns at the first problem: a *ChainError
// naming the chain and entry, or an error naming the line of a malformed
// file. Only the chains' heads are held, not their entries, and the
// references of one shard's global chain until its request chains are read.
func (v AuditVerifier) VerifyExport(r io.Reader) (ExportReport, error) {
	var rep ExportReport
	br := bufio.NewReaderSize(r, maxExportLine)
	chains := map[string]*exportedChain{}
	var order []string
	full, sawHeader, sawTrailer := false, false, false
	var trailer ExportLine
	trailerLine := 0
	digest := v.hasher.new()
	// refs are the current shard's global entries by request and hash.
	refs := map[string]map[string]globalRef{}
	var cur *exportedChain // the chain whose entries are being read
	for lineNo := 1; ; lineNo++ {
		raw, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return rep, fmt.Errorf("export line %d: longer than the %d bytes an entry can be", lineNo, maxExportLine)
		}
		if len(raw) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return rep, fmt.Errorf("read export line %d: %w", lineNo, err)
		}
		var l ExportLine
		if jerr := json.Unmarshal(raw, &l); jerr != nil {
			return rep, fmt.Errorf("export line %d is not JSON: %w", lineNo, jerr)
		}
		if sawTrailer {
			return rep, fmt.Errorf("export line %d follows the trailer", lineNo)
		}
		if !sawHeader && l.Kind != ExportHeader {
			return rep, fmt.Errorf("export line %d: the export does not start with its header", lineNo)
		}
		if l.Kind != ExportTrailer {
			digest.Write(raw)
		}
		if l.Kind == ExportChain || l.Kind == ExportTrailer {
			if err := cur.crossCheck(refs, &rep); err != nil {
				return rep, err
			}
			cur = nil
		}
		switch l.Kind {
		case ExportHeader:
			if sawHeader {
				return rep, fmt.Errorf("export line %d: a second header", lineNo)
			}
			if l.Format != ExportFormat && l.Format != ExportFormatV1 {
				return rep, fmt.Errorf("export line %d: format %q, want %q", lineNo, l.Format, ExportFormat)
			}
			rep.Legacy = l.Format == ExportFormatV1
			if keyed := len(v.hasher.key) > 0; keyed != (l.Hash == "hmac-sha256") {
				return rep, fmt.Errorf("export line %d: the export is hashed with %s but AUDIT_KEY is %s", lineNo, l.Hash, map[bool]string{true: "set", false: "unset"}[keyed])
			}
			sawHeader, full = true, l.Since == nil && l.Until == nil
		case ExportChain:
			if _, dup := chains[l.Chain]; dup || l.Chain == "" {
				return rep, fmt.Errorf("export line %d: chain %q declared twice or unnamed", lineNo, l.Chain)
			}
			if full && !l.Complete {
				return rep, &ChainError{Chain: l.Chain, Seq: 1, Reason: "a full export marks it partial (the export was edited)"}
			}
			cur = &exportedChain{name: l.Chain, request: l.RequestID, head: parseHead(l.Head), complete: l.Complete,
				firstGlobal: l.FirstGlobalSeq}
			if l.RequestID == "" {
				cur.last = parseHead(l.Base)
				if cur.last.seq > 0 {
					rep.Trimmed = append(rep.Trimmed, l.Chain)
				}
				rep.Unchecked += uncheckedRefs(refs)
				clear(refs) // the request chains that follow are this shard's
			} else {
				cur.hashes = map[string]bool{}
			}
			chains[l.Chain] = cur
			order = append(order, l.Chain)
		case ExportEntry:
			c := chains[l.Chain]
			if c == nil || l.Entry == nil {
				return rep, fmt.Errorf("export line %d: an entry of chain %q, which no chain line declared", lineNo, l.Chain)
			}
			if c != cur {
				return rep, fmt.Errorf("export line %d: an entry of chain %q after another chain began", lineNo, l.Chain)
			}
			if err := v.checkExported(l, c); err != nil {
				return rep, err
			}
			e := l.Entry
			c.last, c.started = chainHead{seq: e.Seq, hash: e.Hash}, true
			switch {
			case c.request != "":
				c.hashes[e.Hash] = true
				if c.firstAt.IsZero() {
					c.firstAt = e.At
				}
				c.lastAt = e.At
			case e.EntryHash != "":
				if refs[e.RequestID] == nil {
					refs[e.RequestID] = map[string]globalRef{}
				}
				refs[e.RequestID][e.EntryHash] = globalRef{chain: l.Chain, seq: e.Seq, at: e.At}
			}
			rep.Entries++
		case ExportTrailer:
			trailer, trailerLine, sawTrailer = l, lineNo, true
			rep.Unchecked += uncheckedRefs(refs)
		default:
			return rep, fmt.Errorf("export line %d: unknown kind %q", lineNo, l.Kind)
		}
	}
	if !sawTrailer {
		return rep, errors.New("the export has no trailer: it was cut short")
	}
	for _, name := range order {
		c := chains[name]
		if c.complete {
			if err := lastMatchesHead(name, c.last, c.head.String()); err != nil {
				return rep, err
			}
		} else {
			rep.Partial = append(rep.Partial, name)
		}
	}
	// The counts last: a chain cut short names itself above, which says
	// more than the count it also upsets.
	if trailer.Chains != len(chains) || trailer.Entries != rep.Entries {
		return rep, fmt.Errorf("export line %d: the trailer counts %d chains and %d entries, the export holds %d and %d (lines were removed)",
			trailerLine, trailer.Chains, trailer.Entries, len(chains), rep.Entries)
	}
	if !rep.Legacy {
		if trailer.Lines != trailerLine-1 {
			return rep, fmt.Errorf("export line %d: the trailer counts %d lines before it, the export holds %d (lines were removed or added)",
				trailerLine, trailer.Lines, trailerLine-1)
		}
		if !hmac.Equal([]byte(trailer.Digest), []byte(hex.EncodeToString(digest.Sum(nil)))) {
			return rep, fmt.Errorf("export line %d: the trailer's digest does not match the lines before it: the header or a chain line was edited", trailerLine)
		}
	}
	rep.Chains = len(chains)
	slices.Sort(rep.Partial)
	return rep, nil
}

func uncheckedRefs(refs map[string]map[string]globalRef) int {
	n := 0
	for _, m := range refs {
		n += len(m)
	}
	return n
}

// crossCheck checks, once a request chain was read, that every global entry
// of its shard naming an entry of the request is matched by an entry of the
// chain in the file. References before the request's first global entry are
// of an earlier request of that id (deleted by retention). An export widens
// a chain cut by its time range to every entry its global entries name, so
// all must be there; in a format-1 export, which did not, those of a partial
// chain are checked only within its times (an entry outside the run a time
// range cut has a time outside it). Nil c or a shard chain: nothing.
func (c *exportedChain) crossCheck(refs map[string]map[string]globalRef, rep *ExportReport) error {
	legacy := rep.Legacy
	if c == nil || c.request == "" {
		return nil
	}
	if c.complete {
		// A chain cut short says so first: that is why it misses entries.
		if err := lastMatchesHead(c.name, c.last, c.head.String()); err != nil {
			return err
		}
	}
	for hash, ref := range refs[c.request] {
		switch {
		case c.hashes[hash]:
			rep.CrossChecked++
		case ref.seq < c.firstGlobal:
			rep.Unchecked++
		case c.complete || !legacy || (c.started && !ref.at.Before(c.firstAt) && !ref.at.After(c.lastAt)):
			return &ChainError{Chain: ref.chain, Seq: ref.seq, Reason: fmt.Sprintf(
				"references entry %s of request %s, which the exported chain of request %s does not hold", hash, c.request, c.request)}
		}
	}
	delete(refs, c.request)
	return nil
}

// checkExported checks one entry line against the chain read so far.
func (v AuditVerifier) checkExported(l ExportLine, c *exportedChain) error {
	e := *l.Entry
	if l.RequestID != "" && e.RequestID != l.RequestID {
		return &ChainError{Chain: l.Chain, Seq: e.Seq, Reason: fmt.Sprintf("the entry is of request %q", e.RequestID)}
	}
	if e.Seq > c.head.seq {
		return &ChainError{Chain: l.Chain, Seq: e.Seq, Reason: fmt.Sprintf("the entry is past the chain's head, entry %d", c.head.seq)}
	}
	if !c.started && !c.complete {
		// The first entry of a cut chain: its predecessor is outside the
		// range, so only its own hash can be checked.
		if err := v.CheckHash(l.Chain, e); err != nil {
			return err
		}
	} else if err := v.CheckLink(l.Chain, c.last.seq, c.last.hash, e); err != nil {
		return err
	}
	if e.Seq == c.head.seq && e.Hash != c.head.hash {
		return &ChainError{Chain: l.Chain, Seq: e.Seq, Reason: "the entry is not the one the chain's head records"}
	}
	return nil
}
