package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ExportReport is the outcome of verifying an audit export.
type ExportReport struct {
	Chains, Entries int
	// Partial names the chains a time range cut: their links within it
	// verified, but not that they start at entry 1 or end at their head.
	Partial []string
}

// exportedChain is what VerifyExport knows of one chain while reading it.
type exportedChain struct {
	head     chainHead
	complete bool
	last     chainHead // the last entry read (zero: none yet)
}

// maxExportLine bounds one line of an export (an entry's data is small; this
// is far above any, and keeps a corrupt file from exhausting memory).
const maxExportLine = 4 << 20

// VerifyExport checks an audit export (see ExportAudit) offline, with v
// hashing as the exporting store did. It recomputes every entry's hash and
// link in order, checks that each complete chain runs from entry 1 to the
// head it was exported with, and that the trailer counts what precedes it.
// It returns at the first problem: a *ChainError naming the chain and entry,
// or an error naming the line of a malformed file. Only the chains' heads
// are held, not their entries.
//
// What it cannot see: in a time-range export a chain's Complete flag is the
// exporter's word (it is not hashed), so entries removed from the ends of a
// partial chain go unnoticed; a full export (no range) requires every chain
// to be complete.
func (v AuditVerifier) VerifyExport(r io.Reader) (ExportReport, error) {
	var rep ExportReport
	br := bufio.NewReaderSize(r, maxExportLine)
	chains := map[string]*exportedChain{}
	var order []string
	full, sawHeader, sawTrailer := false, false, false
	var trailer ExportLine
	trailerLine := 0
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
		switch l.Kind {
		case ExportHeader:
			if sawHeader {
				return rep, fmt.Errorf("export line %d: a second header", lineNo)
			}
			if l.Format != ExportFormat {
				return rep, fmt.Errorf("export line %d: format %q, want %q", lineNo, l.Format, ExportFormat)
			}
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
			chains[l.Chain] = &exportedChain{head: parseHead(l.Head), complete: l.Complete}
			order = append(order, l.Chain)
		case ExportEntry:
			c := chains[l.Chain]
			if c == nil || l.Entry == nil {
				return rep, fmt.Errorf("export line %d: an entry of chain %q, which no chain line declared", lineNo, l.Chain)
			}
			if err := v.checkExported(l, c); err != nil {
				return rep, err
			}
			c.last = chainHead{seq: l.Entry.Seq, hash: l.Entry.Hash}
			rep.Entries++
		case ExportTrailer:
			trailer, trailerLine, sawTrailer = l, lineNo, true
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
	rep.Chains = len(chains)
	slices.Sort(rep.Partial)
	return rep, nil
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
	if c.last == (chainHead{}) && !c.complete {
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
