package aah_test

import (
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// One comment per person: writing again replaces theirs in place, blank
// text removes it, and nobody else's is touched. The rationale of a
// person's answer is their own comment only; with nobody's answer it is
// the latest comment.
func TestCommentsPerPerson(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 2, 16, 14, 0, 0, 0, time.UTC)
	a := aah.Answer{DecisionID: "d4"}
	a = a.WithComment(aah.Comment{By: alice, At: at, Text: "Spam risk"})
	b := a.WithComment(aah.Comment{By: bob, At: at.Add(time.Minute), Text: "Trial drives signups"})
	b = b.WithComment(aah.Comment{By: alice, At: at.Add(2 * time.Minute), Text: "Spam risk, really"})
	if len(a.Comments) != 1 || len(b.Comments) != 2 || b.Comments[0].By != alice || b.Comments[0].Text != "Spam risk, really" {
		t.Fatalf("comments: before %+v, after %+v", a.Comments, b.Comments)
	}
	if r, ok := b.Rationale(); !ok || r.By != alice {
		t.Errorf("unanswered: rationale %+v, want the latest comment (Alice's)", r)
	}
	b.Value, b.By, b.At = true, bob, at.Add(3*time.Minute)
	if r, _ := b.Rationale(); r.By != bob {
		t.Errorf("Bob's answer: rationale %+v, want his own", r)
	}
	b.By = aah.Person{ID: "U0CAROL"}
	if r, ok := b.Rationale(); ok {
		t.Errorf("Carol's answer without her comment: rationale %+v, want none", r)
	}
	b.Defaulted, b.By = true, aah.Person{}
	if r, _ := b.Rationale(); r.By != alice {
		t.Errorf("a default: rationale %+v, want the latest comment", r)
	}
	if c := b.WithComment(aah.Comment{By: alice, Text: "  "}).Comments; len(c) != 1 || c[0].By != bob {
		t.Errorf("removing Alice's comment left %+v", c)
	}
}
