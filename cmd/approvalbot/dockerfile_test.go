package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// There is no Docker daemon in CI, so deploy/Dockerfile cannot be built
// there. This test checks what can be checked without one, and runs its
// build command as written, on a build context filtered by .dockerignore
// the way Docker filters it.

// dockerfile is deploy/Dockerfile as instructions: continuation lines
// joined, comments and blank lines dropped.
func dockerfile(t *testing.T) [][2]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	var cur strings.Builder
	for line := range strings.SplitSeq(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if s, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		instr, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, [2]string{strings.ToUpper(instr), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

var (
	pinnedImage = regexp.MustCompile(`^[a-z0-9.-]+(/[a-z0-9._-]+)*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)
	argRef      = regexp.MustCompile(`\$\{(\w+)\}`)
)

// Every base image is pinned by digest, stages referred to exist, the final
// image runs the binary as nonroot with a health check the binary itself
// understands (there is no shell), and the build stamps the version and
// commit into variables that exist.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	instrs := dockerfile(t)
	args := map[string]string{}
	var stages []string
	var final [][2]string // the last stage's instructions
	var build string      // the RUN with go build
	for _, in := range instrs {
		switch in[0] {
		case "ARG":
			if name, value, ok := strings.Cut(in[1], "="); ok && len(stages) == 0 {
				args[name] = strings.Trim(value, `"`)
			}
		case "FROM":
			fields := strings.Fields(in[1])
			image := argRef.ReplaceAllStringFunc(fields[0], func(ref string) string { return args[ref[2:len(ref)-1]] })
			if !pinnedImage.MatchString(image) {
				t.Errorf("FROM %s (%s) is not pinned by digest (name:tag@sha256:…)", fields[0], image)
			}
			name := ""
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				name = fields[2]
			}
			stages = append(stages, name)
			final = nil
		case "COPY":
			if from, ok := strings.CutPrefix(in[1], "--from="); ok {
				stage, _, _ := strings.Cut(from, " ")
				if !slices.Contains(stages[:len(stages)-1], stage) {
					t.Errorf("COPY --from=%s names no earlier stage (%v)", stage, stages)
				}
			}
		case "RUN":
			if strings.Contains(in[1], "go build") {
				build = in[1]
			}
		}
		final = append(final, in)
	}
	if len(stages) < 2 {
		t.Fatalf("want a build stage and a runtime stage, got %v", stages)
	}
	want := map[string]bool{"USER nonroot:nonroot": false, `ENTRYPOINT ["/approvalbot"]`: false}
	healthcheck := false
	for _, in := range final {
		if _, ok := want[in[0]+" "+in[1]]; ok {
			want[in[0]+" "+in[1]] = true
		}
		if in[0] == "HEALTHCHECK" {
			_, cmd, ok := strings.Cut(in[1], "CMD ")
			var argv []string
			if !ok || json.Unmarshal([]byte(cmd), &argv) != nil || len(argv) < 2 || argv[0] != "/approvalbot" {
				t.Errorf("HEALTHCHECK %s: want the exec form running /approvalbot (no shell in distroless)", in[1])
				continue
			}
			inv, err := parseArgs(argv[1:])
			if err != nil || inv.cmd != cmdHealthcheck {
				t.Errorf("HEALTHCHECK runs %v, which approvalbot does not parse as its healthcheck: %v", argv, err)
			}
			healthcheck = true
		}
	}
	for line, ok := range want {
		if !ok {
			t.Errorf("the final stage lacks %s", line)
		}
	}
	if !healthcheck {
		t.Error("the final stage has no HEALTHCHECK")
	}
	for _, need := range []string{"-tags nolocal", "CGO_ENABLED=0",
		"-X github.com/approvalbot/approvalbot/bot.buildVersion=${VERSION}", "-X github.com/approvalbot/approvalbot/bot.buildCommit=${COMMIT}"} {
		if !strings.Contains(build, need) {
			t.Errorf("the go build lacks %s: %s", need, build)
		}
	}
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "bot", "buildinfo.go"))
	if err != nil || !strings.Contains(string(src), "var buildVersion, buildCommit string") {
		t.Error("bot/buildinfo.go no longer declares buildVersion and buildCommit, which the Dockerfile stamps")
	}
}

// The Dockerfile's go build, run as written (with /out/ replaced) on a copy
// of the repository filtered by .dockerignore, builds a release binary that
// reports the VERSION and COMMIT it was given and has no local mode: the
// context holds everything the build needs and the stamping works.
func TestDockerBuildCommandOnTheFilteredContext(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	var build string
	for _, in := range dockerfile(t) {
		if in[0] == "RUN" && strings.Contains(in[1], "go build") {
			build = in[1]
		}
	}
	if build == "" {
		t.Fatal("deploy/Dockerfile has no RUN … go build")
	}
	ctxDir, out := t.TempDir(), t.TempDir()
	copied := copyContext(t, repoRoot(t), ctxDir)
	for _, excluded := range []string{".git", "docs", "README.md", "cmd/approvalbot/cli_test.go", "deploy/Dockerfile"} {
		if copied[excluded] {
			t.Errorf(".dockerignore lets %s into the build context", excluded)
		}
	}
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
	cmd.Dir = ctxDir
	cmd.Env = append(os.Environ(), "VERSION=v9.8.7-test", "COMMIT=0123456789abcdef")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build on the .dockerignore'd context: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "approvalbot")
	version, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(version), "approvalbot v9.8.7-test\ncommit 0123456789abcdef\n") {
		t.Errorf("approvalbot version printed %q, want the stamped VERSION and COMMIT", version)
	}
	run := exec.Command(bin)
	run.Env = []string{"PATH=/nonexistent"}
	if b, err := run.CombinedOutput(); err == nil || !strings.Contains(string(b), "has no local mode") {
		t.Errorf("the image's binary with no configuration: %v %s; want it to refuse local mode", err, b)
	}
}

// copyContext copies the files of root that .dockerignore does not exclude
// into dst, and returns their relative paths (and those of directories).
func copyContext(t *testing.T, root, dst string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []*regexp.Regexp
	for line := range strings.SplitSeq(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf(".dockerignore: exceptions (%s) are not supported by this test's matcher", line)
		}
		patterns = append(patterns, dockerignorePattern(line))
	}
	copied := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		for _, p := range patterns {
			if p.MatchString(rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		copied[rel] = true
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(o, in); err != nil {
			_ = o.Close()
			return err
		}
		return o.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return copied
}

// dockerignorePattern is a .dockerignore line as Docker reads it
// (moby/patternmatcher): anchored at the context root, * and ? within one
// path element, ** across any number of them. A match of a directory
// excludes everything in it (copyContext skips it).
func dockerignorePattern(p string) *regexp.Regexp {
	p = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/")
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case strings.HasPrefix(p[i:], "**/"):
			re.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			re.WriteString(".*")
			i++
		case c == '*':
			re.WriteString("[^/]*")
		case c == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String())
}
