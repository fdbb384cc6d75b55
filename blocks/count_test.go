package blocks_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/examples"
)

// TestCountMatchesRender proves the block counter intake uses (count.go)
// equal to rendering and counting, over every request the tests know and
// generated shapes, in the state intake checks and in every other state a
// message is rendered in. A change to Render that count.go does not follow
// fails here.
func TestCountMatchesRender(t *testing.T) {
	t.Parallel()
	reqs := countFixtures(t)
	rng := rand.New(rand.NewPCG(17, 3))
	for i := range 400 {
		reqs[fmt.Sprintf("generated-%03d", i)] = generated(t, rng, reqs)
	}
	checked := 0
	for name, req := range reqs {
		for stName, st := range countStates(req) {
			want := len(blocks.Render(req, st).Blocks)
			if got := blocks.CountBlocks(req, st); got != want {
				t.Errorf("%s in state %s: counted %d blocks, Render made %d", name, stName, got, want)
			}
			checked++
		}
		// Check reports the count of the largest state when it is too many.
		n := len(blocks.Render(req, blocks.LargestState(req)).Blocks)
		over := slices.ContainsFunc(blocks.Check(req), func(p aah.FieldError) bool {
			return strings.Contains(p.Message, fmt.Sprintf("needs %d Slack blocks but", n))
		})
		if over != (n > blocks.MaxMessageBlocks) {
			t.Errorf("%s renders %d blocks in its largest state; Check reports the limit: %v", name, n, over)
		}
	}
	t.Logf("%d requests, %d request-state pairs", len(reqs), checked)
}

// countFixtures are the requests of the repository: seed 000's example in
// each package's testdata, the examples, each decision fixture alone and
// together, and the review fixtures.
func countFixtures(t *testing.T) map[string]*aah.Request {
	reqs := map[string]*aah.Request{}
	for _, dir := range []string{"testdata", "../aah/testdata", "../webhook/testdata"} {
		raw, err := os.ReadFile(dir + "/seed000_request.json")
		if err != nil {
			t.Fatal(err)
		}
		reqs["seed000:"+dir] = parse(t, raw)
	}
	for _, ex := range []string{examples.ExampleMarketing, examples.ExampleScale} {
		raw, err := examples.Request(seedNow, examples.Options{Example: ex})
		if err != nil {
			t.Fatal(err)
		}
		reqs["example:"+ex] = parse(t, raw)
	}
	var all []string
	for name, dec := range decisionFixtures {
		reqs["type:"+name] = parse(t, wrap(dec))
		all = append(all, dec)
	}
	slices.Sort(all)
	reqs["types:all"] = parse(t, wrap(strings.Join(all, ",")))
	for name, ext := range reviewVariants() {
		reqs["review:"+name] = reviewed(t, ext)
	}
	return reqs
}

// reviewVariants are review extensions that take each branch of the
// review's blocks: action and risk present or not, each risk part alone,
// an irreversible action with and without a risk assessment, and
// response lists with and without the request-level verbs.
func reviewVariants() map[string]obj {
	out := map[string]obj{"full": scaleExt()}
	for _, level := range []string{"low", "medium", "high", "critical"} {
		for _, rev := range []string{"", "fully", "partially", "irreversible"} {
			out["risk:"+level+":"+rev] = withRisk(level, rev)
		}
	}
	noRisk := scaleExt()
	delete(noRisk, "risk_assessment")
	out["action_only"] = noRisk
	irreversible := scaleExt()
	delete(irreversible, "risk_assessment")
	action(irreversible)["reversible"] = false
	out["action_irreversible"] = irreversible
	noAction := withoutAction(scaleExt())
	out["risk_only"] = noAction
	for _, part := range []string{"risk_level", "risk_factors", "potential_consequences", "reversibility", "confidence"} {
		only := withoutAction(scaleExt())
		for k := range risk(only) {
			if k != part {
				delete(risk(only), k)
			}
		}
		out["risk_part:"+part] = only
	}
	emptyRisk := scaleExt()
	emptyRisk["risk_assessment"] = obj{}
	out["risk_empty"] = emptyRisk
	for _, responses := range [][]string{{"approve", "reject"}, {"approve"}, {"reject"}, {"approve", "reject", "defer"},
		{"approve", "reject", "escalate"}, {"approve", "change_plan", "abort"}} {
		ext := scaleExt()
		ext["responses"] = responses
		delete(ext, "editable")
		if !slices.Contains(responses, "reject") {
			delete(ext, "reject_reasons")
		}
		out["responses:"+strings.Join(responses, "+")] = ext
	}
	return out
}

// withoutAction drops ext's proposed action and the modify response that
// edits it.
func withoutAction(ext obj) obj {
	delete(ext, "proposed_action")
	delete(ext, "editable")
	ext["responses"] = []string{"approve", "reject", "defer", "escalate"}
	return ext
}

// generated is a request of random shape: 1 to 30 decisions taken from the
// fixtures (with their reviews), with or without context, blocking items,
// a deadline, escalation steps and parent ids.
func generated(t *testing.T, rng *rand.Rand, pool map[string]*aah.Request) *aah.Request {
	t.Helper()
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range pool {
			if !strings.HasPrefix(name, "generated-") && !yield(name) {
				return
			}
		}
	})
	base := *pool[names[rng.IntN(len(names))]]
	req := &base
	req.Data.Decisions = nil
	for i := range 1 + rng.IntN(30) {
		from := pool[names[rng.IntN(len(names))]].Data.Decisions
		d := from[rng.IntN(len(from))]
		d.ID = fmt.Sprintf("g%d", i)
		req.Data.Decisions = append(req.Data.Decisions, d)
	}
	req.Data.Context = pick(rng, "", "Some context & <detail>.", strings.Repeat("long ", 1000))
	req.Data.Blocking = pick(rng, nil, []aah.BlockingItem{{TaskID: "T-1", Description: "Launch"}},
		[]aah.BlockingItem{{ArtifactID: "A-1"}, {Description: "x"}})
	req.Data.Deadline = pick(rng, time.Time{}, seedNow.Add(24*time.Hour))
	req.Handoff.ResponseDeadline = pick(rng, time.Time{}, seedNow.Add(12*time.Hour))
	req.Data.Escalation = pick(rng, nil, []aah.EscalationStep{{After: time.Hour, AfterRaw: "1h", To: "U0BOSS"}},
		[]aah.EscalationStep{{After: time.Hour, To: "#ops"}, {After: 2 * time.Hour, To: "manager@example.com"}})
	req.Handoff.ParentArtifactIDs = pick(rng, nil, []string{"req-earlier"})
	return req
}

func pick[T any](rng *rand.Rand, choices ...T) T { return choices[rng.IntN(len(choices))] }

// countStates are the states a request's message is rendered in: the one
// intake checks, and open, closed, escalated and re-planned ones.
func countStates(req *aah.Request) map[string]blocks.State {
	at := seedNow.Add(time.Hour)
	answers := map[string]aah.Answer{}
	for i, d := range req.Data.Decisions {
		if i%2 == 0 && d.Type == aah.TypeApproval {
			answers[d.ID] = aah.Answer{DecisionID: d.ID, Value: true, By: aah.Person{ID: "U0ALICE"}, At: at}
		}
	}
	states := map[string]blocks.State{
		"largest":  blocks.LargestState(req),
		"zero":     {},
		"pending":  {Status: aah.StatusPending, Version: 1, ReceivedAt: seedNow},
		"mentions": {Status: aah.StatusPending, Version: 1, Mentions: []string{"<@U0ALICE>"}},
		"partial":  {Status: aah.StatusPartial, Version: 2, Answers: answers, Mentions: []string{"<@U0ALICE>"}},
		"escalated": {Status: aah.StatusEscalated, Version: 3, EscalatedTo: []string{"<@U0BOSS>"},
			Reassignments: []aah.Reassignment{{To: "U0BOSS"}}, FollowUpOf: &blocks.FollowUp{ID: "req-earlier", Title: "Earlier"}},
		"resolved":  {Status: aah.StatusResolved, Version: 4, Answers: answers, ClosedAt: at, ResolvedBy: aah.Person{ID: "U0ALICE"}},
		"expired":   {Status: aah.StatusExpired, Version: 4, ClosedAt: at, Mentions: []string{"<@U0ALICE>"}},
		"withdrawn": {Status: aah.StatusWithdrawn, Version: 4, ClosedAt: at},
		"deferred": {Status: aah.StatusResolved, Version: 5, ClosedAt: at,
			Directive: &aah.Directive{Verb: aah.VerbDefer, Text: "later", By: aah.Person{ID: "U0BOB"}, At: at}},
	}
	return states
}
