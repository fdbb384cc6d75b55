package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// recorder is a hash.Hash that keeps what it is given, so a test sees the
// canonical bytes themselves.
type recorder struct{ bytes.Buffer }

func (*recorder) Sum(b []byte) []byte { return b }
func (*recorder) Size() int           { return 0 }
func (*recorder) BlockSize() int      { return 1 }

// canonicalBytes is the canonical form canonicalHash hashes.
func canonicalBytes(tree any) []byte {
	rec := &recorder{}
	w := &canonicalWriter{h: rec}
	w.value(tree)
	w.flush()
	return rec.Bytes()
}

// sameAsMarshal fails t unless the canonical form of tree, and its hash,
// are json.Marshal's.
func sameAsMarshal(t *testing.T, tree any) {
	t.Helper()
	want, err := json.Marshal(tree)
	if err != nil {
		want = nil // the old hash hashed nothing then
	} else if got := canonicalBytes(tree); !bytes.Equal(got, want) {
		t.Fatalf("canonical form differs from json.Marshal:\n got %q\nwant %q", got, want)
	}
	sum := sha256.Sum256(want)
	if got := canonicalHash(tree); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("canonicalHash = %s, json.Marshal's hash is %x", got, sum)
	}
}

// trickyStrings are strings whose escaping json.Marshal decides in a way
// of its own: HTML characters, U+2028/2029, control characters with and
// without short escapes, DEL, invalid UTF-8 (refused at intake, but still
// written as json.Marshal writes it), multi-byte runes and a long run.
var trickyStrings = []string{
	"", "plain", `<script>alert("x&y")</script>`, "a\u2028b\u2029c", "\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f",
	"\x7f", `back\slash "quoted" /slash`, "\xff\xfe bad \xc3", "é日本語🎉", "\ud7ff\ue000\uffff", strings.Repeat("long <&> ", 2000),
	"tail\u2028", "\u2029", "\u2027\u202a", "key with spaces", "\\u00e9 literally",
}

func TestCanonicalIsMarshal(t *testing.T) {
	t.Parallel()
	for _, s := range trickyStrings {
		sameAsMarshal(t, s)
		sameAsMarshal(t, map[string]any{s: s, "k" + s: []any{s, map[string]any{}}})
	}
	docs := []string{
		`{}`, `[]`, `null`, `{"a":{},"b":[],"c":[{}],"d":[[]],"e":{"f":{"g":{}}}}`,
		`{"z":1,"a":2,"m":{"y":true,"b":false,"":null}}`,
		`{"big":123456789012345678901234567890,"neg":-0.0,"exp":1e400,"E":-2.5E-3,"small":5e-324,"zero":0}`,
		`{"esc":"\u003c\u003e\u0026 \u2028 \u0000 \ud83c\udf89 \/ \b\f\n\r\t \u007f \u00e9"}`,
		`{"b":1,"a":2,"B":3,"é":4,"\u00e9x":5,"aa":6,"a\u0000":7}`,
		`{"dup":1,"dup":2}`,
		`[1,"two",3.0,true,null,{"x":[]}]`,
	}
	for _, doc := range docs {
		tree, err := aah.Decode([]byte(doc))
		if err != nil {
			// aah.Decode refuses top-level non-objects only in parse;
			// decode those directly.
			dec := json.NewDecoder(strings.NewReader(doc))
			dec.UseNumber()
			if err := dec.Decode(&tree); err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
		}
		sameAsMarshal(t, tree)
	}
	// Values a decoded tree never holds still come out as json.Marshal's.
	for _, v := range []any{json.Number(""), json.Number("1"), json.Number("01"), json.Number("1."), json.Number("-"),
		json.Number("1e"), json.Number(" 1"), json.Number("Infinity"), json.Number("-0.5e+7"), 2.5, 7, []string{"<a>"},
		map[string]any{"n": json.Number("NaN")}, map[string]any(nil), []any(nil)} {
		sameAsMarshal(t, v)
	}
	for _, path := range []string{"testdata/seed000_request.json", "../examples/marketing-strategy.json", "../examples/scale-service.json"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tree, err := aah.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		sameAsMarshal(t, tree)
	}
}

// FuzzCanonical holds the canonical form to json.Marshal's for any decoded
// document, and for any string as a key and a value.
func FuzzCanonical(f *testing.F) {
	for _, s := range trickyStrings {
		raw, _ := json.Marshal(map[string]any{s: []any{s, 1}})
		f.Add(raw, s)
	}
	f.Add([]byte(`{"a":[1,2.5e10,-0,{"b":null}],"<":"\u2028"}`), "\x00")
	f.Fuzz(func(t *testing.T, doc []byte, s string) {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var tree any
		if dec.Decode(&tree) == nil {
			sameAsMarshal(t, tree)
		}
		sameAsMarshal(t, map[string]any{s: []any{s, tree}, "x" + s: json.Number("1")})
	})
}
