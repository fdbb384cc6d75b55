package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/store"
)

// auditVerify is "approvalbot audit verify": it recomputes every audit hash
// chain in REDIS_URL (with AUDIT_KEY when the bot uses one) and names the
// first bad entry of each broken chain. It exits non-zero on any problem.
func auditVerify(ctx context.Context, out io.Writer) error {
	st, closeStore, err := openAuditStore(ctx, "audit verify")
	if err != nil {
		return err
	}
	defer closeStore()
	rep, err := st.VerifyAll(ctx)
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(out, "BROKEN:", p)
	}
	if rep.Deleted > 0 {
		fmt.Fprintf(out, "%d global entries name requests deleted by retention after an export covered them\n", rep.Deleted)
	}
	if rep.Pending > 0 {
		fmt.Fprintf(out, "%d global entries are written but not sealed yet (the running service seals them within a second)\n", rep.Pending)
	}
	fmt.Fprintf(out, "checked %d shard chains, %d request chains, %d entries: %d problems\n",
		store.Shards, rep.Requests, rep.Entries, len(rep.Problems))
	if len(rep.Problems) > 0 {
		return fmt.Errorf("audit verify: %d broken chains", len(rep.Problems))
	}
	return nil
}

// openAuditStore opens the bot's store (REDIS_URL, REDIS_PREFIX, AUDIT_KEY)
// for an audit command; the caller calls the func it returns when done.
func openAuditStore(ctx context.Context, name string) (*store.Store, func(), error) {
	cfg, err := bot.LoadConfig()
	if err != nil {
		return nil, nil, err
	}
	if cfg.EmbeddedRedis() {
		return nil, nil, errors.New(name + " needs REDIS_URL: the embedded Redis of a stopped bot is gone. " +
			"A local bot still running serves its embedded Redis at the addr= its start-up log prints: " +
			"REDIS_URL=redis://127.0.0.1:<port> " + name)
	}
	rdb, closeRedis, err := bot.OpenRedis(ctx, cfg, bot.NewLogger(cfg, io.Discard))
	if err != nil {
		return nil, nil, err
	}
	st, err := store.New(rdb, store.Options{Prefix: cfg.RedisPrefix, AuditKey: []byte(cfg.AuditKey)})
	if err != nil {
		closeRedis()
		return nil, nil, err
	}
	return st, closeRedis, nil
}

// auditExport is "approvalbot audit export": it writes the audit chains (the
// entries between inv.since and inv.until; zero is unbounded) as NDJSON to
// stdout, or to inv.out, for "audit verify --file" to check offline, and a
// summary to log. A file is written beside its name, fsync'd and renamed
// into place, so it exists only whole. Once the export is complete (its
// trailer written and flushed; a file synced) it records the export marks
// retention relies on, unless --mark=false, or stdout is a pipe or terminal
// and --mark was not given: nothing is marked for an export that failed
// midway, or one that nothing is known to have kept.
func auditExport(ctx context.Context, stdout, log io.Writer, inv invocation) error {
	st, closeStore, err := openAuditStore(ctx, "audit export")
	if err != nil {
		return err
	}
	defer closeStore()
	var sum store.ExportSummary
	kept := true // the export is known to be stored whole: a file, synced
	if inv.out == "" {
		if sum, err = st.Export(ctx, stdout, inv.since, inv.until); err != nil {
			return fmt.Errorf("audit export: %w", err)
		}
		if kept, err = syncIfFile(stdout); err != nil {
			return fmt.Errorf("audit export: sync stdout: %w", err)
		}
	} else if sum, err = exportToFile(ctx, st, inv); err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	fmt.Fprintf(log, "exported %d chains, %d entries\n", sum.Chains, sum.Entries)
	switch {
	case !inv.mark:
		fmt.Fprintln(log, "export marks not recorded (--mark=false): retention does not count on this export")
		return nil
	case !kept && !inv.markSet:
		// A pipe (gzip, an upload) may fail after reading every line;
		// marking then would let retention delete what no file holds.
		fmt.Fprintln(log, "export marks not recorded: stdout is not a file, so whether the export was kept is unknown; "+
			"use --out FILE (or redirect stdout to a file), or --mark to record them anyway")
		return nil
	}
	advanced, err := st.MarkExported(ctx, sum.Runs)
	if err != nil {
		return fmt.Errorf("audit export: the export is complete, but recording its marks failed (run it again): %w", err)
	}
	fmt.Fprintf(log, "export marks advanced on %d of %d shards\n", len(advanced), len(sum.Runs))
	return nil
}

// exportToFile writes the export to a temporary file beside inv.out,
// fsyncs it, renames it to inv.out and fsyncs the directory.
func exportToFile(ctx context.Context, st *store.Store, inv invocation) (store.ExportSummary, error) {
	dir := filepath.Dir(inv.out)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(inv.out)+".*.tmp")
	if err != nil {
		return store.ExportSummary{}, err
	}
	defer os.Remove(tmp.Name()) // gone once renamed; removed on failure
	sum, err := st.Export(ctx, tmp, inv.since, inv.until)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), inv.out)
	}
	if err == nil {
		err = syncDir(dir)
	}
	return sum, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// syncIfFile fsyncs w when it is a regular file (stdout redirected to
// one) and reports whether it was; a pipe or a terminal has nothing to sync.
func syncIfFile(w io.Writer) (bool, error) {
	f, ok := w.(*os.File)
	if !ok {
		return false, nil
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false, nil
	}
	return true, f.Sync()
}

// auditVerifyFile is "approvalbot audit verify --file": it checks an export
// offline. It needs AUDIT_KEY and nothing else (no Redis, none of the bot's
// other configuration), so an auditor can run it on a copy of the export;
// the key is read directly rather than through bot.LoadConfig, which would
// ask for the rest.
func auditVerifyFile(file string, stdin io.Reader, out io.Writer) error {
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("audit verify: open export: %w", err)
		}
		defer f.Close()
		in = f
	}
	rep, err := store.NewAuditVerifier([]byte(os.Getenv("AUDIT_KEY"))).VerifyExport(in)
	if err != nil {
		fmt.Fprintln(out, "BROKEN:", err)
		return fmt.Errorf("audit verify: %s: %w", file, err)
	}
	if rep.Legacy {
		fmt.Fprintln(out, "warning: an export of format 1: its header and line count are covered by no digest (export again to have them checked)")
	}
	for _, p := range rep.Partial {
		fmt.Fprintf(out, "partial: %s (cut by the export's time range: its links within it verified)\n", p)
	}
	for _, c := range rep.Trimmed {
		fmt.Fprintf(out, "trimmed: %s starts after its base (older entries were removed by retention after an export)\n", c)
	}
	fmt.Fprintf(out, "cross-checked %d global entries against their request chains (%d name requests not in the file)\n",
		rep.CrossChecked, rep.Unchecked)
	fmt.Fprintf(out, "verified %d chains, %d entries (%d partial): intact\n", rep.Chains, rep.Entries, len(rep.Partial))
	return nil
}
