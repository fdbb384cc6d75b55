package blocks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

// The review extension goes through aah's parser: each fixture is a real
// request with extensions.decisions, built as JSON.

type obj = map[string]any

// scaleExt is a full review: a reversible, high-risk tool call whose
// replicas may be modified, with reasons to reject and every verb.
func scaleExt() obj {
	return obj{
		"proposed_action": obj{"action_type": "tool_call", "tool_name": "scale_service",
			// Raw, so the parameters keep the order the agent wrote them in.
			"parameters":       json.RawMessage(`{"service":"api","replicas":6,"regions":["eu-west-1","us-east-1"],"dry_run":false}`),
			"expected_outcome": "p99 latency back under 200 ms within 10 minutes",
			"reversible":       true, "estimated_cost": 12.5, "cost_unit": "USD"},
		"risk_assessment": obj{"risk_level": "high", "risk_factors": []string{"Peak traffic", "New autoscaler"},
			"potential_consequences": []string{"Higher bill", "Brief 502s while pods start"}, "reversibility": "partially",
			"confidence": 0.8},
		"responses":      []string{"approve", "reject", "modify", "defer", "change_plan", "escalate", "abort"},
		"editable":       obj{"replicas": obj{"type": "integer", "minimum": 1, "maximum": 10}},
		"reject_reasons": []string{"Too expensive", "Wrong service"},
		"action_key":     "scale_service:api",
	}
}

func action(ext obj) obj { return ext["proposed_action"].(obj) }
func risk(ext obj) obj   { return ext["risk_assessment"].(obj) }

func withRisk(level, reversibility string) obj {
	ext := scaleExt()
	risk(ext)["risk_level"] = level
	if reversibility == "" {
		delete(risk(ext), "reversibility")
	} else {
		risk(ext)["reversibility"] = reversibility
	}
	return ext
}

// wrapExt is wrap with extensions.decisions.
func wrapExt(t *testing.T, decisions string, exts obj) *aah.Request {
	t.Helper()
	raw, err := json.Marshal(obj{"decisions": exts})
	if err != nil {
		t.Fatal(err)
	}
	doc := wrap(decisions)
	doc = append(doc[:len(doc)-1], []byte(`,"extensions":`+string(raw)+`}`)...)
	return parse(t, doc)
}

// reviewed is the approval fixture with ext as its decision's review.
func reviewed(t *testing.T, ext obj) *aah.Request {
	t.Helper()
	return wrapExt(t, decisionFixtures["approval"], obj{"ship": ext})
}

func TestReviewGolden(t *testing.T) {
	t.Parallel()
	at := seedNow.Add(2 * time.Hour)
	alice, bob := aah.Person{ID: "U0ALICE"}, aah.Person{ID: "U0BOB"}
	grantMax := time.Hour
	open := blocks.State{Status: aah.StatusPending, Version: 1, ReceivedAt: seedNow, GrantMax: grantMax,
		Mentions: []string{"<@U0ALICE>"}}
	closed := func(answers map[string]aah.Answer) blocks.State {
		return blocks.State{Status: aah.StatusResolved, Version: 4, ReceivedAt: seedNow, ClosedAt: at, ResolvedBy: alice,
			Answers: answers}
	}
	irreversible := scaleExt()
	action(irreversible)["reversible"] = false
	risk(irreversible)["reversibility"] = "irreversible"
	riskOnly := obj{"risk_assessment": obj{"risk_level": "medium", "reversibility": "irreversible"}}
	modified := closed(map[string]aah.Answer{"ship": {DecisionID: "ship", Value: true, Verb: aah.VerbModify, By: alice, At: at,
		Parameters: map[string]any{"service": "api", "replicas": 4.0, "regions": []any{"eu-west-1"}, "dry_run": false}}})
	rejected := closed(map[string]aah.Answer{"ship": {DecisionID: "ship", Value: false, By: bob, At: at,
		RejectReason: "Too expensive", Comments: said("U0BOB", at, "Try 4 replicas first")}})
	granted := closed(map[string]aah.Answer{"ship": {DecisionID: "ship", Value: true, At: at, Grant: &aah.GrantRef{
		ID: "g-1", ActionKey: "scale_service:api", Agent: "release-bot", By: alice, GrantedAt: seedNow,
		ExpiresAt: seedNow.Add(time.Hour), FromRequest: "req-earlier"}}})
	granted.ResolvedBy = aah.Person{}
	directive := func(v aah.Verb, text string) blocks.State {
		st := closed(map[string]aah.Answer{})
		st.Directive = &aah.Directive{Verb: v, Text: text, By: bob, At: at}
		st.ResolvedBy = bob
		return st
	}
	escalated := open
	escalated.Status = aah.StatusEscalated
	escalated.EscalatedTo = []string{"<@U0CAROL>"}
	escalated.Reassignments = []aah.Reassignment{
		{By: alice, To: "U0CAROL", At: at, Note: "Carol owns the API budget"},
		{By: alice, To: "S0SRE", At: at.Add(time.Minute)},
		{By: bob, To: "C0OPS", At: at.Add(2 * time.Minute), Note: "ops & <friends>"},
		{By: bob, To: "carol@example.com", At: at.Add(3 * time.Minute)},
	}
	followUp := open
	followUp.FollowUpOf = &blocks.FollowUp{ID: "req-earlier", Title: "Scale the API | first try",
		Permalink: "https://example.slack.com/archives/C0APPROVALS/p100",
		Directive: &aah.Directive{Verb: aah.VerbDefer, Text: "Try a smaller batch first", By: bob, At: seedNow}}
	followUpNoLink := open
	followUpNoLink.FollowUpOf = &blocks.FollowUp{ID: "req-earlier", Title: "Scale the API"}

	batch := wrapExt(t, decisionFixtures["approval"]+`,{"id":"drop","type":"approval","prompt":"Drop the old table?","required":true}`,
		obj{"drop": obj{"proposed_action": obj{"tool_name": "drop_table", "parameters": obj{"table": "events_2019"}, "reversible": false}}})

	when := wrapExt(t, `{"id":"launch","type":"date","prompt":"When do we launch?","required":true,"default":"2026-03-02T14:30:00Z",
		"constraints":{"min":"2026-03-01","max":"2026-03-31T18:00:00Z"}}`, obj{"launch": obj{"precision": "datetime", "responses": []string{"defer"}}})
	whenAnswered := blocks.State{Status: aah.StatusPending, Version: 2, ReceivedAt: seedNow, Answers: map[string]aah.Answer{
		"launch": {DecisionID: "launch", Value: "2026-03-03T09:00:00Z", By: alice, At: at}}}
	dayAfter := parse(t, wrap(`{"id":"launch","type":"date","prompt":"Launch day?","required":true,"constraints":{"min":"2026-03-01"}}`))
	pickTwo := parse(t, wrap(`{"id":"ch","type":"multi_choice","prompt":"Which two?","required":true,"constraints":{"min":2,"max":2},
		"options":[{"value":"a","label":"A"},{"value":"b","label":"B"},{"value":"c","label":"C"}]}`))

	cases := map[string]struct {
		req *aah.Request
		st  blocks.State
	}{
		"review.full.pending":           {reviewed(t, scaleExt()), open},
		"review.risk_low.pending":       {reviewed(t, withRisk(aah.RiskLow, aah.ReversibleFully)), open},
		"review.risk_medium.pending":    {reviewed(t, withRisk(aah.RiskMedium, "")), open},
		"review.risk_critical.pending":  {reviewed(t, withRisk(aah.RiskCritical, aah.ReversiblePartially)), open},
		"review.irreversible.pending":   {reviewed(t, irreversible), open},
		"review.risk_only.pending":      {reviewed(t, riskOnly), open},
		"review.batch.pending":          {batch, open},
		"review.modified.resolved":      {reviewed(t, scaleExt()), modified},
		"review.reject_reason.resolved": {reviewed(t, scaleExt()), rejected},
		"review.grant.resolved":         {reviewed(t, scaleExt()), granted},
		"directive.deferred":            {reviewed(t, scaleExt()), directive(aah.VerbDefer, "Try a smaller batch first")},
		"directive.change_plan":         {reviewed(t, scaleExt()), directive(aah.VerbChangePlan, "Use the blue/green pool")},
		"directive.aborted":             {reviewed(t, scaleExt()), directive(aah.VerbAbort, "Incident in progress, stop everything")},
		"reassigned.escalated":          {reviewed(t, scaleExt()), escalated},
		"followup.pending":              {reviewed(t, scaleExt()), followUp},
		"followup.no_link":              {parse(t, wrap(decisionFixtures["approval"])), followUpNoLink},
		"type_datetime.pending":         {when, pending()},
		"type_datetime.answered":        {when, whenAnswered},
		"bounds.date_min.pending":       {dayAfter, pending()},
		"bounds.pick_exactly.pending":   {pickTwo, pending()},
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

// reviewText renders a request as text, the way a reader sees it.
func reviewText(t *testing.T, msg blocks.Message) string {
	t.Helper()
	checkSlackLimits(t, msg)
	return slackemu.RenderText([]byte(mustJSON(t, msg.Blocks)))
}

// buttons lists the action ids of the decision's controls and of the
// request's controls, with the confirm dialog (if any) of each.
func controls(msg blocks.Message) (ids []string, confirms map[string]*slack.ConfirmationBlockObject, menu []string) {
	confirms = map[string]*slack.ConfirmationBlockObject{}
	for _, b := range msg.Blocks {
		ab, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		for _, el := range ab.Elements.ElementSet {
			switch e := el.(type) {
			case *slack.ButtonBlockElement:
				ids = append(ids, e.ActionID)
				if e.Confirm != nil {
					confirms[e.ActionID] = e.Confirm
				}
			case *slack.OverflowBlockElement:
				ids = append(ids, e.ActionID)
				for _, o := range e.Options {
					menu = append(menu, o.Value)
				}
			case *slack.DateTimePickerBlockElement:
				ids = append(ids, "datetimepicker:"+e.ActionID)
			case *slack.DatePickerBlockElement:
				ids = append(ids, "datepicker:"+e.ActionID)
			}
		}
	}
	return ids, confirms, menu
}

// Each control appears exactly when the decision's review allows it.
func TestReviewControls(t *testing.T) {
	t.Parallel()
	st := pending()
	st.GrantMax = time.Hour
	has := func(ids []string, id string) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}
	t.Run("full review", func(t *testing.T) {
		ids, confirms, menu := controls(blocks.Render(reviewed(t, scaleExt()), st))
		for _, want := range []string{blocks.ActionApprove, blocks.ActionModify, blocks.ActionApproveSimilar, blocks.ActionRejectReason, blocks.ActionVerbs} {
			if !has(ids, want) {
				t.Errorf("controls %v lack %s", ids, want)
			}
		}
		if has(ids, blocks.ActionReject) {
			t.Errorf("with reject_reasons, Reject must open the reason modal: %v", ids)
		}
		if len(confirms) != 0 {
			t.Errorf("a reversible high-risk action asks to confirm: %v", confirms)
		}
		if strings.Join(menu, ",") != "defer,change_plan,escalate,abort" {
			t.Errorf("request menu = %v", menu)
		}
	})
	t.Run("no extension", func(t *testing.T) {
		ids, confirms, menu := controls(blocks.Render(parse(t, wrap(decisionFixtures["approval"])), st))
		if strings.Join(ids, ",") != "approve,reject,comment" || len(confirms) != 0 || menu != nil {
			t.Errorf("a plain approval has %v (confirms %v, menu %v), want approve, reject, comment", ids, confirms, menu)
		}
	})
	for name, rv := range map[string]obj{
		"irreversible action": func() obj { r := scaleExt(); action(r)["reversible"] = false; return r }(),
		"irreversible risk":   withRisk(aah.RiskLow, aah.Irreversible),
		"critical risk":       withRisk(aah.RiskCritical, aah.ReversibleFully),
	} {
		t.Run(name, func(t *testing.T) {
			ids, confirms, _ := controls(blocks.Render(reviewed(t, rv), st))
			c := confirms[blocks.ActionApprove]
			if c == nil || c.Style != slack.StyleDanger || !strings.Contains(c.Text.Text, "scale_service") {
				t.Errorf("Approve's confirm = %+v, want a danger dialog naming the tool", c)
			}
			if has(ids, blocks.ActionApproveSimilar) {
				t.Errorf("%s: a standing approval is offered: %v", name, ids)
			}
		})
	}
	t.Run("approve similar needs a limit, a key and no gate", func(t *testing.T) {
		noLimit := pending()
		if ids, _, _ := controls(blocks.Render(reviewed(t, scaleExt()), noLimit)); has(ids, blocks.ActionApproveSimilar) {
			t.Errorf("STANDING_APPROVAL_MAX=0 still offers it: %v", ids)
		}
		noKey := scaleExt()
		delete(noKey, "action_key")
		delete(noKey, "proposed_action")
		delete(noKey, "editable")
		noKey["responses"] = []string{"approve", "reject"}
		if ids, _, _ := controls(blocks.Render(reviewed(t, noKey), st)); has(ids, blocks.ActionApproveSimilar) {
			t.Errorf("a decision without an action key offers it: %v", ids)
		}
		toolOnly := scaleExt()
		delete(toolOnly, "action_key")
		if ids, _, _ := controls(blocks.Render(reviewed(t, toolOnly), st)); !has(ids, blocks.ActionApproveSimilar) {
			t.Errorf("the tool name is the default action key, yet it is not offered: %v", ids)
		}
		gated := reviewed(t, scaleExt())
		gated.Slack.Quorum = 2
		ids, _, _ := controls(blocks.Render(gated, st))
		if has(ids, blocks.ActionApproveSimilar) || has(ids, blocks.ActionModify) {
			t.Errorf("a decision needing two sign-offs offers a grant or modify: %v", ids)
		}
	})
	t.Run("responses narrow the verbs", func(t *testing.T) {
		rv := scaleExt()
		rv["responses"] = []string{"approve", "reject", "abort"}
		delete(rv, "editable")
		ids, _, menu := controls(blocks.Render(reviewed(t, rv), st))
		if has(ids, blocks.ActionModify) || strings.Join(menu, ",") != "abort" {
			t.Errorf("controls %v, menu %v; want no Modify and only abort", ids, menu)
		}
	})
	t.Run("approve all confirms an irreversible action", func(t *testing.T) {
		decisions := decisionFixtures["approval"] + `,{"id":"two","type":"approval","prompt":"Second?","required":true}`
		_, plain, _ := controls(blocks.Render(parse(t, wrap(decisions)), st))
		if plain[blocks.ActionApproveAll].Style != "" {
			t.Errorf("a plain Approve all became a danger dialog: %+v", plain[blocks.ActionApproveAll])
		}
		_, risky, _ := controls(blocks.Render(wrapExt(t, decisions, obj{"two": withRisk(aah.RiskCritical, "")}), st))
		if c := risky[blocks.ActionApproveAll]; c == nil || c.Style != slack.StyleDanger || !strings.Contains(c.Text.Text, "critical") {
			t.Errorf("Approve all over a critical action = %+v", c)
		}
	})
	t.Run("datetime precision", func(t *testing.T) {
		req := parse(t, wrap(decisionFixtures["date"]))
		ids, _, _ := controls(blocks.Render(req, st))
		if !has(ids, "datepicker:"+blocks.ActionDate) {
			t.Errorf("a date decision has %v", ids)
		}
		msg := blocks.Render(wrapExt(t, decisionFixtures["date"], obj{"launch": obj{"precision": "datetime"}}), st)
		ids, _, _ = controls(msg)
		if !has(ids, "datetimepicker:"+blocks.ActionDate) {
			t.Errorf("a datetime decision has %v", ids)
		}
		raw := mustJSON(t, msg.Blocks)
		// The default 2026-03-02 is midnight UTC.
		if !strings.Contains(raw, `"initial_date_time":1772409600`) {
			t.Errorf("the picker does not start at the default: %s", raw)
		}
	})
}

// The list of open requests offers the same quick buttons: a confirm on an
// irreversible Approve, the reason modal when the agent offers reasons.
func TestQuickButtonsFollowTheReview(t *testing.T) {
	t.Parallel()
	ext := scaleExt()
	action(ext)["reversible"] = false
	req := reviewed(t, ext)
	msg := blocks.List(blocks.Listing{Heading: "Waiting", Now: seedNow, Items: []blocks.ListItem{
		{ID: "req-1", Version: 1, Agent: "release-bot", Request: req, Status: aah.StatusPending, ReceivedAt: seedNow}}})
	ids, confirms, _ := controls(msg)
	if strings.Join(ids, ",") != "approve,reject_reason" || confirms[blocks.ActionApprove] == nil {
		t.Errorf("quick buttons %v, confirms %v", ids, confirms)
	}
}

// The most the parser lets through stays within Slack's limits: as many
// parameters as allowed with the longest names, or one huge value, the
// longest outcome and as many long risk factors as allowed. What the
// message had to shorten is whole in View details.
func TestLongParametersFitAndShowInDetails(t *testing.T) {
	t.Parallel()
	many := obj{}
	for i := range aah.MaxParameters {
		many[fmt.Sprintf("%03d_%s", i, strings.Repeat("p", 76))] = i
	}
	huge := obj{"query": strings.Repeat("value & <more> ", 150)}
	for name, params := range map[string]obj{"many": many, "huge": huge} {
		ext := scaleExt()
		action(ext)["parameters"] = params
		action(ext)["expected_outcome"] = strings.Repeat("outcome ", 250) // what the 8 KB of proposed_action leaves
		ext["editable"] = obj{}
		ext["responses"] = []string{"approve", "reject"}
		factors := make([]string, aah.MaxRiskItems)
		for i := range factors {
			factors[i] = strings.Repeat("factor ", aah.MaxTextLength/7)
		}
		risk(ext)["risk_factors"] = factors
		risk(ext)["potential_consequences"] = factors
		req := reviewed(t, ext)
		msg := blocks.Render(req, pending())
		text := reviewText(t, msg)
		ids, _, _ := controls(msg)
		if !strings.Contains(strings.Join(ids, ","), blocks.ActionDetails) {
			t.Errorf("%s: no View details for the shortened parameters: %v", name, ids)
		}
		view := blocks.DetailsModal(req, req.Data.Decisions[0], blocks.ModalRef{RequestID: "req-fixture", DecisionID: "ship"})
		raw := mustJSON(t, view)
		for _, e := range slackemu.ValidateView([]byte(raw)) {
			t.Errorf("%s: Slack would reject the details modal: %v", name, e)
		}
		if !strings.Contains(raw, "*Expected outcome*") || strings.Count(raw, "factor factor") < 2*aah.MaxRiskItems {
			t.Errorf("%s: the details modal lacks the outcome or some risk items", name)
		}
		switch name {
		case "many":
			if !strings.Contains(text, "more parameters (see View details)") {
				t.Errorf("the parameters that did not fit are not counted:\n%s", text)
			}
			if !strings.Contains(raw, "049_ppp") {
				t.Errorf("the details modal lacks the last parameter")
			}
		case "huge":
			if n := strings.Count(raw, "value \\u0026amp; \\u0026lt;more\\u0026gt;"); n != 150 {
				t.Errorf("the details modal holds %d of the value's 150 pieces", n)
			}
		}
	}
}

// A request with review blocks is refused at intake when it would need more
// blocks than a message holds, counting the review blocks.
func TestCheckCountsReviewBlocks(t *testing.T) {
	t.Parallel()
	var ds []string
	for i := range 14 {
		ds = append(ds, `{"id":"d`+string(rune('a'+i))+`","type":"approval","prompt":"Ok?","required":true}`)
	}
	req := parse(t, wrap(strings.Join(ds, ",")))
	req.Handoff.ParentArtifactIDs = []string{"req-earlier"}
	for i := range req.Data.Decisions {
		req.Data.Decisions[i].Review = reviewed(t, scaleExt()).Data.Decisions[0].Review
	}
	probs := blocks.Check(req)
	if len(probs) != 1 || !strings.Contains(probs[0].Message, "at most 9 decisions fit") {
		t.Fatalf("Check = %v, want the block limit with room for 9 decisions", probs)
	}
	req.Data.Decisions = req.Data.Decisions[:9]
	if probs := blocks.Check(req); len(probs) != 0 {
		t.Fatalf("9 reviewed decisions are refused: %v", probs)
	}
	st := pending()
	st.FollowUpOf = &blocks.FollowUp{ID: "x", Title: "t"}
	st.Reassignments = []aah.Reassignment{{To: "U1"}}
	st.Status = aah.StatusEscalated
	if n := len(blocks.Render(req, st).Blocks); n > blocks.MaxMessageBlocks {
		t.Fatalf("an accepted request renders %d blocks", n)
	}
}

// A closed request's outcome says what the reviewer did, in the message,
// its notification text and the Home tab's list of answered requests.
func TestDirectiveShowsEverywhere(t *testing.T) {
	t.Parallel()
	req := reviewed(t, scaleExt())
	bob := aah.Person{ID: "U0BOB"}
	for verb, want := range map[aah.Verb][2]string{
		aah.VerbDefer:      {"Deferred by @U0BOB", "guidance: Try 4 & <then> 6"},
		aah.VerbChangePlan: {"Change of plan requested by @U0BOB", "Try 4 & <then> 6"},
		aah.VerbAbort:      {"Aborted by @U0BOB", "Try 4 & <then> 6"},
	} {
		dir := &aah.Directive{Verb: verb, Text: "Try 4 & <then> 6", By: bob, At: seedNow}
		msg := blocks.Render(req, blocks.State{Status: aah.StatusResolved, Version: 3, ReceivedAt: seedNow, ClosedAt: seedNow,
			ResolvedBy: bob, Directive: dir})
		text := strings.ReplaceAll(reviewText(t, msg), "*", "")
		if !strings.Contains(text, want[0]) || !strings.Contains(text, want[1]) || strings.Contains(text, "Resolved by") {
			t.Errorf("%s: message lacks %q / %q:\n%s", verb, want[0], want[1], text)
		}
		if !strings.Contains(msg.Text, strings.Replace(want[0], "@U0BOB", "<@U0BOB>", 1)) || !strings.Contains(msg.Text, "&amp; &lt;then&gt;") {
			t.Errorf("%s: fallback text %q", verb, msg.Text)
		}
		home := blocks.HomeView(blocks.Home{Now: seedNow, Answered: []blocks.ListItem{{ID: "req-1", Request: req,
			Status: aah.StatusResolved, ReceivedAt: seedNow, Directive: dir}}})
		if raw := mustJSON(t, home); !strings.Contains(raw, strings.Replace(want[0], "@U0BOB", "\\u003c@U0BOB\\u003e", 1)) {
			t.Errorf("%s: the Home tab does not say how it ended: %s", verb, raw)
		}
	}
}

// An escalation target shows as Slack shows it: users, user groups and
// channel ids as mentions, anything else as escaped text.
func TestReassignmentTargets(t *testing.T) {
	t.Parallel()
	req := reviewed(t, scaleExt())
	var list []aah.Reassignment
	for _, to := range []string{"U0CAROL", "S0SRE", "C0OPS", "#ops", "dana@example.com", "<!channel>"} {
		list = append(list, aah.Reassignment{By: aah.Person{ID: "U0ALICE"}, To: to, At: seedNow})
	}
	msg := blocks.Render(req, blocks.State{Status: aah.StatusEscalated, Version: 2, ReceivedAt: seedNow, Reassignments: list})
	raw := mustJSON(t, msg.Blocks)
	var b []map[string]any
	_ = json.Unmarshal([]byte(raw), &b)
	text := ""
	for _, blk := range b {
		if blk["type"] == "context" {
			text += mustJSON(t, blk)
		}
	}
	for _, want := range []string{"earlier escalations", `\u003c!subteam^S0SRE\u003e`, `\u003c#C0OPS\u003e`, "#ops",
		"dana@example.com", `\u0026lt;!channel\u0026gt;`} {
		if !strings.Contains(text, want) {
			t.Errorf("escalation lines lack %s: %s", want, text)
		}
	}
	if strings.Contains(text, "U0CAROL") {
		t.Errorf("only the latest five escalations should show: %s", text)
	}
}

// "Approve all" and "Reject all" appear only when every approval decision
// accepts the verb: the core refuses a batch that answers a decision with a
// response its agent does not accept.
func TestBatchButtonsFollowTheAcceptedResponses(t *testing.T) {
	t.Parallel()
	two := decisionFixtures["approval"] + `,{"id":"drop","type":"approval","prompt":"Drop the old table?","required":true}`
	for _, tc := range []struct {
		name  string
		drop  obj
		batch string
	}{
		{"both accept both", obj{"responses": []string{"approve", "reject"}}, "approve_all,reject_all"},
		{"one takes no approval", obj{"responses": []string{"reject", "defer"}}, "reject_all"},
		{"one takes no rejection", obj{"responses": []string{"approve", "defer"}}, "approve_all"},
	} {
		ids, _, _ := controls(blocks.Render(wrapExt(t, two, obj{"drop": tc.drop}), pending()))
		var batch []string
		for _, id := range ids {
			if id == blocks.ActionApproveAll || id == blocks.ActionRejectAll {
				batch = append(batch, id)
			}
		}
		if got := strings.Join(batch, ","); got != tc.batch {
			t.Errorf("%s: batch buttons %q, want %q", tc.name, got, tc.batch)
		}
	}
}
