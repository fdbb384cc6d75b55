package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// audit export --out writes the file whole (and nothing to stdout); it
// records the export marks retention relies on unless --mark=false; a
// failed export marks nothing. verify --file then checks the trailer's
// digest (an edited header is caught) and reports a chain trimmed by
// retention. (Not parallel: it sets environment variables.)
func TestAuditExportOutAndMarks(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	t.Setenv("REDIS_URL", redistest.URL(t))
	t.Setenv("REDIS_PREFIX", prefix)
	t.Setenv("AUDIT_KEY", "cli-marks-key")
	t.Setenv("SLACK_BOT_TOKEN", "")
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st, err := store.New(rdb, store.Options{Prefix: prefix, AuditKey: []byte("cli-marks-key"), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id := fmt.Sprintf("mark-%d", i)
		if _, _, err := st.Create(ctx, store.NewRequest{ID: id, Agent: "pm", Document: []byte(`{}`), BodyHash: id, Channel: "C1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := approval.New(st, approval.Options{Now: func() time.Time { return now }}).Withdraw(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runCLI(ctx, args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	marked := func() int64 {
		t.Helper()
		marks, err := st.ExportMarks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, m := range marks {
			n += m
		}
		return n
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "export.ndjson")

	if code, _, stderr := run("audit", "export", "--out", filepath.Join(dir, "missing", "x.ndjson")); code != 1 || marked() != 0 {
		t.Fatalf("export into a missing directory: exit %d, %d marked\n%s", code, marked(), stderr)
	}
	code, stdout, stderr := run("audit", "export", "--out", path, "--mark=false")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "not recorded") || marked() != 0 {
		t.Fatalf("--mark=false: exit %d, %d marked, stdout %q\n%s", code, marked(), stdout, stderr)
	}
	if code, out, _ := run("audit", "verify", "--file", path); code != 0 || !strings.Contains(out, "cross-checked 6 global entries") {
		t.Fatalf("verify the file: exit %d\n%s", code, out)
	}
	// To stdout that is not a file (a pipe: here a buffer), nothing is
	// known to have kept the export: no mark unless --mark says so.
	code, stdout, stderr = run("audit", "export")
	if code != 0 || stdout == "" || !strings.Contains(stderr, "stdout is not a file") || marked() != 0 {
		t.Fatalf("export to a pipe: exit %d, %d marked\n%s", code, marked(), stderr)
	}
	// Redirected to a file, it is synced and marked.
	redirected, err := os.Create(filepath.Join(dir, "stdout.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer redirected.Close()
	var errOut bytes.Buffer
	if code := runCLI(ctx, []string{"audit", "export"}, redirected, &errOut); code != 0 || marked() != 6 {
		t.Fatalf("export to a redirected stdout: exit %d, %d marked (want the 6 global entries)\n%s", code, marked(), errOut.String())
	}
	// A later export to a file covers the same entries: the marks stay.
	code, _, stderr = run("audit", "export", "--out", path)
	if code != 0 || !strings.Contains(stderr, "export marks advanced") || marked() != 6 {
		t.Fatalf("export: exit %d, %d marked (want the 6 global entries)\n%s", code, marked(), stderr)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	// An edited header: only the trailer's digest can tell.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), `"exported_at":"2026`, `"exported_at":"2025`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("audit", "verify", "--file", path); code != 1 || !strings.Contains(out, "BROKEN:") || !strings.Contains(out, "digest") {
		t.Errorf("edited header: exit %d\n%s", code, out)
	}

	// A month on, retention deletes them and trims the shards' chains; a
	// new export starts at the bases and still verifies.
	now = now.Add(31 * 24 * time.Hour)
	for shard := range store.Shards {
		if _, err := st.Sweep(ctx, shard, store.RetentionOptions{Retention: 30 * 24 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Get(ctx, "mark-0"); err == nil {
		t.Fatal("mark-0 survived retention")
	}
	// The id is free again: submitted anew, in the shard the sweep trimmed.
	if _, _, err := st.Create(ctx, store.NewRequest{ID: "mark-0", Agent: "pm", Document: []byte(`{"again":1}`), BodyHash: "again", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("audit", "verify"); code != 0 || !strings.Contains(out, "1 request chains, 1 entries: 0 problems") {
		t.Errorf("audit verify after the sweep: exit %d\n%s", code, out)
	}
	code, export, stderr := run("audit", "export")
	if code != 0 {
		t.Fatalf("export after the sweep: exit %d\n%s", code, stderr)
	}
	var out bytes.Buffer
	if err := auditVerifyFile("-", strings.NewReader(export), &out); err != nil || !strings.Contains(out.String(), "trimmed: shard") ||
		!strings.Contains(out.String(), "verified 2 chains, 2 entries") {
		t.Fatalf("export after the sweep: %v\n%s", err, out.String())
	}
}

func TestAuditExportFlags(t *testing.T) {
	inv, err := parseArgs([]string{"audit", "export", "--out", "a.ndjson", "--mark=false"})
	if err != nil || inv.out != "a.ndjson" || inv.mark {
		t.Errorf("parse = %+v, %v", inv, err)
	}
	if inv, err := parseArgs([]string{"audit", "export"}); err != nil || !inv.mark || inv.markSet || inv.out != "" {
		t.Errorf("defaults = %+v, %v", inv, err)
	}
	if inv, err := parseArgs([]string{"audit", "export", "--mark"}); err != nil || !inv.mark || !inv.markSet {
		t.Errorf("--mark = %+v, %v", inv, err)
	}
}
