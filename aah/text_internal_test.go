package aah

import (
	"testing"
	"unicode/utf8"
)

// CheckUnicode's fast path skips the walk only where the walk finds
// nothing: valid UTF-8 with \u escapes of anything but a surrogate.
func TestUnicodeFastPathAgreesWithTheWalk(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{"a":"plain"}`, `{"a":"caf\u00e9 \u00E9 \u2028 \u0000 \uffff \ucfff \ue000"}`, `{"a":"\\ud800 is text"}`,
		`{"a":"\ud83c\udf89"}`, `{"a":"\uD83C\uDF89"}`, `{"a":"\ud800"}`, `{"a":"\uDBFF x"}`, `{"\udc00":1}`, `{"a":"\uDc00"}`,
		`{"a":["\u00e9",{"b":"\ud7ff"}]}`, `{"a":"x\u"}`, `{"a":"\u00"}`, "{\"a\":\"\xff\"}",
	}
	for _, doc := range docs {
		raw := []byte(doc)
		fast := utf8.Valid(raw) && !surrogateEscape(raw)
		if err := walkUnicode(raw); fast && err != nil {
			t.Errorf("%s: the fast path accepts it, the walk refuses it: %v", doc, err)
		}
	}
	for _, want := range []struct {
		doc  string
		fast bool
	}{{`{"a":"\u00e9"}`, true}, {`{"a":"\ud83c\udf89"}`, false}, {`{"a":"\uDFFF"}`, false}, {`{"a":"\ud7ff"}`, true}, {`{"a":"\u"}`, true}} {
		if got := !surrogateEscape([]byte(want.doc)); got != want.fast {
			t.Errorf("%s: fast path %v, want %v", want.doc, got, want.fast)
		}
	}
}
