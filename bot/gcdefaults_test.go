package bot

import (
	"errors"
	"io/fs"
	"testing"
)

func TestGCDefaults(t *testing.T) {
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	for _, tc := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		want  GCDefaults
	}{
		{name: "nothing set, no cgroup", want: GCDefaults{GCPercent: 400}},
		{name: "cgroup v2 limit", files: map[string]string{v2: "268435456\n"},
			want: GCDefaults{GCPercent: 400, MemoryLimit: 241591910}},
		{name: "cgroup v2 unlimited", files: map[string]string{v2: "max\n", v1: "268435456\n"},
			want: GCDefaults{GCPercent: 400}},
		{name: "cgroup v1 limit", files: map[string]string{v1: "536870912\n"},
			want: GCDefaults{GCPercent: 400, MemoryLimit: 483183820}},
		{name: "cgroup v1 unlimited", files: map[string]string{v1: "9223372036854771712\n"},
			want: GCDefaults{GCPercent: 400}},
		{name: "garbage in the file", files: map[string]string{v2: "lots"}, want: GCDefaults{GCPercent: 400}},
		{name: "GOGC set", env: map[string]string{"GOGC": "100"}, files: map[string]string{v2: "268435456"},
			want: GCDefaults{MemoryLimit: 241591910}},
		{name: "GOGC off", env: map[string]string{"GOGC": "off"}, want: GCDefaults{}},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "100MiB"}, files: map[string]string{v2: "268435456"},
			want: GCDefaults{GCPercent: 400}},
		{name: "both set", env: map[string]string{"GOGC": "200", "GOMEMLIMIT": "1GiB"},
			files: map[string]string{v2: "268435456"}, want: GCDefaults{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			readFile := func(path string) ([]byte, error) {
				if v, ok := tc.files[path]; ok {
					return []byte(v), nil
				}
				return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("no such file")}
			}
			if got := gcDefaults(getenv, readFile); got != tc.want {
				t.Errorf("gcDefaults = %+v, want %+v", got, tc.want)
			}
		})
	}
}
