package store

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/s2"
)

// A request's document is kept compressed in a key of its own (issue #17:
// a pending request under 4 KB of Redis; the document is most of it). The
// stored value's first byte says how:
//
//   - docS2: an S2 block (klauspost/compress/s2, a Snappy extension)
//     under the preset dictionary docDict1. What every create writes.
//   - docDeflated: raw DEFLATE (RFC 1951) under docDict1, which commits
//     made while issue #17 was in progress wrote. Read, never written.
//   - anything else: the document as sent, which records written before
//     compression hold, and what a document that does not shrink is kept
//     as. A JSON document starts with '{' (or whitespace), never with
//     either byte.
//
// S2 over DEFLATE: intake compresses every document on its path, and S2
// does it in about a seventh of the CPU of DEFLATE at BestSpeed (2.2 µs,
// into a pooled buffer, against 15.7 µs for seed 000's example,
// BenchmarkDocCodec) and decompresses in a third (2.2 against 7.8 µs),
// storing 650 B against
// 537 B: intake's CPU is issue #17's goal still missed, and memory has
// room (BENCHMARKS.md).
const (
	docDeflated = 0x01
	docS2       = 0x02
)

// docS2Dict is docDict1 as S2 takes it. Its first repeat offset (where S2
// looks for a match before the block has any history) is pinned at 0,
// rather than left to the library to choose, because a block can be read
// only with the very dictionary and offset it was written with.
var docS2Dict = s2.MakeDictManual(docDict, 0)

// docDict is docDict1 as the codecs take it, converted once.
var docDict = []byte(docDict1)

// encodeDoc is the stored form of a document.
func encodeDoc(doc []byte) string {
	// The block is written after the leading byte, in a buffer of the
	// most it can take (a pooled one: ~3 KB a request on intake's path);
	// the string copies only what it took.
	bp := docBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledDocBuf {
			docBufs.Put(bp)
		}
	}()
	if n := 1 + s2.MaxEncodedLen(len(doc)); cap(*bp) < n {
		*bp = make([]byte, n)
	}
	buf := (*bp)[:cap(*bp)]
	buf[0] = docS2
	block := docS2Dict.Encode(buf[1:], doc)
	if len(block)+1 >= len(doc) {
		return string(doc) // as sent: never larger than the document
	}
	return string(buf[:1+len(block)])
}

// docBufs holds encodeDoc's buffers; one larger than maxPooledDocBuf (a
// rare large document) is left to the collector rather than kept.
var docBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledDocBuf = 64 << 10

// decodeDoc reads a stored document in any of its forms.
func decodeDoc(v string) ([]byte, error) {
	if v == "" {
		return []byte(v), nil
	}
	switch v[0] {
	case docS2:
		doc, err := docS2Dict.Decode(nil, []byte(v[1:]))
		if err != nil {
			return nil, fmt.Errorf("store: decode document: %w", err)
		}
		return doc, nil
	case docDeflated:
		return inflateDoc(v)
	}
	return []byte(v), nil
}

// docReaders pools DEFLATE's decompressors: each holds tens of KB of state.
var docReaders = sync.Pool{New: func() any { return flate.NewReaderDict(bytes.NewReader(nil), docDict) }}

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
