package bot

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// The Go collector's defaults for approvalbot (issue #17). Intake allocates
// ~45 KB per accepted request (its body decoded, validated, hashed, stored)
// while the live heap stays small (4–8 MB under the bench's load), so at
// Go's default GOGC=100 the collector ran every ~20 ms and took about a
// sixth of the process's CPU per request. Unless GOGC is set, approvalbot
// lets the heap grow to five times what is live (GOGC=400) before it
// collects: a few tens of MB for that CPU.
//
// A larger target must not run a container out of memory, so unless
// GOMEMLIMIT is set, a soft limit of 90% of the container's memory limit
// (its cgroup's, v2 or v1) makes the collector run as often as it must
// near it. Without a cgroup limit there is none, as with Go's defaults.
const (
	defaultGCPercent = 400
	memLimitShare    = 0.9
)

// GCDefaults are the collector settings ApplyGCDefaults chose: zero where
// it left Go's own (an environment variable set, or no cgroup limit).
type GCDefaults struct {
	GCPercent   int   // 0: GOGC set, left alone
	MemoryLimit int64 // bytes; 0: GOMEMLIMIT set, or no container limit found
}

// cgroupLimitFiles are where a process finds its container's memory limit:
// cgroup v2's (the container's own cgroup is the root of its namespace),
// then v1's.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// gcDefaults decides the settings from the environment and the cgroup
// files (readFile reads one; an error means it is not there).
func gcDefaults(getenv func(string) string, readFile func(string) ([]byte, error)) GCDefaults {
	var d GCDefaults
	if getenv("GOGC") == "" {
		d.GCPercent = defaultGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		d.MemoryLimit = int64(float64(cgroupMemoryLimit(readFile)) * memLimitShare)
	}
	return d
}

// cgroupMemoryLimit is the first limit found in cgroupLimitFiles, in
// bytes; 0 when none is set. "max" (v2) and v1's page-rounded maximum
// (about 2^63) both mean no limit.
func cgroupMemoryLimit(readFile func(string) ([]byte, error)) int64 {
	for _, path := range cgroupLimitFiles {
		raw, err := readFile(path)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || v <= 0 || v >= 1<<62 {
			return 0 // "max", or no real limit
		}
		return v
	}
	return 0
}

// ApplyGCDefaults sets the collector's defaults (above) for this process
// and logs what it set. The command's main calls it before anything
// allocates much, and the bench program calls it too, so the bot it
// measures runs as the command does.
func ApplyGCDefaults(ctx context.Context, log *slog.Logger) GCDefaults {
	d := gcDefaults(os.Getenv, os.ReadFile)
	if d.GCPercent > 0 {
		debug.SetGCPercent(d.GCPercent)
	}
	if d.MemoryLimit > 0 {
		debug.SetMemoryLimit(d.MemoryLimit)
	}
	if log != nil && (d.GCPercent > 0 || d.MemoryLimit > 0) {
		log.InfoContext(ctx, "garbage collector defaults set (GOGC and GOMEMLIMIT override them)",
			"gogc", d.GCPercent, "memory_limit_bytes", d.MemoryLimit)
	}
	return d
}
