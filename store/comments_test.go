package store_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
)

// Answers stored before comments became a list kept one slot per decision
// ("comment", "comment_by"); such records still read, each slot as a
// one-entry comment list, and new answers keep every comment.
func TestCommentsReadFromTheOldOneSlotLayout(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	s := mustNew(t, rdb, store.Options{Prefix: prefix})
	ctx := testCtx(t)
	const id = "req-legacy-comments"
	if _, _, err := s.Create(ctx, newReq(id, "agent-a")); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("%s:{s%02d}:req:%s", prefix, shardOf(id), id)
	at := time.Date(2026, 2, 16, 14, 0, 0, 0, time.UTC)
	legacy := map[string]string{
		// Bob commented on Alice's rejection.
		"ans:d4": `{"decision_id":"d4","value":false,"comment":"Spam risk","comment_by":{"id":"U0BOB","name":"Bob"},` +
			`"by":{"id":"U0ALICE","name":"Alice"},"at":"2026-02-16T14:00:00Z"}`,
		// The oldest layout named no comment author: it was the answer's.
		"ans:d1": `{"decision_id":"d1","value":true,"comment":"Good segmentation","by":{"id":"U0ALICE","name":"Alice"},"at":"2026-02-16T14:00:00Z"}`,
		// No comment at all.
		"ans:d2": `{"decision_id":"d2","value":true,"by":{"id":"U0ALICE","name":"Alice"},"at":"2026-02-16T14:00:00Z"}`,
	}
	for field, v := range legacy {
		if err := rdb.HSet(ctx, key, field, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := aah.Person{ID: "U0ALICE", Name: "Alice"}, aah.Person{ID: "U0BOB", Name: "Bob"}
	want := map[string][]aah.Comment{
		"d4": {{By: bob, Text: "Spam risk"}},
		"d1": {{By: alice, Text: "Good segmentation"}},
		"d2": nil,
	}
	for d, w := range want {
		a := rec.Answers[d]
		if !reflect.DeepEqual(a.Comments, w) || a.By != alice || !a.At.Equal(at) {
			t.Errorf("%s = %+v, want comments %+v by Alice", d, a, w)
		}
	}

	// A later comment by someone else joins the list instead of replacing it.
	carol := aah.Person{ID: "U0CAROL", Name: "Carol"}
	a := rec.Answers["d4"].WithComment(aah.Comment{By: carol, At: at.Add(time.Hour), Text: "Agree with Bob"})
	if _, err := s.Update(ctx, id, func(store.Record) (*store.Change, error) {
		return &store.Change{Answers: []aah.Answer{a}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Get(ctx, id)
	got := rec.Answers["d4"].Comments
	if len(got) != 2 || got[0].By != bob || got[1].By != carol || !got[1].At.Equal(at.Add(time.Hour)) {
		t.Errorf("after Carol's comment: %+v", got)
	}
}
