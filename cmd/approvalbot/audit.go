package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

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
		return nil, nil, errors.New(name + " needs REDIS_URL: the embedded Redis of a stopped bot is gone")
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
// entries between since and until; zero is unbounded) to out as NDJSON, for
// "audit verify --file" to check offline, and a summary to log.
func auditExport(ctx context.Context, out, log io.Writer, since, until time.Time) error {
	st, closeStore, err := openAuditStore(ctx, "audit export")
	if err != nil {
		return err
	}
	defer closeStore()
	chains, entries, err := st.ExportAudit(ctx, out, since, until)
	if err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	fmt.Fprintf(log, "exported %d chains, %d entries\n", chains, entries)
	return nil
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
	for _, p := range rep.Partial {
		fmt.Fprintf(out, "partial: %s (cut by the export's time range: its links within it verified)\n", p)
	}
	fmt.Fprintf(out, "verified %d chains, %d entries (%d partial): intact\n", rep.Chains, rep.Entries, len(rep.Partial))
	return nil
}
