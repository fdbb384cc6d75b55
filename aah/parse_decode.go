package aah

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
	"unsafe"
)

// This file is Decode's single pass: one walk over the body builds the
// generic tree (exactly what encoding/json builds with UseNumber) and the
// compacted document intake stores, where encoding/json scanned the body
// three times (to find the value's end, to decode it, to compact it) and
// copied it once. It handles well-formed JSON only: on anything it does not
// accept, Decode falls back to encoding/json, so every error message stays
// encoding/json's. FuzzDecode holds both to the same trees and errors.

// Decode decodes a JSON document into the generic form ParseDecoded takes
// (objects as map[string]any, numbers as json.Number, so none loses
// precision). Callers that also need the document itself, for hashing or
// editing, decode once with it.
func Decode(raw []byte) (any, error) {
	d := fastDecoder{raw: raw, src: string(raw)}
	if v, ok := d.document(); ok {
		return v, nil
	}
	return decodeStd(raw)
}

// decodeStd is Decode by encoding/json: the single pass's fallback for
// everything it does not accept, so errors keep encoding/json's words.
func decodeStd(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, &ValidationError{Problems: []FieldError{{Field: "", Message: "body is not valid JSON: " + err.Error()}}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ValidationError{Problems: []FieldError{{Field: "", Message: "body must hold exactly one JSON object"}}}
	}
	return doc, nil
}

// maxDecodeDepth is encoding/json's nesting limit; deeper documents go to
// it for its error.
const maxDecodeDepth = 10000

// DecodeCompact is Decode that also returns raw without insignificant
// whitespace (json.Compact's output), with room bytes of spare capacity for
// the caller to splice into without another allocation.
//
// The document's strings share raw's memory rather than copy it (one copy
// of the body fewer on intake's path): raw must never change while any
// string taken from doc may still be in use (a parsed Request keeps
// some). The intake reads a body into a buffer of its own and never writes
// it again.
func DecodeCompact(raw []byte, room int) (doc any, compacted []byte, err error) {
	d := fastDecoder{raw: raw, src: unsafe.String(unsafe.SliceData(raw), len(raw)), keep: true,
		out: make([]byte, 0, len(raw)+room)}
	if v, ok := d.document(); ok {
		return v, d.out, nil
	}
	doc, err = decodeStd(raw)
	return doc, nil, err
}

// fastDecoder walks raw once; ok false means "not handled here", never a
// verdict: the caller asks encoding/json.
type fastDecoder struct {
	raw []byte
	// src is raw as one string: a plain string of the document (most of
	// its keys and values) is a slice of it, not an allocation of its own.
	// The tree keeps the whole body alive as long as any of them is kept.
	src   string
	i     int
	elems []any  // the elements of the arrays being decoded
	keep  bool   // build out
	out   []byte // the compacted document so far
	depth int
}

func (d *fastDecoder) emitByte(c byte) {
	if d.keep {
		d.out = append(d.out, c)
	}
}

func (d *fastDecoder) emit(b []byte) {
	if d.keep {
		d.out = append(d.out, b...)
	}
}

func (d *fastDecoder) document() (any, bool) {
	v, ok := d.value()
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.raw) // trailing data: encoding/json words the error
}

func (d *fastDecoder) space() {
	for d.i < len(d.raw) {
		switch d.raw[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value() (any, bool) {
	d.space()
	if d.i >= len(d.raw) {
		return nil, false
	}
	switch c := d.raw[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, ok := d.string()
		return s, ok
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *fastDecoder) literal(word string) bool {
	if len(d.raw)-d.i < len(word) || string(d.raw[d.i:d.i+len(word)]) != word {
		return false
	}
	if d.keep {
		d.out = append(d.out, word...)
	}
	d.i += len(word)
	return true
}

func (d *fastDecoder) object() (any, bool) {
	more, ok := d.open('{', '}')
	if !ok {
		return nil, false
	}
	defer func() { d.depth-- }()
	m := map[string]any{}
	for more {
		d.space()
		if d.i >= len(d.raw) || d.raw[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok || !d.punct(':') {
			return nil, false
		}
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		m[k] = v // the last of duplicate keys wins, as in encoding/json
		if more, ok = d.next('}'); !ok {
			return nil, false
		}
	}
	return m, true
}

func (d *fastDecoder) array() (any, bool) {
	more, ok := d.open('[', ']')
	if !ok {
		return nil, false
	}
	defer func() { d.depth-- }()
	// The elements gather on d.elems (shared by nested arrays, each above
	// its parent's), so the array is allocated once at its size.
	base := len(d.elems)
	defer func() { clear(d.elems[base:]); d.elems = d.elems[:base] }()
	for more {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		d.elems = append(d.elems, v)
		if more, ok = d.next(']'); !ok {
			return nil, false
		}
	}
	a := make([]any, len(d.elems)-base) // never nil: encoding/json decodes [] as an empty slice
	copy(a, d.elems[base:])
	return a, true
}

// open enters the object or array at d.i (the caller leaves it: d.depth--);
// more is false when it closes at once.
func (d *fastDecoder) open(c, closing byte) (more, ok bool) {
	if d.depth++; d.depth > maxDecodeDepth {
		d.depth--
		return false, false
	}
	d.i++
	d.emitByte(c)
	d.space()
	if d.i < len(d.raw) && d.raw[d.i] == closing {
		d.i++
		d.emitByte(closing)
		return false, true
	}
	return true, true
}

// next takes what follows a member or element: a comma (more follow) or
// the closing bracket.
func (d *fastDecoder) next(closing byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.raw) {
		return false, false
	}
	switch d.raw[d.i] {
	case ',':
		d.i++
		d.emitByte(',')
		return true, true
	case closing:
		d.i++
		d.emitByte(closing)
		return false, true
	}
	return false, false
}

// punct takes the punctuation c, after optional white space.
func (d *fastDecoder) punct(c byte) bool {
	d.space()
	if d.i >= len(d.raw) || d.raw[d.i] != c {
		return false
	}
	d.i++
	d.emitByte(c)
	return true
}

// string decodes the string at d.i. Plain strings (no escape, valid UTF-8)
// are their bytes; the others are decoded by encoding/json itself, so
// escapes, lone surrogates and invalid bytes come out as it makes them.
func (d *fastDecoder) string() (string, bool) {
	start := d.i
	plain, ascii := true, true
	for d.i++; d.i < len(d.raw); d.i++ {
		switch c := d.raw[d.i]; {
		case c == '"':
			d.i++
			lit := d.raw[start:d.i]
			d.emit(lit)
			body := lit[1 : len(lit)-1]
			if plain && (ascii || utf8.Valid(body)) {
				return d.src[start+1 : d.i-1], true
			}
			var s string
			if json.Unmarshal(lit, &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			plain = false
			d.i++ // the escaped character, a quote included; Unmarshal checks it
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// number takes the JSON number at d.i verbatim, as json.Number.
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	digits := func() bool {
		from := d.i
		for d.i < len(d.raw) && d.raw[d.i] >= '0' && d.raw[d.i] <= '9' {
			d.i++
		}
		return d.i > from
	}
	if d.raw[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.raw) && d.raw[d.i] == '0':
		d.i++
	case d.i < len(d.raw) && d.raw[d.i] >= '1' && d.raw[d.i] <= '9':
		digits()
	default:
		return nil, false
	}
	if d.i < len(d.raw) && d.raw[d.i] == '.' {
		d.i++
		if !digits() {
			return nil, false
		}
	}
	if d.i < len(d.raw) && (d.raw[d.i] == 'e' || d.raw[d.i] == 'E') {
		d.i++
		if d.i < len(d.raw) && (d.raw[d.i] == '+' || d.raw[d.i] == '-') {
			d.i++
		}
		if !digits() {
			return nil, false
		}
	}
	num := d.raw[start:d.i]
	d.emit(num)
	return json.Number(num), true
}
