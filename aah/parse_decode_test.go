package aah

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// sameDecode fails t unless Decode and DecodeCompact give what encoding/json
// gives for raw: the same tree, or the same error; and DecodeCompact's
// document is json.Compact's.
func sameDecode(t *testing.T, raw []byte) {
	t.Helper()
	want, wantErr := decodeStd(raw)
	got, err := Decode(raw)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(err, wantErr) {
		t.Fatalf("Decode(%q) = %#v, %v; encoding/json: %#v, %v", raw, got, err, want, wantErr)
	}
	got, compacted, err := DecodeCompact(raw, 8)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(err, wantErr) {
		t.Fatalf("DecodeCompact(%q) = %#v, %v; encoding/json: %#v, %v", raw, got, err, want, wantErr)
	}
	if err == nil && compacted == nil {
		t.Fatalf("DecodeCompact(%q) left a valid document to encoding/json", raw)
	}
	var wantCompact bytes.Buffer
	if err == nil && json.Compact(&wantCompact, raw) == nil && compacted != nil && !bytes.Equal(compacted, wantCompact.Bytes()) {
		t.Fatalf("DecodeCompact(%q) compacted to %q; json.Compact: %q", raw, compacted, wantCompact.Bytes())
	}
}

// decodeCases are documents where a decoder has choices to get wrong:
// escapes, invalid bytes and lone surrogates in keys and values, duplicate
// keys, numbers at the grammar's edges, whitespace, trailing data, and
// syntax errors whose messages must stay encoding/json's.
var decodeCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e+10`, `-12.0E-3`, `123456789012345678901234567890`, `"s"`,
	` { "a" : [ 1 , 2 , { } , [ ] ] , "b" : null } `, "\t{\r\n\"a\"\n:\t1}\n",
	`{"a":1,"a":{"b":2}}`, `{"a":{"x":1},"a":{"y":2}}`,
	`{"esc":"\"\\\/\b\f\n\r\t\u0041\u00e9\u2028\ud83c\udf89"}`, `{"lone":"\ud800","low":"\udc00x","pair_bad":"\ud800\u0041"}`,
	"{\"bad\":\"\xff\xfe\",\"\xc3\":1}", `{"k\u0000":"v"}`, `{"é日本":"🎉"}`,
	`{"a":1} `, `{"a":1} x`, `{"a":1}{}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `[1,]`, `[01]`, `[1.]`, `[.5]`, `[-]`, `[1e]`, `[+1]`,
	`{"a":tru}`, `{"a":nul}`, `"unterminated`, "{\"ctl\":\"a\x01b\"}", `{"bad":"\x"}`, `{"u":"\u12"}`, "\xef\xbb\xbf{}", ``, ` `,
	`{"a":[}`, `{"a":"b"`, `[` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10002),
}

func TestDecodeIsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range decodeCases {
		sameDecode(t, []byte(c))
	}
	seed, err := os.ReadFile("testdata/seed000_request.json")
	if err != nil {
		t.Fatal(err)
	}
	sameDecode(t, seed)
}

// FuzzDecode holds the single pass to encoding/json on any bytes.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases[:len(decodeCases)-1] {
		f.Add([]byte(c))
	}
	if seed, err := os.ReadFile("testdata/seed000_request.json"); err == nil {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameDecode(t, raw) })
}
