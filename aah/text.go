package aah

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckUnicode refuses a JSON document whose strings are not well-formed
// Unicode: bytes that are not UTF-8, or a \u escape of half a surrogate
// pair. encoding/json decodes both silently as U+FFFD, so without this
// check the request would be accepted, stored as sent and echoed back by
// GET, while every reader sees other text than the agent sent. It names the
// field of each such string (or of the object holding such a key), in the
// paths the other intake errors use; raw must be valid JSON (Decode).
func CheckUnicode(raw []byte) error {
	if utf8.Valid(raw) && !surrogateEscape(raw) {
		return nil // the common case: nothing to walk
	}
	return walkUnicode(raw)
}

// walkUnicode is CheckUnicode's walk over every key and string.
func walkUnicode(raw []byte) error {
	var probs []FieldError
	dec := json.NewDecoder(bytes.NewReader(raw))
	var stack []*textScope // the containers the walk is in, innermost last
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			break // io.EOF; a syntax error was reported by Decode
		}
		// Between two tokens lie only JSON's ASCII punctuation and the
		// token itself, so a bad byte or escape in it is in this token.
		seg := raw[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		var top *textScope
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].done()
			}
			continue
		}
		if top != nil && top.object && top.key == nil {
			key, _ := tok.(string)
			top.key = &key
			if !wellFormed(seg) {
				probs = append(probs, FieldError{Field: top.path,
					Message: fmt.Sprintf("has a key that is not valid UTF-8 (%s)", strconv.Quote(key))})
			}
			continue
		}
		path := top.valuePath()
		switch tok := tok.(type) {
		case json.Delim: // '{' or '['
			stack = append(stack, &textScope{path: path, object: tok == '{', index: -1})
			continue
		case string:
			if !wellFormed(seg) {
				probs = append(probs, FieldError{Field: path,
					Message: "is not valid UTF-8 text: invalid bytes or a lone surrogate escape (JSON would replace them with U+FFFD)"})
			}
		}
		top.done()
	}
	if len(probs) > 0 {
		return &ValidationError{Problems: probs}
	}
	return nil
}

// surrogateEscape reports whether raw may hold a \u escape of a surrogate
// (\uD800-\uDFFF, either case), the only escape that can make a string of
// valid UTF-8 ill-formed. Bodies written with ASCII-only escaping (Python's
// json.dumps by default) escape every accented letter, so only these are
// worth a walk. A match after an escaped backslash ("\\ud800" is text)
// only costs the walk, which then finds nothing.
func surrogateEscape(raw []byte) bool {
	for {
		i := bytes.Index(raw, []byte(`\u`))
		if i < 0 || i+4 > len(raw) {
			return false
		}
		if c := raw[i+3] | 0x20; raw[i+2]|0x20 == 'd' && (c == '8' || c == '9' || (c >= 'a' && c <= 'f')) {
			return true
		}
		raw = raw[i+2:]
	}
}

// textScope is an object or array CheckUnicode is inside.
type textScope struct {
	path   string
	object bool
	key    *string // an object's key whose value comes next
	index  int     // an array's current element
}

// valuePath is the path of the value that comes next in s, in the form
// node.field and node.index build: "a.b[2].c". For the root (s nil), "".
func (s *textScope) valuePath() string {
	switch {
	case s == nil:
		return ""
	case s.object:
		if s.path == "" {
			return *s.key
		}
		return s.path + "." + *s.key
	default:
		s.index++
		return fmt.Sprintf("%s[%d]", s.path, s.index)
	}
}

// done ends a value in s: an object then expects its next key.
func (s *textScope) done() {
	if s != nil && s.object {
		s.key = nil
	}
}

// wellFormed reports whether a raw JSON segment is valid UTF-8 and escapes
// no lone surrogate.
func wellFormed(seg []byte) bool {
	if !utf8.Valid(seg) {
		return false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] != '\\' {
			continue
		}
		i++ // the escaped character: \\ and \" are not escapes of a \u
		if i >= len(seg) || seg[i] != 'u' || i+4 >= len(seg) {
			continue
		}
		r := hexRune(seg[i+1 : i+5])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xDC00 { // a low half with no high half before it
			return false
		}
		if i+6 >= len(seg) || seg[i+1] != '\\' || seg[i+2] != 'u' {
			return false
		}
		if low := hexRune(seg[i+3 : i+7]); low < 0xDC00 || low > 0xDFFF {
			return false
		}
		i += 6
	}
	return true
}

func hexRune(h []byte) rune {
	n, err := strconv.ParseUint(string(h), 16, 32)
	if err != nil {
		return utf8.RuneError
	}
	return rune(n)
}
