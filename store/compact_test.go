package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/redis/go-redis/v9"
)

// Issue #17's compact request (one compressed copy of the document, no
// field holding its default) must read as the old one did, and a Redis
// written by the code before it must keep working.

// bigDoc is a document that compresses, with the odd spacing intake keeps.
func bigDoc(id string) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, `{"artifact" : {"id":%q}, "content":{"decisions":[`, id)
	for i := range 20 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"d%d","type":"approve","prompt":"Approve step %d of the plan?"}`, i, i)
	}
	b.WriteString("]}}")
	return json.RawMessage(b.String())
}

// compactJSON is doc as an event's data carries it (encoding/json compacts
// a json.RawMessage it encodes).
func compactJSON(t *testing.T, doc []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestCompactStorage runs the tests of the compact forms on both backends.
func TestCompactStorage(t *testing.T) {
	for name, b := range rawBackends() {
		t.Run(name, func(t *testing.T) {
			t.Run("Request", func(t *testing.T) { testCompactRequest(t, b(t, "")) })
			t.Run("PendingHashIsListpack", func(t *testing.T) { testPendingHashIsListpack(t, b(t, "k")) })
			t.Run("OldFormatRecord", func(t *testing.T) { testOldFormatRecord(t, b(t, "")) })
			t.Run("AuditChainMixedForms", func(t *testing.T) { testAuditChainMixedForms(t, b(t, "k")) })
		})
	}
}

// testCompactRequest: the stored request holds one compressed copy of its
// document and no default-valued field; Get and the input:requested event
// give the document back exactly as they did when both held it verbatim.
func testCompactRequest(t *testing.T, f retentionFixture) {
	rdb, s, clk := f.rdb, f.s, f.clk
	id := "compact-1"
	n := newReq(id, "agent-a")
	n.Document = bigDoc(id)
	created := f.mustCreate(t, n)
	if !bytes.Equal(created.Document, n.Document) {
		t.Errorf("Create's record document = %s, want %s", created.Document, n.Document)
	}
	if got := f.mustGet(t, id); !bytes.Equal(got.Document, n.Document) || got.ResponseURL != "" ||
		got.Timers != nil || got.IndexedReviewers != nil || got.Version != 1 || got.ID != id {
		t.Errorf("Get = doc %s url %q timers %v reviewers %v version %d", got.Document, got.ResponseURL, got.Timers,
			got.IndexedReviewers, got.Version)
	}
	h, err := rdb.HGetAll(f.ctx, f.key(shardOf(id), "req:"+id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if doc, ok := h["doc"]; ok {
		t.Errorf("the request's hash holds its document (%d bytes); it has a key of its own", len(doc))
	}
	if doc := rdb.Get(f.ctx, f.key(shardOf(id), "doc:"+id)).Val(); doc == "" || doc[0] != store.DocS2 || len(doc) >= len(n.Document) {
		t.Errorf("stored doc is %d bytes (%.1q); want it compressed (document %d bytes)", len(doc), doc, len(n.Document))
	}
	for _, field := range []string{"id", "version", "response_url", "timers", "reviewer_idx", "mentions"} {
		if v, ok := h[field]; ok {
			t.Errorf("field %s = %q is stored; its default need not be", field, v)
		}
	}
	// Posted at the first attempt: no sweep will need the attempt count.
	if _, err := s.BeginPost(f.ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordPost(f.ctx, id, "C0APPROVALS", "1700000000.000100", 1, clk.Now()); err != nil {
		t.Fatal(err)
	}
	h = rdb.HGetAll(f.ctx, f.key(shardOf(id), "req:"+id)).Val()
	if h["slack_ts"] == "" || h["post_attempts"] != "" || h["post_first_ms"] != "" {
		t.Errorf("posted at the first attempt, the request holds %v", h)
	}
	// Showing version 1, as nearly every post does: not written, read as 1.
	if v, ok := h["rendered_version"]; ok {
		t.Errorf("rendered_version %q is stored; 1 need not be", v)
	}
	if got := f.mustGet(t, id); got.Slack.RenderedVersion != 1 || got.Version != 1 {
		t.Errorf("posted request reads rendered version %d (version %d), want 1", got.Slack.RenderedVersion, got.Version)
	}
	// Redis sizes a hash's table for the most fields it ever held: a posted
	// request of the seed's shape (no response_url, reviewers or events URL)
	// keeps to 16 once its permalink is in, and never held more (the
	// change deletes before it sets).
	if err := s.SetPermalink(f.ctx, id, "C0APPROVALS", "1700000000.000100", "https://example.slack.com/archives/C0APPROVALS/p1700000000000100"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.HLen(f.ctx, f.key(shardOf(id), "req:"+id)).Val(); n > 16 {
		t.Errorf("a posted request holds %d fields: more than 16 doubles its hash table", n)
	}
	// A message found rather than sent shows no version yet: 0, stored.
	found := "compact-found"
	f.mustCreate(t, newReq(found, "agent-a"))
	if err := s.RecordPost(f.ctx, found, "C0APPROVALS", "1700000000.000200", 0, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := f.mustGet(t, found); got.Slack.RenderedVersion != 0 || !got.Posted() {
		t.Errorf("found message reads rendered version %d (posted %v), want 0", got.Slack.RenderedVersion, got.Posted())
	}
	raw, err := rdb.XRange(f.ctx, f.key(shardOf(id), "events"), "-", "+").Result()
	if err != nil || len(raw) != 1 {
		t.Fatalf("stream = %v, %v; want one event", raw, err) // (input:requested; posting writes none)
	}
	if data := raw[0].Values["data"].(string); strings.Contains(data, "decisions") {
		t.Errorf("the stream holds a copy of the document: %s", data)
	}
	want := `{"channel":"C0APPROVALS","request":` + compactJSON(t, n.Document) + `}`
	if evs := f.shardEvents(t, shardOf(id)); len(evs) != 1 || string(evs[0].Data) != want {
		t.Fatalf("events = %+v; want input:requested with data %s", evs, want)
	}

	// The request gone (retention), or its id taken by a later request:
	// the event links to the request, as a document too large to carry does.
	link := `{"channel":"C0APPROVALS","request_link":"/v1/requests/` + id + `"}`
	if err := rdb.HSet(f.ctx, f.key(shardOf(id), "req:"+id), "received_ms", clk.Now().Add(time.Hour).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	if evs := f.shardEvents(t, shardOf(id)); len(evs) != 1 || string(evs[0].Data) != link {
		t.Errorf("event of an id taken since = %s; want %s", evs[0].Data, link)
	}
	if err := rdb.Del(f.ctx, f.key(shardOf(id), "req:"+id)).Err(); err != nil {
		t.Fatal(err)
	}
	if evs := f.shardEvents(t, shardOf(id)); len(evs) != 1 || string(evs[0].Data) != link {
		t.Errorf("event of a deleted request = %s; want %s", evs[0].Data, link)
	}
}

// testOldFormatRecord reads a request and its event as the code before
// issue #17's compaction wrote them (fixture of its HSET fields and XADD).
func testOldFormatRecord(t *testing.T, f retentionFixture) {
	rdb, clk := f.rdb, f.clk
	id := "old-1"
	doc := bigDoc(id)
	ms := fmt.Sprint(clk.Now().UnixMilli())
	if err := rdb.HSet(f.ctx, f.key(shardOf(id), "req:"+id), map[string]any{
		"id": id, "agent": "agent-a", "status": "pending", "timers": `[]`, "reviewer_idx": "null",
		"doc": string(doc), "hash": "sha256:x", "channel": "C0APPROVALS", "response_url": "",
		"version": "1", "received_ms": ms, "updated_ms": ms, "audit_head": "", "audit_gseq0": "1",
		"mentions": "[]", "post_attempts": "1", "post_first_ms": ms, "rendered_version": "1",
	}).Err(); err != nil {
		t.Fatal(err)
	}
	data := `{"channel":"C0APPROVALS","request":` + compactJSON(t, doc) + `}`
	if err := rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.key(shardOf(id), "events"), ID: ms + "-0", Values: []any{
		"request_id", id, "agent", "agent-a", "type", store.EventInputRequested, "at", ms, "data", data}}).Err(); err != nil {
		t.Fatal(err)
	}
	rec := f.mustGet(t, id)
	if !bytes.Equal(rec.Document, doc) || rec.ResponseURL != "" || rec.Timers != nil || rec.IndexedReviewers != nil ||
		len(rec.Mentions) != 0 || rec.Version != 1 || rec.Slack.Attempts != 1 || rec.Slack.RenderedVersion != 1 {
		t.Errorf("old record reads as %+v", rec)
	}
	if err := rdb.Del(f.ctx, f.key(shardOf(id), "req:"+id)).Err(); err != nil {
		t.Fatal(err)
	}
	// The old event carries its document itself: it is given as stored,
	// even once the request is gone.
	if evs := f.shardEvents(t, shardOf(id)); len(evs) != 1 || string(evs[0].Data) != data {
		t.Errorf("old event = %+v; want data %s", evs, data)
	}
}

// testAuditChainMixedForms: a request chain whose first entries were stored
// in the full form (by the code before issue #17) and whose later ones are
// compact verifies, exports and reads as one chain.
func testAuditChainMixedForms(t *testing.T, f retentionFixture) {
	rdb, s, clk := f.rdb, f.s, f.clk
	id := "mixed-1"
	f.mustCreate(t, newReq(id, "agent-a"))
	key := f.key(shardOf(id), "audit:"+id)
	first, err := s.Audit(f.ctx, id)
	if err != nil || len(first) != 1 {
		t.Fatalf("Audit = %v, %v", first, err)
	}
	old, _ := json.Marshal(first[0]) // exactly what the old code stored (mustJSON of the entry)
	if err := rdb.LSet(f.ctx, key, 0, old).Err(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	f.mustWithdraw(t, id)
	raw := rdb.LRange(f.ctx, key, 0, -1).Val()
	if len(raw) != 2 || !strings.HasPrefix(raw[0], `{"seq":1,`) || !strings.HasPrefix(raw[1], `{"s":2,`) ||
		strings.Contains(raw[1], id) {
		t.Fatalf("stored chain = %q; want the full entry, then a compact one without the id", raw)
	}
	entries, problems, err := s.VerifiedAudit(f.ctx, id)
	if err != nil || len(problems) != 0 || len(entries) != 2 || entries[1].Prev != entries[0].Hash ||
		entries[1].RequestID != id || entries[1].Event != "withdrawn" || !entries[1].At.Equal(clk.Now()) {
		t.Fatalf("VerifiedAudit = %+v, %v, %v", entries, problems, err)
	}
	if rep, err := s.VerifyAll(f.ctx); err != nil || len(rep.Problems) != 0 || rep.Entries != 2 {
		t.Errorf("VerifyAll = %+v, %v", rep, err)
	}
	var buf bytes.Buffer
	if _, err := s.Export(f.ctx, &buf, time.Time{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.NewAuditVerifier([]byte("k")).VerifyExport(&buf); err != nil {
		t.Errorf("VerifyExport: %v", err)
	}
	// Removing the full entry breaks the compact one that follows it.
	if err := rdb.LPop(f.ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if _, problems, _ := s.VerifiedAudit(f.ctx, id); len(problems) == 0 {
		t.Error("a chain missing its first entry verifies")
	}
}

// testPendingHashIsListpack: a pending request as production makes them (a
// UUID for its id, timers, five reviewers mentioned, posted, its permalink
// in) holds no
// value over 64 bytes in its hash, so real Redis keeps the hash a listpack
// (~1 KB less than a hash table: storedDocument), and reads back whole:
// its timers, its permalink, its document, an audit chain that verifies
// after a change wrote its head again.
func testPendingHashIsListpack(t *testing.T, f retentionFixture) {
	rdb, s, clk := f.rdb, f.s, f.clk
	id := "3f2b8c1e-9d4a-4e7b-a6c5-0b1d2e3f4a5b"
	n := newReq(id, "agent-a")
	n.Document = bigDoc(id)
	n.Reviewers = []string{"U01ALICE001", "U01BOB00002", "U01CAROL003", "U01DAVE0004", "U01ERIN0005"}
	n.Deadline = clk.Now().Add(24 * time.Hour)
	n.Timers = []store.JobAt{
		{ID: store.JobID(store.JobExpire, id), At: n.Deadline},
		{ID: store.TimerID(store.JobEscalate, id, 0), At: clk.Now().Add(time.Hour)},
		{ID: store.TimerID(store.JobRemind, id, 0), At: clk.Now().Add(10 * time.Minute)},
		{ID: store.TimerID(store.JobRemind, id, 1), At: clk.Now().Add(20 * time.Minute)},
	}
	f.mustCreate(t, n)
	const channel, ts = "C0123456789", "1795758439.876381"
	link := "https://acme-corporation.enterprise.slack.com/archives/" + channel + "/p1795758439876381"
	if _, err := s.BeginPost(f.ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordPost(f.ctx, id, channel, ts, 1, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPermalink(f.ctx, id, channel, ts, link); err != nil {
		t.Fatal(err)
	}
	mentions := []string{"<@U01ALICE001>", "<@U01BOB00002>", "<@U01CAROL003>", "<@U01DAVE0004>", "<@U01ERIN0005>"}
	if err := s.SetMentions(f.ctx, id, mentions); err != nil {
		t.Fatal(err)
	}
	// A change writes the audit head again (and the timers: a reminder more).
	next := store.TimerID(store.JobRemind, id, 2)
	if _, err := s.Update(f.ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Timers: []store.JobAt{{ID: next, At: clk.Now().Add(30 * time.Minute)}},
			Audit: []store.AuditEvent{{Event: "reminded", Actor: "system"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	key := f.key(shardOf(id), "req:"+id)
	for field, v := range rdb.HGetAll(f.ctx, key).Val() {
		if len(v) > 64 {
			t.Errorf("field %s holds %d bytes (%q): over 64, the hash is a hash table", field, len(v), v)
		}
	}
	if enc, err := rdb.ObjectEncoding(f.ctx, key).Result(); err == nil && enc != "listpack" {
		t.Errorf("the pending request's hash is a %s, want a listpack", enc) // (the embedded store has no encodings)
	}
	got := f.mustGet(t, id)
	wantTimers := []string{n.Timers[0].ID, n.Timers[1].ID, n.Timers[2].ID, n.Timers[3].ID, next}
	if !slices.Equal(got.Timers, wantTimers) || got.Slack.Permalink != link || !bytes.Equal(got.Document, n.Document) {
		t.Errorf("Get = timers %q, permalink %q, document %d bytes; want %q, %q, %d bytes",
			got.Timers, got.Slack.Permalink, len(got.Document), wantTimers, link, len(n.Document))
	}
	if !slices.Equal(got.Mentions, mentions) || !slices.Equal(got.IndexedReviewers, n.Reviewers) {
		t.Errorf("Get = mentions %q, reviewers %q; want %q, %q", got.Mentions, got.IndexedReviewers, mentions, n.Reviewers)
	}
	rep, err := s.VerifyAll(f.ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Errorf("VerifyAll = %v, %v; want no problem", rep.Problems, err)
	}
}
