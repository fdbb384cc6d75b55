package schema

import (
	"encoding/json"
	"testing"
)

// Every pattern of the schemas has a message in words.
func TestEveryPatternHasAMessage(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string][]byte{"request": RequestSchemaJSON, "response": ResponseSchemaJSON} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var v any
			if err := json.Unmarshal(doc, &v); err != nil {
				t.Fatal(err)
			}
			var walk func(any)
			walk = func(v any) {
				switch x := v.(type) {
				case map[string]any:
					if p, ok := x["pattern"].(string); ok {
						if _, ok := patternMessages[p]; !ok {
							t.Errorf("pattern %q has no message", p)
						}
					}
					for _, e := range x {
						walk(e)
					}
				case []any:
					for _, e := range x {
						walk(e)
					}
				}
			}
			walk(v)
		})
	}
}

// The embedded schemas compile (against the draft 2020-12 metaschema).
func TestSchemasCompile(t *testing.T) {
	t.Parallel()
	for _, c := range []*compiled{requestSchema, responseSchema} {
		if _, err := c.get(); err != nil {
			t.Errorf("%s: %v", c.id, err)
		}
	}
}

func TestPointerEscaping(t *testing.T) {
	t.Parallel()
	if got := pointer([]string{"a/b", "c~d", "0"}); got != "/a~1b/c~0d/0" {
		t.Errorf("pointer = %q", got)
	}
}
