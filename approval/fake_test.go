package approval

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// fakeStore is Storage in memory: an update applies its change with
// store.Change.Apply (which a store test proves agrees with Redis) and keeps
// what the store would also write elsewhere (audit entries, jobs, timers).
type fakeStore struct {
	mu        sync.Mutex
	recs      map[string]store.Record
	commits   int // updates that wrote a change
	audit     []store.AuditEvent
	jobs      []store.JobAt
	cancelled []string
	created   []store.NewRequest // what Create was given
}

func newFakeStore(recs ...store.Record) *fakeStore {
	f := &fakeStore{recs: map[string]store.Record{}}
	for _, r := range recs {
		f.recs[r.ID] = r
	}
	return f
}

func (f *fakeStore) Get(_ context.Context, id string) (store.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec, ok := f.recs[id]
	if !ok {
		return store.Record{}, store.ErrNotFound
	}
	return rec, nil
}

func (f *fakeStore) Update(_ context.Context, id string, decide func(store.Record) (*store.Change, error)) (store.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec, ok := f.recs[id]
	if !ok {
		return store.Record{}, store.ErrNotFound
	}
	ch, err := decide(rec)
	if err != nil {
		return store.Record{}, err
	}
	if ch == nil {
		return rec, nil
	}
	f.recs[id] = ch.Apply(rec)
	f.commits++
	f.audit = append(f.audit, ch.Audit...)
	f.jobs = append(f.jobs, ch.Jobs...)
	f.jobs = append(f.jobs, ch.Timers...)
	f.cancelled = append(f.cancelled, ch.Cancel...)
	return f.recs[id], nil
}

// events are the audit events recorded, by name.
func (f *fakeStore) events(name string) []store.AuditEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.AuditEvent
	for _, e := range f.audit {
		if e.Event == name {
			out = append(out, e)
		}
	}
	return out
}

// Create stores a new pending request, as the store's Create does: an
// identical resubmission is not created again, a different body under the
// same id is store.ErrConflict.
func (f *fakeStore) Create(_ context.Context, n store.NewRequest) (store.Record, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rec, ok := f.recs[n.ID]; ok {
		if rec.BodyHash != n.BodyHash {
			return store.Record{}, false, store.ErrConflict
		}
		return rec, false, nil
	}
	rec := store.Record{ID: n.ID, Agent: n.Agent, Status: aah.StatusPending, Document: n.Document, BodyHash: n.BodyHash,
		Channel: n.Channel, ResponseURL: n.ResponseURL, Version: 1, ReceivedAt: t0, UpdatedAt: t0}
	f.recs[n.ID] = rec
	f.commits++
	f.jobs = append(f.jobs, n.Timers...)
	f.created = append(f.created, n)
	return rec, true, nil
}

var _ Storage = (*fakeStore)(nil)

// t0 is the fake clock's time.
var t0 = time.Date(2027, 2, 16, 10, 0, 0, 0, time.UTC)

// Decision documents the tests combine.
var (
	shipDecision   = map[string]any{"id": "ship", "type": "approval", "prompt": "Ship it?", "required": true}
	budgetDecision = map[string]any{"id": "budget", "type": "approval", "prompt": "Approve the budget?", "required": true}
	timingDecision = map[string]any{"id": "timing", "type": "choice", "prompt": "When?", "required": true, "default": "monday",
		"options": []any{map[string]any{"value": "now", "label": "Now"}, map[string]any{"value": "monday", "label": "Monday"}}}
	trialDecision = map[string]any{"id": "trial", "type": "approval", "prompt": "Offer a trial?", "required": false, "default": true}
	tagDecision   = map[string]any{"id": "tag", "type": "text", "prompt": "Tagline?", "required": true}
)

// requestDoc is a stored request document with the decisions, its
// extensions.slack (nil for none) and on_deadline ("" for the default).
func requestDoc(t *testing.T, decisions []any, slack map[string]any, onDeadline string) json.RawMessage {
	t.Helper()
	ext := map[string]any{}
	if slack != nil {
		ext["slack"] = slack
	}
	if onDeadline != "" {
		ext["on_deadline"] = onDeadline
	}
	doc := map[string]any{
		"aah_version": "0.1",
		"artifact":    map[string]any{"id": "req-1", "type": "decision/request", "title": "Ship release 2.4", "created_at": "2027-02-16T09:00:00Z"},
		"source":      map[string]any{"agent_id": "release-bot"},
		"content": map[string]any{"body": map[string]any{"schema": "aah:decision/request@1.0", "data": map[string]any{
			"title": "Ship", "decisions": decisions, "deadline": "2027-02-17T17:00:00Z",
		}}},
		"handoff":    map[string]any{"expects_response": true, "response_url": "https://agent.example/cb"},
		"extensions": ext,
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aah.Parse(raw, aah.ParseOptions{Stored: true}); err != nil {
		t.Fatalf("test document does not parse: %v", err)
	}
	return raw
}

// pending is a stored, open request "req-1" with the document.
func pending(doc json.RawMessage) store.Record {
	return store.Record{ID: "req-1", Agent: "pm", Status: aah.StatusPending, Document: doc, Channel: "C0APPROVALS",
		ResponseURL: "https://agent.example/cb", Version: 1, ReceivedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-time.Hour)}
}

// newCore is a core over a fake store holding rec, with the test directory
// and policy.
func newCore(rec store.Record, policy Policy) (*Core, *fakeStore) {
	st := newFakeStore(rec)
	return New(st, Options{Now: func() time.Time { return t0 }, Directory: fakeDirectory{}, Policy: policy}), st
}

// People of the tests.
var (
	alice  = aah.Person{ID: "U0ALICE", Name: "alice"}
	bob    = aah.Person{ID: "U0BOB", Name: "bob"}
	carol  = aah.Person{ID: "U0CAROL", Name: "carol"}
	riley  = aah.Person{ID: "U0RILEY", Name: "riley"}
	morgan = aah.Person{ID: "U0MORGAN", Name: "morgan"}
)

// reviewers is an extensions.slack naming the people as reviewers, with
// more fields.
func reviewers(more map[string]any, people ...aah.Person) map[string]any {
	out := maps.Clone(more)
	if out == nil {
		out = map[string]any{}
	}
	var ids []any
	for _, p := range people {
		ids = append(ids, p.ID)
	}
	out["reviewers"] = ids
	return out
}

// response decodes the record's response artifact's data.
func response(t *testing.T, rec store.Record) aah.ResponseData {
	t.Helper()
	var r struct {
		Content struct {
			Body struct {
				Data aah.ResponseData `json:"data"`
			} `json:"body"`
		} `json:"content"`
	}
	if err := json.Unmarshal(rec.Response, &r); err != nil {
		t.Fatalf("response: %v (%s)", err, rec.Response)
	}
	return r.Content.Body.Data
}

// patchData sets content.body.data[key] of a document.
func patchData(t *testing.T, raw json.RawMessage, key string, v any) json.RawMessage {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)[key] = v
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aah.Parse(out, aah.ParseOptions{Stored: true}); err != nil {
		t.Fatalf("patched document does not parse: %v", err)
	}
	return out
}
