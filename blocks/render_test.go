package blocks_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// seedNow is the moment of seed 000's example (its deadline is the next day).
var seedNow = time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)

// decisionFixtures holds one request per decision type, exercising that
// type's options, constraints and default.
var decisionFixtures = map[string]string{
	"approval": `{"id":"ship","type":"approval","prompt":"Ship release 2.4 to production?","description":"Changelog: 14 fixes, 2 features. Rollback plan: redeploy 2.3.","required":true,"default":false}`,
	"choice": `{"id":"region","type":"choice","prompt":"Which region first?","required":true,"default":"eu",
		"options":[{"value":"us","label":"United States","description":"Largest audience"},{"value":"eu","label":"Europe","description":"GDPR review done"},{"value":"apac","label":"Asia-Pacific"}]}`,
	"multi_choice": `{"id":"channels","type":"multi_choice","prompt":"Which channels get the announcement?","required":false,"default":["email","blog"],
		"constraints":{"min":1,"max":2},
		"options":[{"value":"email","label":"Email newsletter"},{"value":"blog","label":"Company blog"},{"value":"social","label":"Social media","description":"Twitter, LinkedIn"}]}`,
	"text": `{"id":"tagline","type":"text","prompt":"Tagline for the launch page?","description":"Keep it short & <punchy>.","required":true,"default":"Plan less, celebrate more",
		"constraints":{"min":5,"max":60,"pattern":"^[A-Z]"}}`,
	"number": `{"id":"budget","type":"number","prompt":"Monthly ad budget (USD)?","required":true,"default":5000,"constraints":{"min":1000,"max":20000}}`,
	"date":   `{"id":"launch","type":"date","prompt":"Launch date?","required":false,"default":"2026-03-02"}`,
}

func wrap(decisions string) []byte {
	return []byte(fmt.Sprintf(`{"aah_version":"0.1",
		"artifact":{"id":"req-fixture","type":"decision/request","title":"Fixture request","created_at":"2026-02-16T09:00:00Z"},
		"source":{"agent_id":"release-bot","task_id":"T-1"},
		"content":{"media_type":"application/vnd.aah.decision-request+json","body":{"schema":"aah:decision/request@1.0",
		"data":{"decisions":[%s],"deadline":"2026-02-20T12:00:00Z"}}},
		"handoff":{"priority":"normal"}}`, decisions))
}

func parse(t *testing.T, raw []byte) *aah.Request {
	t.Helper()
	req, err := aah.Parse(raw, aah.ParseOptions{Now: seedNow})
	if err != nil {
		t.Fatalf("fixture does not parse: %v", err)
	}
	if probs := blocks.Check(req); len(probs) > 0 {
		t.Fatalf("fixture fails the Slack checks: %v", probs)
	}
	return req
}

// said is one person's comment as an answer's comment list.
func said(by string, at time.Time, text string) []aah.Comment {
	return []aah.Comment{{By: aah.Person{ID: by}, At: at, Text: text}}
}

func pending() blocks.State {
	return blocks.State{Status: aah.StatusPending, Version: 1, ReceivedAt: seedNow}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	seedRaw, err := os.ReadFile("testdata/seed000_request.json")
	if err != nil {
		t.Fatal(err)
	}
	seed := parse(t, seedRaw)
	answeredAt := seedNow.Add(4*time.Hour + 30*time.Minute)
	answers := map[string]aah.Answer{
		"d1": {Value: true, Comments: said("U0ALICE", answeredAt, "Good segmentation"), By: aah.Person{ID: "U0ALICE"}, At: answeredAt},
		"d2": {Value: true, By: aah.Person{ID: "U0ALICE"}, At: answeredAt},
		"d3": {Value: "next_week", Comments: said("U0BOB", answeredAt, "Align with newsletter schedule"), By: aah.Person{ID: "U0BOB"}, At: answeredAt},
		"d4": {Value: false, Comments: said("U0BOB", answeredAt, "Require CC to reduce spam signups"), By: aah.Person{ID: "U0BOB"}, At: answeredAt},
	}
	cases := map[string]struct {
		req *aah.Request
		st  blocks.State
	}{
		"seed000.pending": {seed, blocks.State{Status: aah.StatusPending, Version: 1, ReceivedAt: seedNow,
			Mentions: []string{"<@U0ALICE>", "<@U0BOB>"}}},
		"seed000.partial":   {seed, blocks.State{Status: aah.StatusPartial, Version: 3, ReceivedAt: seedNow, Answers: map[string]aah.Answer{"d1": answers["d1"], "d3": answers["d3"]}}},
		"seed000.resolved":  {seed, blocks.State{Status: aah.StatusResolved, Version: 6, ReceivedAt: seedNow, Answers: answers, ClosedAt: answeredAt}},
		"seed000.withdrawn": {seed, blocks.State{Status: aah.StatusWithdrawn, Version: 2, ReceivedAt: seedNow, ClosedAt: seedNow.Add(time.Hour)}},
	}
	// Resolved at the deadline by on_deadline: reject; d3 took its default.
	timedOut := *seed
	timedOut.OnDeadline = aah.DeadlineReject
	cases["seed000.timed_out"] = struct {
		req *aah.Request
		st  blocks.State
	}{&timedOut, blocks.State{Status: aah.StatusResolved, Version: 4, ReceivedAt: seedNow, ClosedAt: answeredAt,
		Answers: map[string]aah.Answer{
			"d1": answers["d1"],
			"d2": {DecisionID: "d2", Value: false, TimedOut: true},
			"d3": {DecisionID: "d3", Value: "next_week", Defaulted: true},
			"d4": {DecisionID: "d4", Value: false, TimedOut: true},
		}}}
	// Bob submitted with d3's preselected default.
	cases["seed000.default_accepted"] = struct {
		req *aah.Request
		st  blocks.State
	}{seed, blocks.State{Status: aah.StatusResolved, Version: 5, ReceivedAt: seedNow, ClosedAt: answeredAt,
		ResolvedBy: aah.Person{ID: "U0BOB"}, Answers: map[string]aah.Answer{
			"d1": answers["d1"], "d2": answers["d2"], "d4": answers["d4"],
			"d3": {DecisionID: "d3", Value: "next_week", By: aah.Person{ID: "U0BOB"}, At: answeredAt, DefaultAccepted: true},
		}}}
	for name, dec := range decisionFixtures {
		cases["type_"+name+".pending"] = struct {
			req *aah.Request
			st  blocks.State
		}{parse(t, wrap(dec)), pending()}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := blocks.Render(c.req, c.st)
			golden(t, name, map[string]any{"text": msg.Text, "blocks": msg.Blocks})
			checkSlackLimits(t, msg)
		})
	}
}

// TestClosedMessagesHaveNoControls: once a request leaves the open states no
// stale button may stay clickable.
func TestClosedMessagesHaveNoControls(t *testing.T) {
	t.Parallel()
	req := parse(t, wrap(decisionFixtures["approval"]+","+decisionFixtures["choice"]))
	for _, st := range []aah.Status{aah.StatusResolved, aah.StatusExpired, aah.StatusWithdrawn} {
		msg := blocks.Render(req, blocks.State{Status: st, Version: 9})
		raw, _ := json.Marshal(msg.Blocks)
		if strings.Contains(string(raw), `"type":"actions"`) {
			t.Errorf("%s message still has an actions block: %s", st, raw)
		}
	}
	open := blocks.Render(req, pending())
	raw, _ := json.Marshal(open.Blocks)
	if !strings.Contains(string(raw), `"type":"actions"`) {
		t.Errorf("pending message has no controls: %s", raw)
	}
}

// checkSlackLimits runs the rendered blocks through the Slack emulator's
// independent Block Kit validator, so a renderer bug that real Slack would
// answer with invalid_blocks fails here.
func checkSlackLimits(t *testing.T, msg blocks.Message) {
	t.Helper()
	raw, err := json.Marshal(msg.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range slackemu.ValidateBlocks(slackemu.SurfaceMessage, raw) {
		t.Errorf("Slack would reject this message: %v", e)
	}
}

// The longest prompt Slack can take, plus a comment of newlines and a long
// answer, still fits a section: the message must never become one Slack
// refuses (a refused chat.update would freeze it with stale buttons).
func TestWorstCaseSectionsFitSlack(t *testing.T) {
	t.Parallel()
	prompt := strings.Repeat("Is this fine? ", 142) // ~1990 characters
	req := parse(t, wrap(`{"id":"big","type":"text","prompt":"`+prompt+`","description":"`+strings.Repeat("d ", 2000)+`","required":true}`))
	comment := strings.Repeat("\n", 150) + strings.Repeat("why ", 200)
	for _, st := range []aah.Status{aah.StatusPartial, aah.StatusResolved} {
		msg := blocks.Render(req, blocks.State{Status: st, Version: 2, Answers: map[string]aah.Answer{
			"big": {DecisionID: "big", Value: strings.Repeat("answer ", 400),
				Comments: append(said("U0BOB", seedNow, comment), said("U0CAROL", seedNow, comment+"&<>")...),
				By:       aah.Person{ID: "U0ALICE"}}}})
		checkSlackLimits(t, msg)
	}
	// A prompt that only grows past the limit once escaped is refused at intake.
	amp := parse(t, wrap(`{"id":"a","type":"approval","prompt":"ok?","required":true}`))
	amp.Data.Decisions[0].Prompt = strings.Repeat("&", 500)
	if probs := blocks.Check(amp); len(probs) != 1 || !strings.Contains(probs[0].Field, "prompt") {
		t.Errorf("Check of an &-heavy prompt = %v", probs)
	}
}

// golden compares v, as indented JSON, with testdata/golden/<name>.json;
// -update rewrites the file instead.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test ./blocks -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; inspect with -update and git diff.\ngot:\n%s", path, got)
	}
}
