package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/store"
)

// auditVerify is "approvalbot audit verify": it recomputes every audit hash
// chain in REDIS_URL (with AUDIT_KEY when the bot uses one) and names the
// first bad entry of each broken chain. It exits non-zero on any problem.
func auditVerify(ctx context.Context, out io.Writer) error {
	cfg, err := bot.LoadConfig()
	if err != nil {
		return err
	}
	if cfg.EmbeddedRedis() {
		return errors.New("audit verify needs REDIS_URL: the embedded Redis of a stopped bot is gone")
	}
	rdb, closeRedis, err := bot.OpenRedis(ctx, cfg, bot.NewLogger(cfg, io.Discard))
	if err != nil {
		return err
	}
	defer closeRedis()
	st, err := store.New(rdb, store.Options{Prefix: cfg.RedisPrefix, AuditKey: []byte(cfg.AuditKey)})
	if err != nil {
		return err
	}
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
