package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
)

// Tokens of the people who decide through the API in these tests, and the
// grants: agent "other" decides as U0CHECK (a service user requests may
// name), and "pm" (which sends the requests) as Alice.
var reviewerTokens = map[string]string{
	alice.id: "alice-api-token-0123456789", bob.id: "bob-api-token-0123456789",
	mallory.id: "mallory-api-token-0123456789", requester.id: "riley-api-token-0123456789",
}

const checkUser = "U0CHECK"

func withDeciders(t testing.TB) harnessOption {
	return func(c *configT, _ *depsT) {
		var pairs []string
		for user, token := range reviewerTokens {
			pairs = append(pairs, user+":"+token)
		}
		cfg, err := c.WithDeciders(strings.Join(pairs, ","), []string{"other:" + checkUser, "pm:" + alice.id})
		if err != nil {
			t.Fatal(err)
		}
		*c = cfg
	}
}

// decide calls a decision endpoint with token.
func (h *harness) decide(id, endpoint, token, body string) response {
	h.t.Helper()
	return h.do(http.MethodPost, "/v1/requests/"+id+"/"+endpoint, token, "application/json", []byte(body))
}

// refusedViaAPI checks an API refusal: its status and rule, the request
// unchanged, and a click_refused audit entry naming who tried, via the API.
func refusedViaAPI(t *testing.T, h *harness, r response, id string, status int, rule, actor string) {
	t.Helper()
	var body struct{ Error, Rule string }
	if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != status || body.Rule != rule || body.Error == "" {
		t.Fatalf("refusal: %d %s, want %d rule %s", r.Status, r.Body, status, rule)
	}
	entries, err := h.store.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Event == "click_refused" && e.Actor == actor && e.Data["rule"] == rule && e.Data["via"] == aah.ViaAPI {
			return
		}
	}
	t.Errorf("no click_refused entry for %s with rule %q via api: %+v", actor, rule, entries)
}

// Each authorization rule refuses an API answer as it refuses a click: the
// same reason, nothing stored, audited with the channel.
func TestAPIDecisionsRefusedByEachRule(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withDeciders(t))
	h.startJobs()
	unchanged := func(t *testing.T, id string) {
		t.Helper()
		if rec := answersOf(t, h, id); len(rec.Answers) != 0 || rec.Status != aah.StatusPending {
			t.Errorf("a refused answer changed the request: %s %+v", rec.Status, rec.Answers)
		}
	}
	approve := `{"answers": {"ship": true}}`

	t.Run("reviewers", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "api-authz-reviewers", map[string]any{"reviewers": []any{alice.id}}))
		r := h.decide(id, "answers", reviewerTokens[mallory.id], approve)
		refusedViaAPI(t, h, r, id, 403, "reviewer", "human:"+mallory.id)
		if !strings.Contains(string(r.Body), "Only the people this request names") {
			t.Errorf("not the click's reason: %s", r.Body)
		}
		// An agent approver whose user the request does not name.
		refusedViaAPI(t, h, h.decide(id, "answers", tokenOther, approve), id, 403, "reviewer", "agent:other")
		unchanged(t, id)
	})
	t.Run("reviewer group", func(t *testing.T) {
		// @leads is Morgan and Alice; Bob is not in it.
		id := h.postAndWait(approvalRequest(t, "api-authz-group", map[string]any{"reviewer_groups": []any{slackemu.UserGroupLeads}}))
		refusedViaAPI(t, h, h.decide(id, "answers", reviewerTokens[bob.id], approve), id, 403, "reviewer", "human:"+bob.id)
		unchanged(t, id)
		if r := h.decide(id, "answers", reviewerTokens[alice.id], approve); r.Status != 200 || r.json(t)["resolved"] != true {
			t.Errorf("group member: %d %s", r.Status, r.Body)
		}
	})
	t.Run("required role by email", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "api-authz-role", map[string]any{
			"required_roles": []any{map[string]any{"role": "legal", "members": []any{"bob@example.com"}}}}))
		refusedViaAPI(t, h, h.decide(id, "answers", reviewerTokens[mallory.id], approve), id, 403, "reviewer", "human:"+mallory.id)
		unchanged(t, id)
		if r := h.decide(id, "answers", reviewerTokens[bob.id], approve); r.Status != 200 {
			t.Fatalf("role member: %d %s", r.Status, r.Body)
		}
		if rec := answersOf(t, h, id); rec.Status != "resolved" || rec.Answers["ship"].Signoffs[0].Roles[0] != "legal" {
			t.Errorf("role member's approval: %s %+v", rec.Status, rec.Answers["ship"])
		}
	})
	t.Run("self-approval", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "api-authz-self", map[string]any{
			"reviewers": []any{alice.id, requester.id}, "requested_by": requester.id}))
		refusedViaAPI(t, h, h.decide(id, "answers", reviewerTokens[requester.id], approve), id, 403, "self_approval", "human:"+requester.id)
		unchanged(t, id)
		// The requester may still comment.
		if r := h.decide(id, "comments", reviewerTokens[requester.id], `{"decision_id": "ship", "text": "Please hurry"}`); r.Status != 200 {
			t.Errorf("requester's comment: %d %s", r.Status, r.Body)
		}
	})
	t.Run("an agent's own request", func(t *testing.T) {
		// pm decides as Alice, whom the request names; it sent the request.
		id := h.postAndWait(approvalRequest(t, "api-authz-own", map[string]any{"reviewers": []any{alice.id}, "allow_self_approval": false}))
		refusedViaAPI(t, h, h.decide(id, "answers", tokenPM, approve), id, 403, "self_approval", "agent:pm")
		refusedViaAPI(t, h, h.decide(id, "submit", tokenPM, ``), id, 403, "self_approval", "agent:pm")
		unchanged(t, id)
	})
	t.Run("require reason", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "api-authz-reason", map[string]any{"reviewers": []any{alice.id}, "require_reason": true}))
		refusedViaAPI(t, h, h.decide(id, "answers", reviewerTokens[alice.id], `{"answers": {"ship": false}}`), id, 400,
			"require_reason", "human:"+alice.id)
		unchanged(t, id)
		r := h.decide(id, "reject", reviewerTokens[alice.id], `{"reason": "Release notes are missing"}`)
		if r.Status != 200 || r.json(t)["resolved"] != true {
			t.Fatalf("rejection with its reason: %d %s", r.Status, r.Body)
		}
		if got := string(answersOf(t, h, id).Response); !strings.Contains(got, `"approved":false,"comment":"Release notes are missing"`) {
			t.Errorf("response lacks the reason: %s", got)
		}
	})
	t.Run("closed", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "api-authz-closed", map[string]any{"reviewers": []any{alice.id, bob.id}}))
		ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
		before := answersOf(t, h, id)
		r := h.decide(id, "answers", reviewerTokens[bob.id], `{"answers": {"ship": false}}`)
		refusedViaAPI(t, h, r, id, 409, "closed", "human:"+bob.id)
		if !strings.Contains(string(r.Body), "This request is already resolved; nothing was changed.") {
			t.Errorf("not the click's reason: %s", r.Body)
		}
		if after := answersOf(t, h, id); after.Version != before.Version || after.Answers["ship"].Value != true {
			t.Errorf("a refused answer changed a resolved request")
		}
	})
	t.Run("unknown decision and invalid value", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "api-authz-invalid", map[string]any{"reviewers": []any{alice.id}}))
		refusedViaAPI(t, h, h.decide(id, "answers", reviewerTokens[alice.id], `{"answers": {"nope": true}}`), id, 404, "invalid", "human:"+alice.id)
		refusedViaAPI(t, h, h.decide(id, "answers", reviewerTokens[alice.id], `{"answers": {"ship": "yes"}}`), id, 400, "invalid", "human:"+alice.id)
		unchanged(t, id)
		if r := h.decide(id, "answers", "", approve); r.Status != 401 {
			t.Errorf("no token: %d", r.Status)
		}
	})
}

// A quorum of two reached half through the API and half by a click. The
// API answer shows in the message, in Alice's App Home and in /approvals
// as a click would; the request resolves once and the agent gets one
// response.
func TestQuorumHalfByAPIHalfBySlack(t *testing.T) {
	t.Parallel()
	for _, backend := range storeBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			h := newHarnessOnStore(t, backend, withDeciders(t))
			h.startJobs()
			agent := newReceiver(t, testCallbackSecret)
			id := h.postAndWait(approvalRequest(t, "api-quorum", map[string]any{"reviewers": []any{alice.id, bob.id}, "quorum": 2},
				withResponseURL(agent.srv.URL+"/d")))
			h.openHome(alice, "Ev0APIQ1", nil)
			h.waitHome(alice, "listed the request", func(ht homeTab) bool { return len(ht.waiting) == 1 })
			events := h.openEvents("/v1/requests/"+id+"/events", "")
			if ev := nextEvent(t, events); ev.Type != "input:requested" {
				t.Fatalf("first event %s, want input:requested", ev.Type)
			}

			r := h.decide(id, "answers", reviewerTokens[alice.id], `{"answers": {"ship": true}, "comment": "Looks good"}`)
			if r.Status != 200 || r.json(t)["changed"] != true || r.json(t)["resolved"] != false {
				t.Fatalf("alice's API answer: %d %s", r.Status, r.Body)
			}
			channel, ts := h.messageOf(id)
			if err := h.emu.WaitFor(ctxTimeout(t, guard), func(sn *slackemu.Snapshot) bool {
				m, _ := sn.Message(channel, ts)
				text := slackemu.RenderText(m.Blocks)
				return strings.Contains(text, "1 of 2 approvals") && strings.Contains(text, "Looks good")
			}); err != nil {
				m, _ := h.emu.Message(channel, ts)
				t.Fatalf("the message never showed the API answer:\n%s", slackemu.RenderText(m.Blocks))
			}
			h.waitHome(alice, "listed the request as answered", func(ht homeTab) bool {
				return len(ht.answered) == 1 && ht.answered[0] == id
			})
			if text := h.slash(bob, "show "+id).text(); !strings.Contains(text, "1 of 2 approvals") {
				t.Errorf("/approvals show lacks the API answer:\n%s", text)
			}

			ok(t, h.click(bob, id, "ship", button(blocks.ActionApprove, "true")))
			d := agent.wait(t, guard)
			h.waitIdle()
			rec := answersOf(t, h, id)
			if rec.Status != aah.StatusResolved || rec.Answers["ship"].Value != true || len(rec.Answers["ship"].Signoffs) != 2 {
				t.Fatalf("after bob's click: %s %+v", rec.Status, rec.Answers["ship"])
			}
			// The API answer carries her name from Slack (users.info), as a click does.
			if by := rec.Answers["ship"].Signoffs[0].By; by.ID != alice.id || by.Name != alice.name || by.Via != aah.ViaAPI {
				t.Errorf("alice's API sign-off by %+v", by)
			}
			if n := len(agent.deliveries()); n != 1 || !d.signatureOK {
				t.Errorf("%d deliveries (signature ok %v), want one", n, d.signatureOK)
			}
			m, _ := h.emu.Message(channel, ts)
			if strings.Contains(string(m.Blocks), `"type":"actions"`) {
				t.Errorf("the resolved message still has controls:\n%s", slackemu.RenderText(m.Blocks))
			}
			// The agent watching the request saw both answers as they
			// came, the API's as the click's, then the resolution.
			for _, want := range []struct{ typ, actor string }{{"input:received", "human:" + alice.id},
				{"input:received", "human:" + bob.id}, {"resolved", ""}} {
				ev := nextEvent(t, events)
				var data struct {
					Actor string `json:"actor"`
				}
				if err := json.Unmarshal(ev.Data, &data); err != nil || ev.Type != want.typ || data.Actor != want.actor {
					t.Errorf("event %s by %q (%v), want %s by %q", ev.Type, data.Actor, err, want.typ, want.actor)
				}
			}
		})
	}
}

// An API answer and a click racing for a single-decision request resolve
// it exactly once: one answer recorded, one resolution, one response
// delivered; the loser is refused as closed (or changes nothing).
func TestAPIAnswerRacesAClick(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withDeciders(t))
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	const n = 8
	ids := make([]string, n)
	for i := range n {
		ids[i] = h.postAndWait(approvalRequest(t, fmt.Sprintf("api-race-%d", i), map[string]any{"reviewers": []any{alice.id, bob.id}},
			withResponseURL(agent.srv.URL+"/d")))
	}
	for _, id := range ids {
		payload := h.clickPayload(bob, id, "ship", button(blocks.ActionApprove, "true"))
		var wg sync.WaitGroup
		var api response
		wg.Go(func() { api = h.decide(id, "answers", reviewerTokens[alice.id], `{"answers": {"ship": false}}`) })
		wg.Go(func() { ok(t, h.sendInteraction(payload)) })
		wg.Wait()
		if api.Status != 200 && api.Status != 409 {
			t.Errorf("%s: API answer %d %s", id, api.Status, api.Body)
		}
	}
	h.waitIdle()
	for _, id := range ids {
		entries, err := h.store.Audit(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var answered, resolved []store.AuditEntry
		for _, e := range entries {
			switch e.Event {
			case "answered":
				answered = append(answered, e)
			case "resolved":
				resolved = append(resolved, e)
			}
		}
		rec := answersOf(t, h, id)
		if len(answered) != 1 || len(resolved) != 1 || rec.Status != aah.StatusResolved || resolved[0].Actor != answered[0].Actor {
			t.Errorf("%s: %d answers, %d resolutions, status %s", id, len(answered), len(resolved), rec.Status)
		}
	}
	if got := len(agent.deliveries()); got != n {
		t.Errorf("%d responses delivered for %d requests", got, n)
	}
}

// An agent with an approver grant decides with its user's authority and is
// recorded as the agent: the answer, the audit and the response say so.
func TestAgentApproverDecides(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withDeciders(t))
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "api-agent", map[string]any{"reviewers": []any{alice.id, checkUser}},
		withResponseURL(agent.srv.URL+"/d")))
	r := h.decide(id, "answers", tokenOther, `{"answers": {"ship": true}, "comment": "All checks green"}`)
	if r.Status != 200 || r.json(t)["resolved"] != true {
		t.Fatalf("agent approver: %d %s", r.Status, r.Body)
	}
	d := agent.wait(t, guard)
	var resp struct {
		Source struct {
			AgentID   string `json:"agent_id"`
			AgentName string `json:"agent_name"`
		} `json:"source"`
	}
	if err := json.Unmarshal(d.body, &resp); err != nil || resp.Source.AgentID != "agent:other" || resp.Source.AgentName != "other" {
		t.Errorf("response source = %+v (%v): %s", resp.Source, err, d.body)
	}
	if by := answersOf(t, h, id).Answers["ship"].By; by.ID != checkUser || by.Agent != "other" || by.Via != aah.ViaAPI {
		t.Errorf("answer by %+v", by)
	}
	entries, err := h.store.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Event == "answered" {
			found = e.Actor == "agent:other" && e.Data["agent"] == "other" && e.Data["user"] == checkUser && e.Data["via"] == aah.ViaAPI
		}
	}
	if !found {
		t.Errorf("the answer is not audited as the agent: %+v", entries)
	}
	h.waitIdle()
	channel, ts := h.messageOf(id)
	if m, _ := h.emu.Message(channel, ts); strings.Contains(string(m.Blocks), `"type":"actions"`) {
		t.Errorf("the resolved message still has controls:\n%s", slackemu.RenderText(m.Blocks))
	}
}
