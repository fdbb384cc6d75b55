package bot_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// withReview gives the request's "ship" decision the review extension: a
// proposed scale_service action whose replicas may be edited (1..10), the
// verbs given, and two reasons to reject.
func withReview(verbs ...string) func(map[string]any) {
	return func(doc map[string]any) {
		doc["extensions"].(map[string]any)["decisions"] = map[string]any{"ship": map[string]any{
			"proposed_action": map[string]any{"action_type": "tool_call", "tool_name": "scale_service",
				"parameters": map[string]any{"service": "api", "replicas": 6}},
			"responses":      verbs,
			"editable":       map[string]any{"replicas": map[string]any{"type": "integer", "minimum": 1, "maximum": 10}},
			"reject_reasons": []any{"Too expensive", "Wrong service"},
		}}
	}
}

var allVerbs = []string{"approve", "reject", "modify", "defer", "change_plan", "escalate", "abort"}

// verbsMenu is the request's overflow menu of verbs with one option picked.
func verbsMenu(verb aah.Verb) action {
	return action{"action_id": blocks.ActionVerbs, "type": "overflow", "action_ts": "1700000000.000003",
		"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": string(verb)}, "value": string(verb)}}
}

// openedModals are the views approvalbot opened so far, decoded.
func openedModals(t *testing.T, h *harness, n int) []map[string]any {
	t.Helper()
	calls, err := h.emu.WaitForCalls(ctxTimeout(t, guard), "views.open", n)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, c := range calls {
		var v map[string]any
		if err := json.Unmarshal([]byte(c.Params["view"]), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// responseData decodes a delivered response's data.
func responseData(t *testing.T, body []byte) aah.ResponseData {
	t.Helper()
	if err := schema.ValidateResponse(body); err != nil {
		t.Errorf("the response does not validate: %v", err)
	}
	var r struct {
		Content struct {
			Body struct {
				Data aah.ResponseData `json:"data"`
			} `json:"body"`
		} `json:"content"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r.Content.Body.Data
}

// fieldError asserts a view_submission answer keeps the modal open with
// want under block.
func fieldError(t *testing.T, r response, block, want string) {
	t.Helper()
	var body struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.ResponseAction != "errors" || !strings.Contains(body.Errors[block], want) {
		t.Fatalf("want %q under %s: %d %s", want, block, r.Status, r.Body)
	}
}

// Modify in Slack: the modal opens only for someone who may approve it,
// shows the editable parameter, refuses a bad value on its own field, and
// approves the edited version: the agent's response carries the modified
// values and the original.
func TestModifyInSlack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "verbs-modify", map[string]any{"reviewers": []any{"U0ALICE", "U0REQUESTER"},
		"requested_by": "U0REQUESTER"}, withReview(allVerbs...), withResponseURL(agent.srv.URL+"/d")))

	// The message offers the verbs the agent accepts.
	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	for _, want := range []string{`"action_id":"modify"`, `"action_id":"verbs"`, `"value":"abort"`, `"action_id":"reject_reason"`} {
		if !strings.Contains(string(m.Blocks), want) {
			t.Errorf("the message lacks %s: %s", want, m.Blocks)
		}
	}
	ok(t, h.click(requester, id, "ship", button(blocks.ActionModify, "ship")))
	refusedWith(t, h, id, requester, "someone else has to make it", "self_approval")
	ok(t, h.click(mallory, id, "ship", button(blocks.ActionModify, "ship")))
	refusedWith(t, h, id, mallory, "Only the people this request names", "reviewer")
	if n := len(h.emu.CallsTo("views.open")); n != 0 {
		t.Fatalf("%d modals opened for people who may not modify", n)
	}

	ok(t, h.click(alice, id, "ship", button(blocks.ActionModify, "ship")))
	v := openedModals(t, h, 1)[0]
	if v["callback_id"] != blocks.ModalModify || !strings.Contains(mustJSON(t, v), `"block_id":"param:replicas"`) {
		t.Fatalf("modal: %v", v)
	}
	ref := blocks.ModalRef{RequestID: id, DecisionID: "ship", Channel: "C0APPROVALS"}
	replicas := func(s string) map[string]map[string]any {
		return map[string]map[string]any{"param:replicas": {"value": map[string]any{"type": "number_input", "value": s}},
			"comment": {"text": textInput("four is plenty")}}
	}
	fieldError(t, h.submitModal(alice, blocks.ModalModify, ref, replicas("40")), "param:replicas", "at most 10")
	fieldError(t, h.submitModal(alice, blocks.ModalModify, ref, replicas("2.5")), "param:replicas", "whole number")
	fieldError(t, h.submitModal(alice, blocks.ModalModify, ref, replicas("many")), "param:replicas", "number")
	if rec := h.record(id); len(rec.Answers) != 0 {
		t.Fatalf("a refused modify was recorded: %+v", rec.Answers)
	}
	ok(t, h.submitModal(alice, blocks.ModalModify, ref, replicas("4")))
	rec := h.waitStatus(id, aah.StatusResolved)
	if a := rec.Answers["ship"]; a.Verb != aah.VerbModify || a.Parameters["replicas"] != 4.0 || a.Parameters["service"] != "api" {
		t.Errorf("answer %+v", a)
	}
	data := responseData(t, agent.wait(t, guard).body)
	e := data.Responses[0]
	if e.Action != aah.VerbModify || !e.Modified || e.Parameters["replicas"] != 4.0 || e.OriginalParameters["replicas"] != 6.0 ||
		e.Approved == nil || !*e.Approved || e.Comment == nil || *e.Comment != "four is plenty" {
		t.Errorf("response entry %+v", e)
	}
}

// Defer, change_plan and abort from the overflow menu: each opens its modal
// (abort warns), a blank text stays on the field, and the request resolves
// with the directive the agent gets.
func TestDirectivesInSlack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	for i, verb := range []aah.Verb{aah.VerbDefer, aah.VerbChangePlan, aah.VerbAbort} {
		agent := newReceiver(t, testCallbackSecret)
		id := h.postAndWait(approvalRequest(t, "verbs-"+string(verb), map[string]any{"reviewers": []any{"U0ALICE", "U0BOB", "U0REQUESTER"},
			"requested_by": "U0REQUESTER", "quorum": 2}, withReview(allVerbs...), withResponseURL(agent.srv.URL+"/d")))
		ok(t, h.click(requester, id, blocks.RequestScope, verbsMenu(verb)))
		refusedWith(t, h, id, requester, "someone else has to make it", "self_approval")

		ok(t, h.click(alice, id, blocks.RequestScope, verbsMenu(verb)))
		v := openedModals(t, h, i+1)[i]
		ref, _ := blocks.ParseModalRef(v["private_metadata"].(string))
		if v["callback_id"] != blocks.ModalDirective || ref.Verb != string(verb) {
			t.Fatalf("%s modal: %v", verb, v)
		}
		if warns := strings.Contains(mustJSON(t, v), "stops the agent's whole run"); warns != (verb == aah.VerbAbort) {
			t.Errorf("%s: the abort warning shown %v", verb, warns)
		}
		text := func(s string) map[string]map[string]any {
			return map[string]map[string]any{blocks.BlockDirective: {"text": textInput(s)}}
		}
		fieldError(t, h.submitModal(alice, blocks.ModalDirective, ref, text("  ")), blocks.BlockDirective, "Write it")
		// One reviewer suffices though approvals need two: nothing is approved.
		ok(t, h.submitModal(alice, blocks.ModalDirective, ref, text("try a smaller batch")))
		rec := h.waitStatus(id, aah.StatusResolved)
		if rec.Directive == nil || rec.Directive.Verb != verb || rec.Directive.By.ID != alice.id {
			t.Fatalf("%s: directive %+v", verb, rec.Directive)
		}
		data := responseData(t, agent.wait(t, guard).body)
		d := data.Directive
		got := map[aah.Verb]string{aah.VerbDefer: d.Guidance, aah.VerbChangePlan: d.Requirement, aah.VerbAbort: d.Reason}[verb]
		if d.Action != verb || got != "try a smaller batch" || d.DecidedBy.ID != alice.id || data.OverallStatus != "pending" {
			t.Errorf("%s: response %+v directive %+v", verb, data, d)
		}
		event := map[aah.Verb]string{aah.VerbDefer: "deferred", aah.VerbChangePlan: "plan_change_requested", aah.VerbAbort: "aborted"}[verb]
		if n := countEvents(auditEvents(t, h, id), event); n != 1 {
			t.Errorf("%s: %d %s entries", verb, n, event)
		}
		// Bob, a moment later, finds it closed, on the field he was looking at.
		fieldError(t, h.submitModal(bob, blocks.ModalDirective, ref, text("no, abort")), blocks.BlockDirective, "already resolved")
		if rec := h.record(id); rec.Directive.By.ID != alice.id {
			t.Errorf("%s: a second directive replaced the first: %+v", verb, rec.Directive)
		}
	}
}

// Escalate by hand from the overflow menu: the modal needs one target and
// refuses yourself on its field; the target gets the request by DM once,
// with who handed it over and the note, and decides it from there.
func TestEscalateInSlack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "verbs-escalate", map[string]any{"reviewers": []any{"U0ALICE"}},
		withReview("approve", "reject", "escalate")))
	ok(t, h.click(mallory, id, blocks.RequestScope, verbsMenu(aah.VerbEscalate)))
	refusedWith(t, h, id, mallory, "Only the people this request names", "reviewer")
	ok(t, h.click(alice, id, blocks.RequestScope, verbsMenu(aah.VerbDefer)))
	refusedWith(t, h, id, alice, "does not accept deferring", "verb")
	// A forged overflow value (no such verb, or a decision's verb) opens nothing.
	for forged, want := range map[aah.Verb]string{"bogus": `"bogus" is not a verb`, aah.VerbApprove: `"approve" is not a verb`,
		aah.VerbModify: "This request has no decision"} {
		ok(t, h.click(alice, id, blocks.RequestScope, verbsMenu(forged)))
		refusedWith(t, h, id, alice, want, "invalid")
	}

	ok(t, h.click(alice, id, blocks.RequestScope, verbsMenu(aah.VerbEscalate)))
	v := openedModals(t, h, 1)[0]
	if v["callback_id"] != blocks.ModalEscalate || !strings.Contains(mustJSON(t, v), `"type":"users_select"`) {
		t.Fatalf("modal: %v", v)
	}
	ref, _ := blocks.ParseModalRef(v["private_metadata"].(string))
	pick := func(user, typed, note string) map[string]map[string]any {
		return map[string]map[string]any{
			blocks.BlockEscalateUser: {blocks.ActionUser: map[string]any{"type": "users_select", "selected_user": user}},
			blocks.BlockEscalateTo:   {"text": textInput(typed)},
			blocks.BlockNote:         {"text": textInput(note)},
		}
	}
	fieldError(t, h.submitModal(alice, blocks.ModalEscalate, ref, pick("", "", "")), blocks.BlockEscalateUser, "Pick a person")
	fieldError(t, h.submitModal(alice, blocks.ModalEscalate, ref, pick(alice.id, "", "")), blocks.BlockEscalateUser, "yourself")
	fieldError(t, h.submitModal(alice, blocks.ModalEscalate, ref, pick("", "nobody@example.com", "")), blocks.BlockEscalateTo, "no Slack user")
	if rec := h.record(id); rec.Status != aah.StatusPending {
		t.Fatalf("a refused escalation changed the request: %s", rec.Status)
	}
	ok(t, h.submitModal(alice, blocks.ModalEscalate, ref, pick(manager.id, "", "you own the budget")))
	h.waitStatus(id, aah.StatusEscalated)
	eventually(t, "the manager's copy", func() bool { return len(escalationCopies(h.emu, manager.id)) == 1 })
	h.waitIdle()
	dm := escalationCopies(h.emu, manager.id)[0]
	if blks := unescapeJSON(string(dm.Blocks)); !strings.Contains(blks, "Escalated to you by <@U0ALICE>*: you own the budget") ||
		!strings.Contains(blks, `"type":"actions"`) {
		t.Errorf("the copy: %s", dm.Blocks)
	}
	// The same submission again (Slack retried it) sends nothing more.
	ok(t, h.submitModal(alice, blocks.ModalEscalate, ref, pick(manager.id, "", "you own the budget")))
	h.waitIdle()
	if n := len(escalationCopies(h.emu, manager.id)); n != 1 {
		t.Errorf("%d copies, want 1", n)
	}
	entries := auditEvents(t, h, id)
	for _, e := range entries {
		if e.Event == "escalated" && (e.Data["manual"] != true || e.Data["by"] != alice.id || e.Data["to"] != manager.id) {
			t.Errorf("escalated: %+v", e)
		}
	}
	if countEvents(entries, "escalated") != 1 {
		t.Errorf("audit %+v", entries)
	}
	ok(t, h.clickIn(manager, dm.Channel, dm.TS, id, "ship", button(blocks.ActionApprove, "true")))
	if rec := h.waitStatus(id, aah.StatusResolved); rec.ResolvedBy.ID != manager.id || len(rec.Reassignments) != 1 {
		t.Errorf("resolved by %+v, reassignments %+v", rec.ResolvedBy, rec.Reassignments)
	}
}

// Reject with a reason picked from the agent's list: the reject modal
// offers them; the response carries the one picked and the person's words.
func TestRejectWithReasonsInSlack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "verbs-reject", map[string]any{"reviewers": []any{"U0ALICE"}, "require_reason": true},
		withReview("approve", "reject"), withResponseURL(agent.srv.URL+"/d")))
	ok(t, h.click(alice, id, "ship", button(blocks.ActionRejectReason, "false")))
	v := openedModals(t, h, 1)[0]
	if !strings.Contains(mustJSON(t, v), `"block_id":"reject_reason"`) || !strings.Contains(mustJSON(t, v), "Too expensive") {
		t.Fatalf("the reject modal offers no reasons: %v", v)
	}
	ref := blocks.ModalRef{RequestID: id, DecisionID: "ship", Channel: "C0APPROVALS"}
	values := func(picked, words string) map[string]map[string]any {
		sel := map[string]any{"type": "static_select", "selected_option": nil}
		if picked != "" {
			sel["selected_option"] = map[string]any{"value": picked, "text": map[string]any{"type": "plain_text", "text": picked}}
		}
		return map[string]map[string]any{blocks.BlockRejectReason: {"value": sel}, "comment": {"text": textInput(words)}}
	}
	// require_reason: one of the two is needed.
	fieldError(t, h.submitModal(alice, blocks.ModalReject, ref, values("", "")), "comment", "Say why")
	fieldError(t, h.submitModal(alice, blocks.ModalReject, ref, values("Bad vibes", "")), blocks.BlockRejectReason, "not one of the reasons")
	ok(t, h.submitModal(alice, blocks.ModalReject, ref, values("Too expensive", "")))
	h.waitStatus(id, aah.StatusResolved)
	e := responseData(t, agent.wait(t, guard).body).Responses[0]
	if e.RejectReason != "Too expensive" || e.Approved == nil || *e.Approved {
		t.Errorf("response entry %+v", e)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Two reviewers deferring and aborting the same request at once, through
// Slack and the store's transactions: one directive wins, the request
// closes once with one response, and the other is told it is closed.
func TestConcurrentDirectivesCloseOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "verbs-race", map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}},
		withReview(allVerbs...), withResponseURL(agent.srv.URL+"/d")))
	submit := func(u slackUser, verb aah.Verb) response {
		ref := blocks.ModalRef{RequestID: id, DecisionID: blocks.RequestScope, Channel: "C0APPROVALS", Verb: string(verb)}
		return h.submitModal(u, blocks.ModalDirective, ref, map[string]map[string]any{blocks.BlockDirective: {"text": textInput("from " + u.name)}})
	}
	var wg sync.WaitGroup
	results := make([]response, 2)
	for i, u := range []slackUser{alice, bob} {
		verb := []aah.Verb{aah.VerbDefer, aah.VerbAbort}[i]
		wg.Go(func() { results[i] = submit(u, verb) })
	}
	wg.Wait()
	closed := 0
	for _, r := range results {
		if strings.Contains(string(r.Body), "already resolved") {
			closed++
		} else if len(r.Body) > 0 {
			t.Errorf("unexpected answer: %d %s", r.Status, r.Body)
		}
	}
	rec := h.waitStatus(id, aah.StatusResolved)
	entries := auditEvents(t, h, id)
	if closed != 1 || rec.Directive == nil || countEvents(entries, "resolved") != 1 ||
		countEvents(entries, "deferred")+countEvents(entries, "aborted") != 1 {
		t.Fatalf("closed answers %d, directive %+v, audit %+v", closed, rec.Directive, entries)
	}
	data := responseData(t, agent.wait(t, guard).body)
	if data.Directive == nil || data.Directive.Action != rec.Directive.Verb || data.Directive.DecidedBy.ID != rec.Directive.By.ID {
		t.Errorf("response directive %+v, record %+v", data.Directive, rec.Directive)
	}
	h.waitIdle()
	if n := len(agent.deliveries()); n != 1 {
		t.Errorf("%d deliveries, want 1", n)
	}
}

// The verbs through the decision API in the running bot: the requester is
// refused, an escalation to an email resolves through Slack's directory
// and DMs its target once, and the target modifies it through the API.
func TestVerbsThroughTheAPIInTheBot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withDeciders(t))
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "verbs-api", map[string]any{"reviewers": []any{"U0ALICE", "U0REQUESTER"},
		"requested_by": "U0REQUESTER"}, withReview(allVerbs...), withResponseURL(agent.srv.URL+"/d")))
	refusedViaAPI(t, h, h.decide(id, "escalate", reviewerTokens[requester.id], `{"to": "manager@example.com"}`), id, 403, "self_approval", "human:"+requester.id)
	refusedViaAPI(t, h, h.decide(id, "defer", reviewerTokens[mallory.id], `{"guidance": "later"}`), id, 403, "reviewer", "human:"+mallory.id)

	if r := h.decide(id, "escalate", reviewerTokens[alice.id], `{"to": "manager@example.com", "note": "budget owner"}`); r.Status != 200 {
		t.Fatalf("escalate: %d %s", r.Status, r.Body)
	}
	eventually(t, "the manager's copy", func() bool { return len(escalationCopies(h.emu, manager.id)) == 1 })
	if rec := h.record(id); rec.Status != aah.StatusEscalated || len(rec.Reassignments) != 1 || rec.Reassignments[0].To != "manager@example.com" {
		t.Fatalf("record %+v", rec)
	}
	// The manager modifies it from Slack, as its new reviewer.
	ok(t, h.click(manager, id, "ship", button(blocks.ActionModify, "ship")))
	ref := blocks.ModalRef{RequestID: id, DecisionID: "ship", Channel: "C0APPROVALS"}
	ok(t, h.submitModal(manager, blocks.ModalModify, ref, map[string]map[string]any{
		"param:replicas": {"value": map[string]any{"type": "number_input", "value": "3"}}}))
	if rec := h.waitStatus(id, aah.StatusResolved); rec.ResolvedBy.ID != manager.id {
		t.Errorf("resolved by %+v", rec.ResolvedBy)
	}
	e := responseData(t, agent.wait(t, guard).body).Responses[0]
	if !e.Modified || e.Parameters["replicas"] != 3.0 || e.OriginalParameters["replicas"] != 6.0 {
		t.Errorf("response entry %+v", e)
	}
	h.waitIdle()
	if n := len(escalationCopies(h.emu, manager.id)); n != 1 {
		t.Errorf("%d copies, want 1", n)
	}
}

// Escalating by hand to a channel typed in the modal posts the request
// there once, saying who handed it over.
func TestEscalateToAChannelInSlack(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "verbs-escalate-channel", map[string]any{"reviewers": []any{"U0ALICE"}},
		withReview("approve", "reject", "escalate")))
	ok(t, h.click(alice, id, blocks.RequestScope, verbsMenu(aah.VerbEscalate)))
	openedModals(t, h, 1)
	ref := blocks.ModalRef{RequestID: id, DecisionID: blocks.RequestScope, Channel: "C0APPROVALS"}
	ok(t, h.submitModal(alice, blocks.ModalEscalate, ref, map[string]map[string]any{
		blocks.BlockEscalateTo: {"text": textInput("#general")}, blocks.BlockNote: {"text": textInput("")}}))
	copies := func() int {
		n := 0
		for _, m := range h.emu.Messages("C0GENERAL") {
			if strings.Contains(unescapeJSON(string(m.Blocks)), "Escalated to this channel by <@U0ALICE>*.") {
				n++
			}
		}
		return n
	}
	eventually(t, "the copy in #general", func() bool { return copies() == 1 })
	h.waitIdle()
	rec := h.record(id)
	if n := copies(); n != 1 || rec.Status != aah.StatusEscalated || !slices.Equal(rec.EscalatedChannels, []string{"#general"}) ||
		!slices.Equal(rec.EscalationSent[store.ManualStep(0)], []string{"#general"}) {
		t.Errorf("%d copies; record %+v", n, rec)
	}
}
