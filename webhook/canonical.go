package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"slices"
	"sync"
	"unicode/utf8"
)

// canonicalHash identifies a decoded document regardless of whitespace and
// key order, so an agent retrying with a re-serialized but identical body is
// recognised. The canonical form is exactly what json.Marshal(tree) gives
// (keys sorted, json.Number verbatim, strings escaped as encoding/json
// escapes them, HTML characters included): stored requests carry hashes of
// that form and are compared with resubmissions after an upgrade. It is
// written here straight into the hasher, without reflection or a copy of
// the whole document; FuzzCanonical holds it to json.Marshal.
func canonicalHash(tree any) string {
	w := canonicalWriters.Get().(*canonicalWriter)
	defer w.release()
	w.h.Reset()
	w.buf, w.keys, w.failed = w.buf[:0], w.keys[:0], false
	w.value(tree)
	w.flush()
	var sum [sha256.Size]byte
	if w.failed {
		sum = sha256.Sum256(nil)
		return hex.EncodeToString(sum[:])
	}
	return hex.EncodeToString(w.h.Sum(sum[:0]))
}

// release returns w to the pool, unless a huge string grew its buffer:
// that memory is not kept for every later request.
func (w *canonicalWriter) release() {
	if cap(w.buf) > 4*canonicalChunk || cap(w.keys) > 1024 {
		return
	}
	canonicalWriters.Put(w)
}

// canonicalWriters are reused: a writer's buffer, key scratch space and
// hasher would otherwise be garbage after every request.
var canonicalWriters = sync.Pool{New: func() any {
	return &canonicalWriter{h: sha256.New(), buf: make([]byte, 0, canonicalChunk+512)}
}}

// canonicalChunk is how much canonical text is gathered before it is
// hashed: large enough to keep hasher calls few, small enough to stay
// cheap to keep pooled.
const canonicalChunk = 4 << 10

// canonicalWriter appends the canonical form of a decoded tree to buf and
// feeds buf to h whenever it passes canonicalChunk.
type canonicalWriter struct {
	h    hash.Hash
	buf  []byte
	keys []string // the keys of the objects being written, innermost last
	// failed: a value json.Marshal refuses, which fails json.Marshal(tree)
	failed bool
}

func (w *canonicalWriter) flush() {
	w.h.Write(w.buf)
	w.buf = w.buf[:0]
}

// value writes one value of a tree aah.Decode made (map[string]any, []any,
// string, json.Number, bool, nil), or of such a tree edited with plain
// strings. Anything else is written by json.Marshal, so the form stays
// json.Marshal's whatever the tree holds.
func (w *canonicalWriter) value(v any) {
	if len(w.buf) >= canonicalChunk {
		w.flush()
	}
	switch v := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case bool:
		if v {
			w.buf = append(w.buf, "true"...)
		} else {
			w.buf = append(w.buf, "false"...)
		}
	case string:
		w.buf = appendJSONString(w.buf, v)
	case json.Number:
		if !validNumber(string(v)) {
			w.marshal(v) // json.Marshal writes "" as 0 and refuses a non-number
			return
		}
		w.buf = append(w.buf, v...)
	case map[string]any:
		w.object(v)
	case []any:
		if v == nil {
			w.buf = append(w.buf, "null"...)
			return
		}
		w.buf = append(w.buf, '[')
		for i, e := range v {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.value(e)
		}
		w.buf = append(w.buf, ']')
	default:
		w.marshal(v)
	}
}

// object writes m with its keys sorted as json.Marshal sorts them (by
// their Go strings, before escaping). The keys go on the shared scratch
// stack: nested objects push theirs after them, so the slice may move
// while this loop runs and is indexed afresh each time.
func (w *canonicalWriter) object(m map[string]any) {
	if m == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	start := len(w.keys)
	for k := range m {
		w.keys = append(w.keys, k)
	}
	end := len(w.keys)
	slices.Sort(w.keys[start:end])
	w.buf = append(w.buf, '{')
	for i := start; i < end; i++ {
		if i > start {
			w.buf = append(w.buf, ',')
		}
		k := w.keys[i]
		w.buf = appendJSONString(w.buf, k)
		w.buf = append(w.buf, ':')
		w.value(m[k])
	}
	w.buf = append(w.buf, '}')
	clear(w.keys[start:end]) // drop the references before the pool keeps them
	w.keys = w.keys[:start]
}

// marshal writes what json.Marshal gives for v; a value it refuses makes
// the whole json.Marshal(tree) fail, which the old hash wrote as "" (the
// hash of nothing): kept for any such tree, though a decoded one never is.
func (w *canonicalWriter) marshal(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		w.failed = true
		return
	}
	w.buf = append(w.buf, b...)
}

// appendJSONString appends s quoted as encoding/json writes a string with
// HTML escaping on (json.Marshal's default): \" \\ \b \f \n \r \t by
// name, other control characters and < > & as \u00xx, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 as \u2028 and \u2029, everything else as is.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// validNumber reports whether s is a JSON number
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), as json.Marshal checks
// a json.Number before writing it verbatim.
func validNumber(s string) bool {
	i := 0
	digits := func() bool {
		from := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > from
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}
