package store

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/examples"
)

// Documents stored compressed can only be read with the dictionary they
// were written with: a change to docDict1 would make them unreadable.
func TestDocDictPinned(t *testing.T) {
	sum := sha256.Sum256([]byte(docDict1))
	if got := hex.EncodeToString(sum[:]); got != "7887f24a249b4cf37c0eddc01b6cc19a70edab01006241bc9d9da9e42da44beb" {
		t.Fatalf("docDict1 changed (sha256 %s): stored documents would not decode; add a new dictionary instead", got)
	}
}

// A document stored as an S2 block must read back the same for good,
// whatever version of the S2 library reads it: one block written on
// 2026-11-27 (klauspost/compress v1.20.1), kept as it was stored.
func TestDocS2Pinned(t *testing.T) {
	const doc = `{"aah_version":"0.1","artifact":{"id":"pinned-1","type":"decision/request","title":"Ship the release?"},` +
		`"content":{"body":{"data":{"decisions":[{"id":"d1","type":"approval","prompt":"Ship it?","required":true}]}}}}`
	stored, err := base64.StdEncoding.DecodeString("AtYBFQAaMGlkIjoicGlubmVkLTFqJAbZSURTaGlwIHRoZSByZWxlYXNlPyJ25AQxZRBz" +
		"Ijpbe23VHWp1uH3nHFNoaXAgaXQ/Mu8DJHRydWV9XX19fX0=")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeDoc(string(stored)); err != nil || string(got) != doc {
		t.Fatalf("decodeDoc(pinned S2 block) = %q, %v", got, err)
	}
}

func TestDocCodec(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"content":{"body":{"data":{"decisions":[`)
	for i := range 200 {
		fmt.Fprintf(&big, `{"id":"d%d","type":"approval","prompt":"Approve %d?"},`, i, i)
	}
	big.WriteString(`{}]}}}}`)
	for name, doc := range map[string]string{
		"small":  `{"a":1}`, // larger compressed: kept as sent
		"spaced": `{"z":1,  "artifact" : {"id":"x"},"a":[true,null]}`,
		"big":    big.String(),
		"utf8":   `{"title":"Étape – 決定 ✓","content":{"body":{"data":{"context":"` + strings.Repeat("ü", 300) + `"}}}}`,
	} {
		stored := encodeDoc([]byte(doc))
		if len(stored) > len(doc) {
			t.Errorf("%s: stored %d bytes for a %d-byte document", name, len(stored), len(doc))
		}
		got, err := decodeDoc(stored)
		if err != nil || string(got) != doc {
			t.Errorf("%s: decodeDoc(encodeDoc) = %q, %v", name, got, err)
		}
	}
	if stored := encodeDoc([]byte(big.String())); stored[0] != docS2 || len(stored) > big.Len()/4 {
		t.Errorf("big: stored %d bytes of %d", len(stored), big.Len())
	}
	// As commits made while issue #17 was in progress stored it: DEFLATE
	// under the same dictionary (written here by the standard library).
	var deflated bytes.Buffer
	deflated.WriteByte(docDeflated)
	fw, err := flate.NewWriterDict(&deflated, flate.BestSpeed, []byte(docDict1))
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(big.String()))
	fw.Close()
	if got, err := decodeDoc(deflated.String()); err != nil || string(got) != big.String() {
		t.Errorf("decodeDoc(deflated) = %d bytes, %v", len(got), err)
	}
	// As records written before compression hold it.
	if got, err := decodeDoc(`{"a":1}`); err != nil || string(got) != `{"a":1}` {
		t.Errorf("decodeDoc(verbatim) = %q, %v", got, err)
	}
	for _, corrupt := range []string{"\x01not deflate", "\x02not s2", "\x02"} {
		if _, err := decodeDoc(corrupt); err == nil {
			t.Errorf("decodeDoc(%q): no error", corrupt)
		}
	}
}

// BenchmarkDocCodec is the CPU a document's compression costs intake and
// its decompression each read of the record.
func BenchmarkDocCodec(b *testing.B) {
	raw, err := examples.Request(time.Now(), examples.Options{}) // seed 000's example, as the bench sends it
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		b.Fatal(err)
	}
	doc := compact.Bytes()
	stored := encodeDoc(doc)
	b.Logf("%d bytes stored in %d", len(doc), len(stored))
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			encodeDoc(doc)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := decodeDoc(stored); err != nil {
				b.Fatal(err)
			}
		}
	})
}
