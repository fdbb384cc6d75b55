package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var fence = regexp.MustCompile("(?s)```(go|json)\n(.*?)```")

// The README's "MCP" section: its client configurations are valid JSON of
// the usual mcpServers shape (stdio runs approvalbot mcp; HTTP reaches /mcp
// with a bearer token), its Go snippet's lines are example_test.go's, which
// compiles them, and each snippet is under ten lines.
func TestReadmeMCPSnippets(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## MCP\n")
	if !ok {
		t.Fatal(`README has no "MCP" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := fence.FindAllStringSubmatch(sec, -1)
	if len(blocks) != 3 {
		t.Fatalf("the section has %d snippets, want stdio and HTTP configurations and Go", len(blocks))
	}
	var configs []map[string]any
	for i, bl := range blocks {
		lines := strings.Split(strings.TrimSpace(bl[2]), "\n")
		if len(lines) >= 10 {
			t.Errorf("snippet %d has %d lines; the promise is under ten", i+1, len(lines))
		}
		if bl[1] == "go" {
			for _, l := range lines {
				if !strings.Contains(string(example), strings.TrimSpace(l)) {
					t.Errorf("README line %q is not in mcpserver/example_test.go (which compiles it)", l)
				}
			}
			continue
		}
		var cfg struct {
			Servers map[string]map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(bl[2]), &cfg); err != nil {
			t.Fatalf("snippet %d is not JSON: %v", i+1, err)
		}
		configs = append(configs, cfg.Servers["approvalbot"])
	}
	if len(configs) != 2 {
		t.Fatalf("%d configurations", len(configs))
	}
	stdio, web := configs[0], configs[1]
	if stdio["command"] != "approvalbot" || len(stdio["args"].([]any)) != 1 || stdio["args"].([]any)[0] != "mcp" {
		t.Errorf("stdio configuration %v does not run approvalbot mcp", stdio)
	}
	if env, _ := stdio["env"].(map[string]any); env["APPROVALBOT_URL"] == nil {
		t.Errorf("stdio configuration %v sets no APPROVALBOT_URL", stdio)
	}
	url, _ := web["url"].(string)
	h, _ := web["headers"].(map[string]any)
	if auth, _ := h["Authorization"].(string); !strings.HasSuffix(url, "/mcp") || !strings.HasPrefix(auth, "Bearer ") {
		t.Errorf("HTTP configuration %v: want the /mcp URL and a bearer token", web)
	}
}
