package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/approvalbot/approvalbot"

// localOnly are the packages of local mode's tooling, and miniredis: no
// production package may depend on them, and the release build (-tags
// nolocal) must not carry them.
var localOnly = []string{
	module + "/internal/localmode",
	module + "/internal/slackemu",
	module + "/internal/sandbox",
	module + "/internal/memredis",
	"github.com/alicebob/miniredis",
}

// productionPackages are the packages the service is made of. The domain
// core (approval/) is listed when it exists on this branch.
func productionPackages(t *testing.T) []string {
	t.Helper()
	pkgs := []string{"bot", "slackout", "handlers", "webhook", "store", "blocks", "aah", "jobs"}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "approval")); err == nil {
		pkgs = append(pkgs, "approval")
	}
	for i, p := range pkgs {
		pkgs[i] = "./" + p
	}
	return pkgs
}

// The release build (go build -tags nolocal ./cmd/approvalbot, as
// deploy/Dockerfile does) and every production package leave local mode's
// tooling out: go list -deps names none of internal/slackemu,
// internal/sandbox, internal/memredis, internal/localmode or miniredis. The
// default build does carry local mode, so the check is not vacuous.
func TestProductionBuildCarriesNoLocalTooling(t *testing.T) {
	t.Parallel()
	if bad := localDeps(goListDeps(t, "-tags", "nolocal", "./cmd/approvalbot")); len(bad) > 0 {
		t.Errorf("cmd/approvalbot built with -tags nolocal depends on local tooling: %v", bad)
	}
	for _, pkg := range productionPackages(t) {
		if bad := localDeps(goListDeps(t, pkg)); len(bad) > 0 {
			t.Errorf("production package %s depends on local tooling: %v", pkg, bad)
		}
	}
	if len(localDeps(goListDeps(t, "./cmd/approvalbot"))) == 0 {
		t.Error("the default build of cmd/approvalbot carries no local mode: go run ./cmd/approvalbot would not start " +
			"with zero configuration (is local.go's build tag wrong?)")
	}
}

// goListDeps is `go list -deps args...` run at the repository root: every
// package the named ones import, directly or not (tests excluded).
func goListDeps(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go list needs the go command on PATH: %v", err)
	}
	cmd := exec.Command(gobin, append([]string{"list", "-deps"}, args...)...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %v: %v\n%s", args, err, stderr)
	}
	return strings.Fields(string(out))
}

// localDeps are the packages of deps that are local tooling.
func localDeps(deps []string) []string {
	var bad []string
	for _, d := range deps {
		for _, l := range localOnly {
			if d == l || strings.HasPrefix(d, l+"/") {
				bad = append(bad, d)
			}
		}
	}
	return bad
}

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}
