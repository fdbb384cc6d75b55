package check

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/schema"
	"sigs.k8s.io/yaml"
)

// composeFile is deploy/compose.yaml, parsed.
type composeFile struct {
	Services map[string]struct {
		Image       string         `json:"image"`
		Command     []string       `json:"command"`
		Volumes     []string       `json:"volumes"`
		EnvFile     []string       `json:"env_file"`
		Environment map[string]any `json:"environment"`
		DependsOn   map[string]struct {
			Condition string `json:"condition"`
		} `json:"depends_on"`
		Healthcheck *struct {
			Test []string `json:"test"`
		} `json:"healthcheck"`
		Build *struct {
			Context    string `json:"context"`
			Dockerfile string `json:"dockerfile"`
		} `json:"build"`
		StopGracePeriod string   `json:"stop_grace_period"`
		ReadOnly        bool     `json:"read_only"`
		CapDrop         []string `json:"cap_drop"`
	} `json:"services"`
	Volumes map[string]any `json:"volumes"`
}

// deploy/compose.yaml is valid under the Compose Specification's schema
// (compose-go's copy, as docker compose validates it), and is the
// production-shaped deployment docs/deploy.md describes: Redis persisting
// every write to an append-only file on a volume, health-checked; the bot
// built from deploy/Dockerfile, configured from the env file, on that Redis
// and never on the embedded store, started once Redis is healthy,
// health-checked through its own binary, and given the time to drain.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("deploy/compose.yaml is not valid Compose: %v", err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	redis, bot := c.Services["redis"], c.Services["approvalbot"]

	cmd := strings.Join(redis.Command, " ")
	if !strings.Contains(cmd, "--appendonly yes") ||
		!(strings.Contains(cmd, "--appendfsync always") || strings.Contains(cmd, "--appendfsync everysec")) ||
		!strings.Contains(cmd, "--maxmemory-policy noeviction") {
		t.Errorf("redis runs %q: want AOF (--appendonly yes, --appendfsync always|everysec) and noeviction", cmd)
	}
	mounted := false
	for _, v := range redis.Volumes {
		if name, dir, ok := strings.Cut(v, ":"); ok && dir == "/data" {
			_, declared := c.Volumes[name]
			mounted = declared
		}
	}
	if !mounted || !strings.Contains(cmd, "--dir /data") {
		t.Errorf("redis's data (%v, %q) is not on a named volume at /data", redis.Volumes, cmd)
	}
	if redis.Healthcheck == nil || len(redis.Healthcheck.Test) == 0 {
		t.Error("redis has no health check")
	}

	if bot.Build == nil || bot.Build.Dockerfile != "deploy/Dockerfile" {
		t.Errorf("approvalbot is built from %+v, want deploy/Dockerfile", bot.Build)
	} else if _, err := os.Stat(filepath.Join("..", bot.Build.Context, bot.Build.Dockerfile)); err != nil {
		t.Errorf("the build context and Dockerfile do not resolve: %v", err)
	}
	if len(bot.EnvFile) != 1 {
		t.Fatalf("env_file %v, want the operator's copy of the example", bot.EnvFile)
	}
	example := filepath.Join("..", strings.TrimSuffix(bot.EnvFile[0], ".env")+".env.example")
	if _, err := os.Stat(example); err != nil {
		t.Errorf("env_file %s has no example next to it (%v)", bot.EnvFile[0], err)
	}
	if bot.Environment["REQUIRE_REDIS"] != "true" {
		t.Errorf("REQUIRE_REDIS=%v: the bot must refuse the embedded store here", bot.Environment["REQUIRE_REDIS"])
	}
	if u, _ := bot.Environment["REDIS_URL"].(string); !strings.HasPrefix(u, "redis://redis:6379/") {
		t.Errorf("REDIS_URL=%q, want the compose file's redis service", u)
	}
	if bot.DependsOn["redis"].Condition != "service_healthy" {
		t.Errorf("approvalbot depends on redis %+v, want service_healthy", bot.DependsOn["redis"])
	}
	if bot.Healthcheck == nil || len(bot.Healthcheck.Test) < 3 ||
		!slices.Equal(bot.Healthcheck.Test[:3], []string{"CMD", "/approvalbot", "healthcheck"}) {
		t.Errorf("approvalbot's health check %+v: want [CMD /approvalbot healthcheck …] (distroless has no shell)", bot.Healthcheck)
	}
	if !bot.ReadOnly || !slices.Contains(bot.CapDrop, "ALL") {
		t.Errorf("approvalbot read_only=%v cap_drop=%v, want a read-only root and no capabilities", bot.ReadOnly, bot.CapDrop)
	}

	// Docker waits stop_grace_period after SIGTERM before SIGKILL: it must
	// cover the drain delay and the shutdown timeout the bot will use.
	drain, timeout := 5*time.Second, 20*time.Second // the bot's defaults
	for k, v := range envFile(t, example) {
		switch k {
		case "SHUTDOWN_DRAIN_DELAY":
			drain = duration(t, v)
		case "SHUTDOWN_TIMEOUT":
			timeout = duration(t, v)
		}
	}
	if grace := duration(t, bot.StopGracePeriod); grace <= drain+timeout {
		t.Errorf("stop_grace_period %s does not exceed SHUTDOWN_DRAIN_DELAY + SHUTDOWN_TIMEOUT = %s", grace, drain+timeout)
	}
}

// envFile reads KEY=value lines.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = v
		}
	}
	return vars
}
