package store

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"strings"
	"sync"

	kflate "github.com/klauspost/compress/flate"
)

// The request hash's "doc" field holds the request's document compressed
// (issue #17: a pending request under 4 KB of Redis; the document is most
// of it). A compressed value starts with docDeflated and continues with
// raw DEFLATE (RFC 1951) under the preset dictionary docDict1; a value
// starting otherwise is the document as sent, which is what records
// written before compression hold, and what a document that does not
// shrink is kept as. A JSON document starts with '{' (or whitespace),
// never with this byte.
const docDeflated = 0x01

// docDict is docDict1 as the compressor takes it.
var docDict = []byte(docDict1)

// docLevel: the compressor is klauspost/compress's DEFLATE, which writes the
// same format as the standard library's (read back by compress/flate) at
// about two thirds of its CPU for these documents, on intake's path. At
// BestSpeed (which, unlike the standard library's, does use the preset
// dictionary) it stores seed 000's example in 536 B, at about 60% of the
// CPU of its default level, which stores it in 479 B (issue #17: intake's
// CPU is the goal still missed, memory has room).
const docLevel = kflate.BestSpeed

// The compressors and decompressors are pooled: each holds hundreds of KB
// of state that would otherwise be allocated per request.
var (
	docWriters = sync.Pool{New: func() any {
		w, _ := kflate.NewWriterDict(nil, docLevel, docDict) // only fails for a bad level
		return w
	}}
	docReaders = sync.Pool{New: func() any { return flate.NewReaderDict(bytes.NewReader(nil), docDict) }}
)

// encodeDoc is the stored form of a document.
func encodeDoc(doc []byte) string {
	var buf strings.Builder // its String does not copy
	buf.Grow(len(doc)/2 + 16)
	buf.WriteByte(docDeflated)
	w := docWriters.Get().(*kflate.Writer)
	w.Reset(&buf)
	_, err := w.Write(doc)
	if err == nil {
		err = w.Close()
	}
	docWriters.Put(w)
	if err != nil || buf.Len() >= len(doc) {
		return string(doc) // as sent: never larger than the document
	}
	stored := buf.String()
	inflated.put(stored, doc) // Create decodes its record at once, the post job soon after
	return stored
}

// decodeDoc reads the "doc" field in either form.
func decodeDoc(v string) ([]byte, error) {
	if v == "" || v[0] != docDeflated {
		return []byte(v), nil
	}
	if doc, ok := inflated.get(v); ok {
		return doc, nil
	}
	doc, err := inflateDoc(v)
	if err == nil {
		inflated.put(v, doc)
	}
	return doc, err
}

func inflateDoc(v string) ([]byte, error) {
	r := docReaders.Get().(io.ReadCloser)
	defer docReaders.Put(r)
	if err := r.(flate.Resetter).Reset(strings.NewReader(v[1:]), docDict); err != nil {
		return nil, fmt.Errorf("store: inflate document: %w", err)
	}
	out := bytes.NewBuffer(make([]byte, 0, 3*len(v)))
	if _, err := io.Copy(out, r); err != nil {
		return nil, fmt.Errorf("store: inflate document: %w", err)
	}
	return out.Bytes(), nil
}

// docs caches recently stored or read documents by their stored form: a
// request's record is decoded several times within moments (its create,
// each step of its post job, each Update), and inflating costs ~7 µs of CPU
// each time against ~0.2 µs for a hit. A document never changes once
// stored, and the key is the stored bytes themselves, so an entry cannot
// go stale.
var inflated = inflatedCache{m: map[string][]byte{}}

// inflatedCacheSize bounds the cache: ~2 KB per entry for seed 000's example.
const inflatedCacheSize = 1024

type inflatedCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

// get returns a copy: a Record's Document is the caller's own.
func (c *inflatedCache) get(stored string) ([]byte, bool) {
	c.mu.Lock()
	doc, ok := c.m[stored]
	c.mu.Unlock()
	return bytes.Clone(doc), ok
}

func (c *inflatedCache) put(stored string, doc []byte) {
	doc = bytes.Clone(doc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[stored]; !ok && len(c.m) >= inflatedCacheSize {
		for k := range c.m { // an arbitrary entry: Go's map order
			delete(c.m, k)
			break
		}
	}
	c.m[stored] = doc
}
