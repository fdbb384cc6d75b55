package bot

import (
	"maps"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestBuildInfoPrefersLinkerStampsOverTheToolchains(t *testing.T) {
	t.Parallel()
	recorded := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name            string
		bi              *debug.BuildInfo
		version, commit string
		want            BuildInfo
	}{
		{"stamped", recorded, "v1.2.3", "cafef00d", BuildInfo{"v1.2.3", "cafef00d", "go1.26.0"}},
		{"toolchain", recorded, "", "", BuildInfo{"v0.3.0", "0123456789abcdef-dirty", "go1.26.0"}},
		{"devel", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}}, "", "",
			BuildInfo{"devel", "unknown", "go1.26.1"}},
	} {
		if got := buildInfoFrom(tc.bi, tc.version, tc.commit); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := buildInfoFrom(nil, "", ""); got.Version != "devel" || got.Commit != "unknown" || got.GoVersion == "" {
		t.Errorf("no build info: %+v", got)
	}
}

// The -X flags of the Dockerfile name the variables ReadBuildInfo reads:
// this test sets them by name, so renaming one breaks it, and it checks that
// the Dockerfile passes both (a misspelled -X is silently ignored by the
// linker). Not parallel: it sets package variables.
func TestDockerfileStampsTheBuildInfoVariables(t *testing.T) {
	buildVersion, buildCommit = "v9.9.9", "feedface"
	t.Cleanup(func() { buildVersion, buildCommit = "", "" })
	if info := ReadBuildInfo(); info.Version != "v9.9.9" || info.Commit != "feedface" {
		t.Fatalf("stamped build info = %+v", info)
	}
	dockerfile, err := os.ReadFile("../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-X github.com/approvalbot/approvalbot/bot.buildVersion=${VERSION}",
		"-X github.com/approvalbot/approvalbot/bot.buildCommit=${COMMIT}"} {
		if !strings.Contains(string(dockerfile), flag) {
			t.Errorf("deploy/Dockerfile does not pass %s", flag)
		}
	}
}

func TestBuildInfoMetric(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	info := ReadBuildInfo()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "approvalbot_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Fatalf("approvalbot_build_info = %v", f)
		}
		labels := map[string]string{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if want := map[string]string{"version": info.Version, "commit": info.Commit, "go_version": info.GoVersion}; !maps.Equal(labels, want) {
			t.Errorf("approvalbot_build_info labels %v, want %v", labels, want)
		}
		return
	}
	t.Fatal("no approvalbot_build_info metric")
}
