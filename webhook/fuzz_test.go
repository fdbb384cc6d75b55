package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// memStore is the smallest Store and Lifecycle: validate never calls them,
// the API needs them.
type memStore struct{}

func (memStore) Create(_ context.Context, n approval.Submission) (store.Record, bool, error) {
	return store.Record{ID: n.Request.Artifact.ID, Agent: n.Agent, Status: aah.StatusPending, Document: n.Document,
		BodyHash: n.BodyHash, Channel: n.Channel}, true, nil
}
func (memStore) SignOffFloor(string) aah.Defaults { return aah.Defaults{} }
func (memStore) Get(context.Context, string) (store.Record, error) {
	return store.Record{}, store.ErrNotFound
}
func (memStore) List(context.Context, store.ListQuery) (store.Page, error) {
	return store.Page{}, nil
}
func (memStore) Withdraw(context.Context, string) (store.Record, error) {
	return store.Record{}, store.ErrNotFound
}
func (memStore) Deliveries(context.Context, string) ([]store.DeliveryAttempt, error) { return nil, nil }
func (memStore) Redeliver(context.Context, string, string) (store.Record, error) {
	return store.Record{}, store.ErrNotFound
}
func (memStore) VerifiedAudit(context.Context, string) ([]store.AuditEntry, []error, error) {
	return nil, nil, store.ErrNotFound
}
func (memStore) AuditIntakeRefusal(context.Context, store.IntakeRefusal) error { return nil }
func (memStore) Admit(context.Context, string, string, store.Rate, int, time.Duration) (store.RateDecision, store.OpenSlot, error) {
	return store.RateDecision{Allowed: true}, store.OpenSlot{Held: true}, nil
}
func (memStore) ConfirmOpenLater(store.OpenSlot)                  {}
func (memStore) SettleOpen(context.Context, store.OpenSlot) error { return nil }

// fuzzNow is the moment of the seed example: its deadline is the next day.
var fuzzNow = time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)

func newFuzzAPI(t testing.TB) *API {
	t.Helper()
	a, err := New(Options{
		Store:          memStore{},
		Lifecycle:      memStore{},
		AllowAnonymous: true,
		DefaultChannel: "#approvals",
		Now:            func() time.Time { return fuzzNow },
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func readSeed(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/seed000_request.json")
	if err != nil {
		t.Fatalf("read seed: %v", err)
	}
	return raw
}

func indent(t testing.TB, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "\t ", "    "); err != nil {
		t.Fatalf("indent a valid document: %v", err)
	}
	return b.Bytes()
}

func decodeTree(t testing.TB, raw []byte) any {
	t.Helper()
	tree, err := aah.Decode(raw)
	if err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return tree
}

// checkWithArtifactID runs withArtifactID on arbitrary bytes: it must not
// panic, and when it succeeds the result is the same document with
// artifact.id replaced.
func checkWithArtifactID(t *testing.T, raw []byte) {
	const id = "fuzz-generated-id"
	var doc json.RawMessage
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("withArtifactID(%q) panicked: %v", raw, r)
			}
		}()
		doc, err = withArtifactID(raw, id)
	}()
	if err != nil {
		return
	}
	if !json.Valid(doc) {
		t.Fatalf("withArtifactID(%q) = %q, not valid JSON", raw, doc)
	}
	want := decodeTree(t, raw).(map[string]any)
	want["artifact"].(map[string]any)["id"] = id
	got := decodeTree(t, doc)
	if !reflect.DeepEqual(got, any(want)) {
		t.Fatalf("withArtifactID(%q) = %q: other values changed", raw, doc)
	}
}

// checkStoredWithID runs storedWithID on arbitrary bytes whose artifact is
// an object: the result is raw compacted with only the "id" member added,
// and it decodes to raw's tree with artifact.id set.
func checkStoredWithID(t *testing.T, raw []byte) {
	const id = "fuzz-generated-id"
	tree, err := aah.Decode(raw)
	if err != nil {
		return
	}
	top, _ := tree.(map[string]any)
	art, ok := top["artifact"].(map[string]any)
	if !ok {
		return
	}
	_, hadID := art["id"]
	var compacted bytes.Buffer
	if err := json.Compact(&compacted, raw); err != nil {
		t.Fatal(err)
	}
	doc, err := storedWithID(raw, bytes.Clone(compacted.Bytes()), art, id)
	if err != nil {
		t.Fatalf("storedWithID(%q): %v", raw, err)
	}
	art["id"] = id
	if got := decodeTree(t, doc); !reflect.DeepEqual(got, tree) {
		t.Fatalf("storedWithID(%q) = %q: other values changed", raw, doc)
	}
	if hadID {
		return // withArtifactID's document, checked by checkWithArtifactID
	}
	member := `"id":"` + id + `"`
	without := bytes.Replace(doc, []byte(member+","), nil, 1)
	if len(without) == len(doc) {
		without = bytes.Replace(doc, []byte(member), nil, 1)
	}
	if !bytes.Equal(without, compacted.Bytes()) {
		t.Fatalf("storedWithID(%q) = %q: not the compacted body with the id member added", raw, doc)
	}
}

func FuzzIntake(f *testing.F) {
	seed := readSeed(f)
	f.Add(seed)
	var compacted bytes.Buffer
	if err := json.Compact(&compacted, seed); err != nil {
		f.Fatal(err)
	}
	f.Add(compacted.Bytes())
	seedWith := func(old, new string) []byte {
		if !bytes.Contains(seed, []byte(old)) {
			f.Fatalf("seed has no %q", old)
		}
		return bytes.Replace(seed, []byte(old), []byte(new), 1)
	}
	f.Add(seedWith(`"id": "aah_decision_abc123",`, ``))                                                          // generated id
	f.Add(seedWith(`"id": "aah_decision_abc123",`, `"id": null,`))                                               // generated id
	f.Add(seedWith(`"title": "Approve Marketing Strategy"`, `"title": "Approve <Marketing> & \u2028 Strategy"`)) // HTML escaping
	f.Add(seedWith(`"id": "aah_decision_abc123",`, `"x": "<&>", "n": 1.50e+3,`))
	f.Add(seedWith(`"lifecycle": {`, `"extensions": {"slack": {"channel": "C0123ABCD", "reviewers": ["U123ABC"]}}, "lifecycle": {`))
	f.Add(seedWith(`"priority": "high"`, `"priority": "whenever"`))
	f.Add(append(append([]byte{}, seed...), ']'))
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"artifact":null}`, `{"artifact":{}}`, `{"artifact":[]}`, `"x"`, "{\"artifact\":{\"id\":\"\xff\"}}",
		// Where the generated id is spliced: the last of duplicate keys, an
		// escaped key, keys and strings that look like "artifact".
		` { "artifact" : { } , "artifact" : { "title" : "t" } } `, `{"\u0061rtifact":{"x":1}}`,
		`{"a":{"artifact":{"n":1}},"s":"\"artifact\":{","artifact":{"k":"\\"}}`, `{"artifact":{"id":null,"t":"x"}}`} {
		f.Add([]byte(s))
	}

	a := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkWithArtifactID(t, raw)
		checkStoredWithID(t, raw)

		// The canonical hash ignores indentation, for any JSON document.
		if tree, err := aah.Decode(raw); err == nil {
			if h1, h2 := canonicalHash(tree), canonicalHash(decodeTree(t, indent(t, raw))); h1 != h2 {
				t.Fatalf("canonicalHash changes when %q is re-indented", raw)
			}
		}

		req, doc, hash, probs := a.validate(raw, AnonymousAgent)
		if len(probs) > 0 {
			if req != nil || doc != nil || hash != "" {
				t.Fatalf("validate returned problems and a result")
			}
			for _, p := range probs {
				if p.Message == "" {
					t.Fatalf("problem at %q has no message", p.Field)
				}
			}
			return
		}
		if req == nil || doc == nil || hash == "" {
			t.Fatalf("validate returned neither problems nor a full result: %v %q %q", req, doc, hash)
		}
		if !json.Valid(doc) {
			t.Fatalf("validate accepted %q and returned a document that is not valid JSON: %q", raw, doc)
		}
		if !aah.ValidRequestID(req.Artifact.ID) {
			t.Fatalf("request id %q is not valid", req.Artifact.ID)
		}
		docTree := decodeTree(t, doc)
		art, _ := docTree.(map[string]any)["artifact"].(map[string]any)
		if id, _ := art["id"].(string); id != req.Artifact.ID {
			t.Fatalf("stored artifact.id %#v, request id %q", art["id"], req.Artifact.ID)
		}
		if got := canonicalHash(docTree); got != hash {
			t.Fatalf("hash %s is not the hash of the stored document (%s)", hash, got)
		}
		if got := canonicalHash(decodeTree(t, indent(t, doc))); got != hash {
			t.Fatalf("hash of the re-indented stored document differs")
		}
		// The stored document reads back as the same request.
		back, err := aah.Parse(doc, aah.ParseOptions{Now: fuzzNow, AllowInsecureCallbacks: a.opts.AllowInsecureCallbacks})
		if err != nil || !reflect.DeepEqual(back, req) {
			t.Fatalf("stored document parses to %+v, %v; want %+v", back, err, req)
		}
		back, err = aah.Parse(doc, aah.ParseOptions{Now: fuzzNow.AddDate(10, 0, 0), Stored: true})
		if err != nil || !reflect.DeepEqual(back, req) {
			t.Fatalf("stored document read back later: %v", err)
		}

		// With an id of its own, the same body re-indented is the same request:
		// same stored document, same hash (an idempotent retry).
		if rawTree := decodeTree(t, raw).(map[string]any); rawTree["artifact"].(map[string]any)["id"] != nil {
			req2, doc2, hash2, probs2 := a.validate(indent(t, raw), AnonymousAgent)
			if len(probs2) > 0 || !bytes.Equal(doc2, doc) || hash2 != hash || !reflect.DeepEqual(req2, req) {
				t.Fatalf("re-indented body validates differently: %v\n%q\n%q", probs2, doc, doc2)
			}
		}
	})
}

// withArtifactID once assigned into the nil map json.Unmarshal leaves for an
// artifact that is JSON null, and panicked; it must return an error.
func TestWithArtifactIDNullArtifact(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`{"artifact":null}`, `{"aah_version":"0.1","artifact": null ,"source":{}}`} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("withArtifactID(%s) panicked: %v; want an error", raw, r)
				}
			}()
			if _, err := withArtifactID([]byte(raw), "id"); err == nil {
				t.Errorf("withArtifactID(%s) succeeded; want an error", raw)
			}
		}()
	}
}

func TestValidateSeedExample(t *testing.T) {
	t.Parallel()
	a := newFuzzAPI(t)
	seed := readSeed(t)
	req, doc, hash, probs := a.validate(seed, AnonymousAgent)
	if len(probs) > 0 {
		t.Fatalf("seed example refused: %+v", probs)
	}
	if req.Artifact.ID != "aah_decision_abc123" || len(req.Data.Decisions) != 4 {
		t.Errorf("request = %+v", req)
	}
	var compacted bytes.Buffer
	_ = json.Compact(&compacted, seed)
	if !bytes.Equal(doc, compacted.Bytes()) {
		t.Errorf("stored document is not the compacted body:\n%s", doc)
	}
	if _, _, hash2, _ := a.validate(indent(t, seed), AnonymousAgent); hash2 != hash {
		t.Errorf("re-indented body hashes differently")
	}

	// Without an id, one is generated and written into the stored document.
	noID := bytes.Replace(seed, []byte(`"id": "aah_decision_abc123",`), nil, 1)
	req, doc, _, probs = a.validate(noID, AnonymousAgent)
	if len(probs) > 0 {
		t.Fatalf("seed without id refused: %+v", probs)
	}
	if !aah.ValidRequestID(req.Artifact.ID) || !strings.Contains(string(doc), `"id":"`+req.Artifact.ID+`"`) {
		t.Errorf("generated id %q not in stored document %s", req.Artifact.ID, doc)
	}
}
