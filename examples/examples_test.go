package examples_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/examples"
)

// The example as the recipes submit it is valid in any year: its deadlines
// lie ahead of whenever it is sent, 31h after created_at as in the seed,
// while the file itself stays seed 000's example with fixed dates (which a
// year from now would be refused).
func TestRequestIsValidInAnyYear(t *testing.T) {
	t.Parallel()
	for _, now := range []time.Time{
		time.Now(),
		time.Date(2031, 7, 4, 12, 30, 15, 500, time.FixedZone("X", 3600)),
		time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		raw, err := examples.Request(now, examples.Options{})
		if err != nil {
			t.Fatal(err)
		}
		req, err := aah.Parse(raw, aah.ParseOptions{Now: now})
		if err != nil {
			t.Fatalf("at %v the example is refused: %v", now, err)
		}
		var doc struct {
			Artifact struct {
				ID        string    `json:"id"`
				CreatedAt time.Time `json:"created_at"`
			} `json:"artifact"`
			Handoff struct {
				ResponseDeadline time.Time `json:"response_deadline"`
				ResponseURL      *string   `json:"response_url"`
			} `json:"handoff"`
			Content struct {
				Body struct {
					Data struct {
						Deadline time.Time `json:"deadline"`
					} `json:"data"`
				} `json:"body"`
			} `json:"content"`
			Extensions any `json:"extensions"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if want := now.UTC().Truncate(time.Second); !doc.Artifact.CreatedAt.Equal(want) {
			t.Errorf("created_at = %v, want %v", doc.Artifact.CreatedAt, want)
		}
		for name, d := range map[string]time.Time{"deadline": doc.Content.Body.Data.Deadline, "response_deadline": doc.Handoff.ResponseDeadline} {
			if got := d.Sub(doc.Artifact.CreatedAt); got != 31*time.Hour {
				t.Errorf("%s is %v after created_at, want the seed's 31h", name, got)
			}
		}
		if doc.Artifact.ID != "aah_decision_abc123" || doc.Handoff.ResponseURL != nil || doc.Extensions != nil || req.Artifact.ID != doc.Artifact.ID {
			t.Errorf("without options the example changed beyond its dates: id %q, response_url %v, extensions %v",
				doc.Artifact.ID, doc.Handoff.ResponseURL, doc.Extensions)
		}
	}
	if !bytes.Contains(examples.MarketingStrategy, []byte(`"created_at": "2027-02-16T10:00:00Z"`)) {
		t.Error("examples/marketing-strategy.json is no longer the example with fixed dates the README describes")
	}
}

// The recipes' flags set the id, the response URL and the README's sign-off
// rules, and the result is still a valid request.
func TestRecipeOptions(t *testing.T) {
	t.Parallel()
	o, err := examples.ParseArgs(strings.Fields("-id try-signoff -response-url http://localhost:8080/sandbox/inbox -signoff"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != "try-signoff" || o.ResponseURL != "http://localhost:8080/sandbox/inbox" || !o.SignOff || o.BotURL != "http://localhost:8080" {
		t.Fatalf("ParseArgs = %+v", o)
	}
	now := time.Now()
	raw, err := examples.Request(now, o)
	if err != nil {
		t.Fatal(err)
	}
	req, err := aah.Parse(raw, aah.ParseOptions{Now: now, AllowInsecureCallbacks: true})
	if err != nil {
		t.Fatalf("the sign-off example is refused: %v", err)
	}
	if req.Artifact.ID != "try-signoff" || req.Handoff.ResponseURL != o.ResponseURL {
		t.Errorf("id %q, response_url %q", req.Artifact.ID, req.Handoff.ResponseURL)
	}
	for _, want := range []string{`"quorum": 2`, `"require_reason": true`, `"role": "legal"`, `"requested_by": "requester@example.com"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the sign-off example lacks %s:\n%s", want, raw)
		}
	}
	o.EventsURL = "http://localhost:9000/events"
	if raw, err = examples.Request(now, o); err != nil {
		t.Fatal(err)
	}
	if req, err = aah.Parse(raw, aah.ParseOptions{Now: now, AllowInsecureCallbacks: true}); err != nil {
		t.Fatalf("the events example is refused: %v", err)
	}
	if req.Events == nil || req.Events.URL != o.EventsURL || req.Slack.Quorum != 2 {
		t.Errorf("events %+v, quorum %d: want the subscription beside the sign-off rules", req.Events, req.Slack.Quorum)
	}
	if _, err := examples.ParseArgs([]string{"stray"}, &bytes.Buffer{}); err == nil {
		t.Error("a stray argument was accepted")
	}
}

// The review-extension example parses in any year too, with its date
// bounds moved with the rest, and carries the reviewer verbs the README's
// walkthrough clicks.
func TestScaleExampleIsValidInAnyYear(t *testing.T) {
	t.Parallel()
	for _, now := range []time.Time{time.Now(), time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)} {
		raw, err := examples.Request(now, examples.Options{Example: examples.ExampleScale})
		if err != nil {
			t.Fatal(err)
		}
		req, err := aah.Parse(raw, aah.ParseOptions{Now: now})
		if err != nil {
			t.Fatalf("at %v the scale example is refused: %v", now, err)
		}
		scale, _ := req.Decision("scale")
		migrate, _ := req.Decision("migrate")
		window, _ := req.Decision("window")
		if !scale.Accepts(aah.VerbModify) || !req.Accepts(aah.VerbDefer) || !req.Accepts(aah.VerbAbort) || !migrate.Irreversible() {
			t.Errorf("the scale example lost its verbs: %+v %+v", scale.Review, migrate.Review)
		}
		if window.Review == nil || !window.Review.DateTime {
			t.Errorf("the window decision is no longer a date-time")
		}
		created := now.UTC().Truncate(time.Second)
		min, err := time.Parse(time.RFC3339, window.Constraints.MinDate)
		if err != nil || min.Sub(created) != 8*time.Hour {
			t.Errorf("constraints.min = %q, want 8h after created_at %v", window.Constraints.MinDate, created)
		}
	}
}
