package store

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"strings"
	"sync"
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

// docLevel: BestSpeed ignores a preset dictionary; the default level
// with it stores seed 000's example (1,579 B) in ~480 B, where BestSpeed
// alone stores ~800 B (jemalloc then allocates 512 B instead of 896 B).
const docLevel = flate.DefaultCompression

// The compressors and decompressors are pooled: each holds hundreds of KB
// of state that would otherwise be allocated per request.
var (
	docWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriterDict(nil, docLevel, docDict) // only fails for a bad level
		return w
	}}
	docReaders = sync.Pool{New: func() any { return flate.NewReaderDict(bytes.NewReader(nil), docDict) }}
)

// encodeDoc is the stored form of a document.
func encodeDoc(doc []byte) string {
	var buf bytes.Buffer
	buf.Grow(len(doc)/2 + 16)
	buf.WriteByte(docDeflated)
	w := docWriters.Get().(*flate.Writer)
	w.Reset(&buf)
	_, err := w.Write(doc)
	if err == nil {
		err = w.Close()
	}
	docWriters.Put(w)
	if err != nil || buf.Len() >= len(doc) {
		return string(doc) // as sent: never larger than the document
	}
	return buf.String()
}

// decodeDoc reads the "doc" field in either form.
func decodeDoc(v string) ([]byte, error) {
	if v == "" || v[0] != docDeflated {
		return []byte(v), nil
	}
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
