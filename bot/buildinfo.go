package bot

import (
	"runtime"
	"runtime/debug"
)

// Release builds stamp these with the linker; deploy/Dockerfile does:
//
//	go build -ldflags "-X github.com/approvalbot/approvalbot/bot.buildVersion=v1.2.3 \
//	  -X github.com/approvalbot/approvalbot/bot.buildCommit=<git sha>" ./cmd/approvalbot
//
// Left empty, ReadBuildInfo falls back to what the Go toolchain recorded in
// the binary (the module version, and the VCS revision when built inside a
// git checkout), so a plain "go build" or "go install …@v1.2.3" still tells.
var buildVersion, buildCommit string

// BuildInfo says which approvalbot is running: "approvalbot version", the
// approvalbot_build_info metric and the start-up log line show it.
type BuildInfo struct {
	Version   string // module version or the release tag; "devel" when unknown
	Commit    string // VCS revision, with "-dirty" for modified checkouts; "unknown" when unknown
	GoVersion string
}

// ReadBuildInfo is this binary's BuildInfo.
func ReadBuildInfo() BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return buildInfoFrom(bi, buildVersion, buildCommit)
}

// buildInfoFrom prefers the linker-stamped version and commit over what the
// toolchain recorded in bi (nil when the binary carries none).
func buildInfoFrom(bi *debug.BuildInfo, version, commit string) BuildInfo {
	info := BuildInfo{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Commit == "" {
			var revision, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					revision = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if revision != "" && modified == "true" {
				revision += "-dirty"
			}
			info.Commit = revision
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}
