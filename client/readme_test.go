package client_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection is the README's "Agents in Go and Python" section.
func readmeSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Agents in Go and Python\n")
	if !ok {
		t.Fatal(`README has no "Agents in Go and Python" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return sec
}

var fence = regexp.MustCompile("(?s)```(go|python)\n(.*?)```")

// Every line of the section's Go snippets is in example_test.go, which
// compiles them, and the gate snippet's request is examples/gate's; the
// Python snippet imports what the example defines. Each is under ten lines.
func TestReadmeSnippetsCompile(t *testing.T) {
	t.Parallel()
	examples, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	gate, err := os.ReadFile(filepath.Join("..", "examples", "gate", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	py, err := os.ReadFile(filepath.Join("..", "examples", "python", "approvalbot_example.py"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fence.FindAllStringSubmatch(readmeSection(t), -1)
	if len(blocks) != 3 {
		t.Fatalf("the section has %d snippets, want 2 in Go and 1 in Python", len(blocks))
	}
	for i, b := range blocks {
		lines := strings.Split(strings.TrimSpace(b[2]), "\n")
		if len(lines) >= 10 {
			t.Errorf("snippet %d has %d lines; the promise is under ten", i+1, len(lines))
		}
		for _, l := range lines {
			l = strings.TrimSpace(l)
			switch {
			case b[1] == "go" && !strings.Contains(string(examples), l):
				t.Errorf("README line %q is not in client/example_test.go (which compiles it)", l)
			case b[1] == "go" && i == 0 && (strings.Contains(l, "Parameters:") || strings.Contains(l, "Editable:")) && !strings.Contains(string(gate), l):
				t.Errorf("README line %q is not examples/gate's", l)
			case b[1] == "python" && strings.HasPrefix(l, "from approvalbot_example import "):
				for _, name := range strings.Split(strings.TrimPrefix(l, "from approvalbot_example import "), ", ") {
					if !strings.Contains(string(py), "def "+name+"(") {
						t.Errorf("the Python snippet imports %s, which the example does not define", name)
					}
				}
			}
		}
	}
}
