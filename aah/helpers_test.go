package aah_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// seedNow is the moment of the seed's example: its deadline is the next day.
var seedNow = time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)

// dataPath is the path of content.body.data in field errors.
const dataPath = "content.body.data"

// decPath is the field path of decisions[i].
func decPath(i int) string { return fmt.Sprintf("%s.decisions[%d]", dataPath, i) }

func seedBytes(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/seed000_request.json")
	if err != nil {
		t.Fatalf("read seed example: %v", err)
	}
	return raw
}

// js decodes a JSON literal (numbers kept as json.Number) for use as a value
// in an edit. It panics on invalid JSON: the literals are the test's own.
func js(s string) any {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(fmt.Sprintf("bad JSON literal %q: %v", s, err))
	}
	return v
}

func decodeDoc(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decode document: %v", err)
	}
	return doc
}

func encodeDoc(t testing.TB, doc any) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("encode document: %v", err)
	}
	return b
}

// edit changes one thing in a decoded document.
type edit func(t testing.TB, doc map[string]any)

// pathStep is one step of a path such as "content.body.data.decisions[2].options":
// a key, or an index when isIndex.
type pathStep struct {
	key     string
	index   int
	isIndex bool
}

func splitPath(t testing.TB, path string) []pathStep {
	t.Helper()
	var steps []pathStep
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			steps = append(steps, pathStep{key: key})
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil {
				t.Fatalf("bad path %q", path)
			}
			steps = append(steps, pathStep{index: i, isIndex: true})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	if len(steps) == 0 {
		t.Fatalf("empty path")
	}
	return steps
}

// walk returns the container holding the last step of path, creating
// missing intermediate objects.
func walk(t testing.TB, doc map[string]any, path string) (any, pathStep) {
	t.Helper()
	steps := splitPath(t, path)
	var cur any = doc
	for _, s := range steps[:len(steps)-1] {
		switch c := cur.(type) {
		case map[string]any:
			if s.isIndex {
				t.Fatalf("path %q: index into an object", path)
			}
			next, ok := c[s.key]
			if !ok || next == nil {
				next = map[string]any{}
				c[s.key] = next
			}
			cur = next
		case []any:
			if !s.isIndex || s.index >= len(c) {
				t.Fatalf("path %q: bad index step %+v", path, s)
			}
			cur = c[s.index]
		default:
			t.Fatalf("path %q: cannot step into %T", path, cur)
		}
	}
	return cur, steps[len(steps)-1]
}

// set sets the value at path (intermediate objects are created).
func set(path string, v any) edit {
	return func(t testing.TB, doc map[string]any) {
		t.Helper()
		parent, last := walk(t, doc, path)
		switch c := parent.(type) {
		case map[string]any:
			c[last.key] = v
		case []any:
			if !last.isIndex || last.index >= len(c) {
				t.Fatalf("set %q: bad index", path)
			}
			c[last.index] = v
		default:
			t.Fatalf("set %q: parent is %T", path, parent)
		}
	}
}

// del removes the key at path.
func del(path string) edit {
	return func(t testing.TB, doc map[string]any) {
		t.Helper()
		parent, last := walk(t, doc, path)
		m, ok := parent.(map[string]any)
		if !ok || last.isIndex {
			t.Fatalf("del %q: only object keys can be deleted", path)
		}
		if _, ok := m[last.key]; !ok {
			t.Fatalf("del %q: no such key", path)
		}
		delete(m, last.key)
	}
}

// mutated is the seed example with the edits applied, re-encoded.
func mutated(t testing.TB, edits ...edit) []byte {
	t.Helper()
	doc := decodeDoc(t, seedBytes(t))
	for _, e := range edits {
		e(t, doc)
	}
	return encodeDoc(t, doc)
}

// problem is an expected FieldError: the exact field and a substring of the message.
type problem struct {
	field, msg string
}

// problemsOf parses raw expecting a *aah.ValidationError and returns its problems.
func problemsOf(t testing.TB, raw []byte, opts aah.ParseOptions) []aah.FieldError {
	t.Helper()
	req, err := aah.Parse(raw, opts)
	if err == nil {
		t.Fatalf("Parse succeeded, want a validation error")
	}
	if req != nil {
		t.Errorf("Parse returned a request together with error %v", err)
	}
	var verr *aah.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error is %T (%v), want *aah.ValidationError", err, err)
	}
	if len(verr.Problems) == 0 {
		t.Fatalf("ValidationError without problems")
	}
	return verr.Problems
}

// matchProblems checks that got holds exactly the wanted problems, in any order.
func matchProblems(t testing.TB, got []aah.FieldError, want []problem) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, g := range got {
			if !used[i] && g.Field == w.field && strings.Contains(g.Message, w.msg) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing problem {field %q, message containing %q}", w.field, w.msg)
		}
	}
	if len(got) != len(want) || t.Failed() {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), formatProblems(got))
	}
}

func formatProblems(ps []aah.FieldError) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %q: %s\n", p.Field, p.Message)
	}
	return b.String()
}

func sortedFields(ps []aah.FieldError) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Field
	}
	sort.Strings(out)
	return out
}

func mustParse(t testing.TB, raw []byte, opts aah.ParseOptions) *aah.Request {
	t.Helper()
	req, err := aah.Parse(raw, opts)
	if err != nil {
		var verr *aah.ValidationError
		if errors.As(err, &verr) {
			t.Fatalf("Parse failed:\n%s", formatProblems(verr.Problems))
		}
		t.Fatalf("Parse failed: %v", err)
	}
	if req == nil {
		t.Fatalf("Parse returned neither a request nor an error")
	}
	return req
}
