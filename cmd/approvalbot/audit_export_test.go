package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// approvalbot audit export writes what audit verify --file checks offline
// (without REDIS_URL), and an edited export fails naming the entry. (Not
// parallel: it sets environment variables.)
func TestAuditExportCommand(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	t.Setenv("REDIS_URL", redistest.URL(t))
	t.Setenv("REDIS_PREFIX", prefix)
	t.Setenv("AUDIT_KEY", "cli-export-key")
	t.Setenv("SLACK_BOT_TOKEN", "")
	ctx := context.Background()
	// Requests a day apart on the store's clock, so a range picks one.
	day0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := day0
	st, err := store.New(rdb, store.Options{Prefix: prefix, AuditKey: []byte("cli-export-key"), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		now = day0.Add(time.Duration(i) * 24 * time.Hour)
		id := fmt.Sprintf("exp-%d", i)
		if _, _, err := st.Create(ctx, store.NewRequest{ID: id, Agent: "pm", Document: []byte(`{}`), BodyHash: id, Channel: "C1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := approval.New(st, approval.Options{}).Withdraw(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runCLI(ctx, args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, export, stderr := run("audit", "export")
	if code != 0 || !strings.Contains(stderr, "entries") {
		t.Fatalf("audit export: exit %d, stderr %q", code, stderr)
	}
	path := filepath.Join(t.TempDir(), "export.ndjson")
	write := func(lines []string) {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.SplitAfter(strings.TrimSuffix(export, "\n"), "\n")

	// Offline: no Redis to reach.
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	write(lines)
	if code, out, stderr := run("audit", "verify", "--file", path); code != 0 || !strings.Contains(out, "12 entries (0 partial): intact") {
		t.Fatalf("intact export: exit %d\n%s%s", code, out, stderr)
	}
	var out bytes.Buffer
	if err := auditVerifyFile("-", strings.NewReader(export), &out); err != nil || !strings.Contains(out.String(), "intact") {
		t.Errorf("from stdin: %v\n%s", err, out.String())
	}

	// Remove exp-1's second (withdrawn) entry: its chain is a full one.
	i := slices.IndexFunc(lines, func(l string) bool {
		return strings.Contains(l, `"kind":"entry","chain":"request exp-1"`) && strings.Contains(l, `"withdrawn"`)
	})
	write(slices.Delete(slices.Clone(lines), i, i+1))
	code, got, _ := run("audit", "verify", "--file", path)
	if code != 1 || !strings.Contains(got, "BROKEN: audit chain of request exp-1 is broken at entry 2") {
		t.Errorf("export without exp-1's last entry: exit %d\n%s", code, got)
	}
	edited := slices.Clone(lines)
	edited[i] = strings.Replace(edited[i], `"withdrawn"`, `"posted"`, 1)
	write(edited)
	if code, got, _ := run("audit", "verify", "--file", path); code != 1 || !strings.Contains(got, "request exp-1 is broken at entry 2: hash does not match") {
		t.Errorf("edited export: exit %d\n%s", code, got)
	}

	// The second day only: exp-1 whole, its shard's chain (if exp-0 shares it) cut.
	t.Setenv("REDIS_URL", redistest.URL(t))
	code, export, stderr = run("audit", "export", "--since", day0.Add(23*time.Hour).Format(time.RFC3339), "--until", day0.Add(25*time.Hour).Format(time.RFC3339))
	if code != 0 || !strings.Contains(export, `"chain":"request exp-1"`) || strings.Contains(export, "exp-0") || strings.Contains(export, "exp-2") {
		t.Fatalf("ranged export: exit %d, stderr %q\n%s", code, stderr, export)
	}
	out.Reset()
	if err := auditVerifyFile("-", strings.NewReader(export), &out); err != nil || !strings.Contains(out.String(), "4 entries") {
		t.Errorf("ranged export: %v\n%s", err, out.String())
	}
}
