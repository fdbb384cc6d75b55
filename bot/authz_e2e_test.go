package bot_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
)

var (
	requester = slackUser{slackemu.UserRequester, "Riley Requester"}
	morgan    = slackUser{slackemu.UserManager, "Morgan Manager"}
)

// approvalRequest is a request with one approval decision ("ship") and the
// given extensions.slack.
func approvalRequest(t *testing.T, id string, slackExt map[string]any, edits ...func(map[string]any)) []byte {
	t.Helper()
	return exampleWith(t, id, func(doc map[string]any) {
		data := doc["content"].(map[string]any)["body"].(map[string]any)["data"].(map[string]any)
		data["decisions"] = []any{map[string]any{"id": "ship", "type": "approval", "prompt": "Ship release 2.4?", "required": true}}
		delete(data, "escalation")
		doc["extensions"] = map[string]any{"slack": slackExt}
		for _, e := range edits {
			e(doc)
		}
	})
}

// refusedWith checks that u's action was refused: u got an ephemeral
// containing want, nothing was answered, and the audit names u and rule.
func refusedWith(t *testing.T, h *harness, id string, u slackUser, want, rule string) {
	t.Helper()
	if err := h.emu.WaitFor(ctxTimeout(t, guard), func(s *slackemu.Snapshot) bool {
		for _, e := range s.Ephemerals("C0APPROVALS", u.id) {
			if strings.Contains(e.Text, want) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%s got no ephemeral containing %q: %v", u.id, want, err)
	}
	entries, err := h.store.Audit(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Event == "click_refused" && e.Actor == "human:"+u.id && e.Data["rule"] == rule {
			return
		}
	}
	t.Errorf("no click_refused audit entry for %s with rule %q: %+v", u.id, rule, entries)
}

func answersOf(t *testing.T, h *harness, id string) store.Record {
	t.Helper()
	rec, err := h.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// Each rule refuses the people it should, before anything is stored, with
// an explanation and an audit entry naming who tried.
func TestUnauthorizedClicksRefusedByEachRule(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()

	t.Run("reviewers", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "authz-reviewers", map[string]any{"reviewers": []any{"U0ALICE"}}))
		ok(t, h.click(mallory, id, "ship", button(blocks.ActionApprove, "true")))
		refusedWith(t, h, id, mallory, "Only the people this request names", "reviewer")
		if rec := answersOf(t, h, id); len(rec.Answers) != 0 || rec.Status != "pending" {
			t.Errorf("refused click changed the request: %s %+v", rec.Status, rec.Answers)
		}
	})
	t.Run("reviewer group", func(t *testing.T) {
		// @leads is Morgan and Alice; Bob is not in it.
		id := h.postAndWait(approvalRequest(t, "authz-group", map[string]any{"reviewer_groups": []any{slackemu.UserGroupLeads}}))
		ok(t, h.click(bob, id, "ship", button(blocks.ActionApprove, "true")))
		refusedWith(t, h, id, bob, "Only the people this request names", "reviewer")
		ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
		if rec := answersOf(t, h, id); rec.Status != "resolved" {
			t.Errorf("group member's approval: status %s", rec.Status)
		}
	})
	t.Run("required role by email", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "authz-role", map[string]any{
			"required_roles": []any{map[string]any{"role": "legal", "members": []any{"bob@example.com"}}}}))
		ok(t, h.click(mallory, id, "ship", button(blocks.ActionApprove, "true")))
		refusedWith(t, h, id, mallory, "Only the people this request names", "reviewer")
		ok(t, h.click(bob, id, "ship", button(blocks.ActionApprove, "true")))
		rec := answersOf(t, h, id)
		if rec.Status != "resolved" || len(rec.Answers["ship"].Signoffs) != 1 || rec.Answers["ship"].Signoffs[0].Roles[0] != "legal" {
			t.Errorf("role member's approval: %s %+v", rec.Status, rec.Answers["ship"])
		}
	})
	t.Run("comment modal refused before it opens", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "authz-modal", map[string]any{"reviewers": []any{"U0ALICE"}}))
		before := len(h.emu.CallsTo("views.open"))
		ok(t, h.click(mallory, id, "ship", button(blocks.ActionComment, "ship")))
		refusedWith(t, h, id, mallory, "Only the people this request names", "reviewer")
		if after := len(h.emu.CallsTo("views.open")); after != before {
			t.Errorf("a modal opened for someone who may not answer")
		}
	})
	t.Run("self-approval", func(t *testing.T) {
		id := h.postAndWait(approvalRequest(t, "authz-self", map[string]any{"requested_by": "requester@example.com",
			"reviewers": []any{requester.id, bob.id}}))
		ok(t, h.click(requester, id, "ship", button(blocks.ActionApprove, "true")))
		refusedWith(t, h, id, requester, "someone else has to make it", "self_approval")
		// Commenting stays open to the requester, and the other reviewer may decide.
		ok(t, h.submitModal(requester, blocks.ModalComment, blocks.ModalRef{RequestID: id, DecisionID: "ship", Channel: "C0APPROVALS"},
			map[string]map[string]any{"comment": {"text": textInput("Please hurry")}}))
		ok(t, h.click(bob, id, "ship", button(blocks.ActionApprove, "true")))
		if rec := answersOf(t, h, id); rec.Status != "resolved" || rec.Answers["ship"].By.ID != bob.id {
			t.Errorf("after Bob approves: %s %+v", rec.Status, rec.Answers["ship"])
		}
	})
	t.Run("self-approval asked where the workspace forbids it", func(t *testing.T) {
		// ALLOW_SELF_APPROVAL is false and agent pm is not granted the right
		// to loosen it (TestPolicyFloorAtIntakeAndDecision covers the grant).
		r := h.post(approvalRequest(t, "authz-self-ok", map[string]any{"requested_by": requester.id, "allow_self_approval": true}))
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "extensions.slack.allow_self_approval") {
			t.Errorf("POST: %d %s, want 400 naming allow_self_approval", r.Status, r.Body)
		}
	})
}

// Workspace admins may decide any request; other workspace defaults apply
// to requests that say nothing.
func TestWorkspacePolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *configT, _ *depsT) {
		c.AdminUsers = []string{morgan.id}
		c.DefaultReviewers, c.DefaultReviewerGroups = nil, []string{slackemu.UserGroupLeads}
		c.RequireReason = true
	})
	h.startJobs()
	named := h.postAndWait(approvalRequest(t, "policy-admin", map[string]any{"reviewers": []any{"U0BOB"}}))
	ok(t, h.click(morgan, named, "ship", button(blocks.ActionApprove, "true")))
	if rec := answersOf(t, h, named); rec.Status != "resolved" {
		t.Errorf("admin's approval: status %s", rec.Status)
	}
	silent := h.postAndWait(approvalRequest(t, "policy-default", map[string]any{}))
	ok(t, h.click(bob, silent, "ship", button(blocks.ActionApprove, "true")))
	refusedWith(t, h, silent, bob, "This request names no reviewers", "reviewer")
	ok(t, h.click(alice, silent, "ship", button(blocks.ActionReject, "false")))
	refusedWith(t, h, silent, alice, "Say why you reject", "require_reason")
}

// require_reason: Reject opens a modal; a rejection without a reason is
// refused; the reason reaches the response as the decision's comment.
func TestRejectNeedsAReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "reason-1", map[string]any{"require_reason": true}, withResponseURL(agent.srv.URL+"/d")))

	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	if !strings.Contains(string(m.Blocks), `"action_id":"reject_reason"`) {
		t.Fatalf("the Reject button does not ask for a reason:\n%s", m.Blocks)
	}
	// A plain reject (an old message, or a hand-made payload) is refused.
	ok(t, h.click(bob, id, "ship", button(blocks.ActionReject, "false")))
	refusedWith(t, h, id, bob, "Say why you reject", "require_reason")

	// The reason modal opens for Bob.
	ok(t, h.click(bob, id, "ship", button(blocks.ActionRejectReason, "false")))
	calls, err := h.emu.WaitForCalls(ctxTimeout(t, guard), "views.open", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(calls[0].Params["view"], blocks.ModalReject) {
		t.Errorf("views.open did not open the reject modal: %s", calls[0].Params)
	}
	ref := blocks.ModalRef{RequestID: id, DecisionID: "ship", Channel: "C0APPROVALS"}
	r := h.submitModal(bob, blocks.ModalReject, ref, map[string]map[string]any{"comment": {"text": textInput("  ")}})
	if !strings.Contains(string(r.Body), `"response_action":"errors"`) || !strings.Contains(string(r.Body), "Say why") {
		t.Fatalf("blank reason: %d %s", r.Status, r.Body)
	}
	ok(t, h.submitModal(bob, blocks.ModalReject, ref, map[string]map[string]any{"comment": {"text": textInput("Changelog is incomplete")}}))
	rec := answersOf(t, h, id)
	if rec.Status != "resolved" {
		t.Fatalf("status %s", rec.Status)
	}
	d := agent.wait(t, guard)
	var resp struct {
		Content struct {
			Body struct {
				Data struct {
					OverallStatus string `json:"overall_status"`
					Responses     []struct {
						Approved *bool   `json:"approved"`
						Comment  *string `json:"comment"`
					} `json:"responses"`
				}
			}
		}
	}
	if err := json.Unmarshal(d.body, &resp); err != nil {
		t.Fatal(err)
	}
	got := resp.Content.Body.Data
	if got.OverallStatus != "all_rejected" || *got.Responses[0].Approved || got.Responses[0].Comment == nil || *got.Responses[0].Comment != "Changelog is incomplete" {
		t.Errorf("response: %s", d.body)
	}
}

// Quorum and roles: three approvers click at once; the decision settles
// exactly once, when legal, marketing and the quorum of three have approved,
// and the response lists every approver with role and time.
func TestQuorumAndRolesWithConcurrentApprovers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	agent := newReceiver(t, testCallbackSecret)
	id := h.postAndWait(approvalRequest(t, "quorum-1", map[string]any{
		"quorum":    3,
		"reviewers": []any{morgan.id},
		"required_roles": []any{
			map[string]any{"role": "legal", "members": []any{alice.id}},
			map[string]any{"role": "marketing", "members": []any{"bob@example.com"}},
		},
	}, withResponseURL(agent.srv.URL+"/d")))

	// One approval first: the message shows the progress.
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	h.waitIdle()
	channel, ts := h.messageOf(id)
	m, _ := h.emu.Message(channel, ts)
	text := slackemu.RenderText(m.Blocks)
	for _, want := range []string{"*legal* :white_check_mark: @U0ALICE", "*marketing* :hourglass_flowing_sand:", "1 of 3 approvals"} {
		if !strings.Contains(text, want) {
			t.Errorf("partial message lacks %q:\n%s", want, text)
		}
	}
	if rec := answersOf(t, h, id); rec.Status != "partial" || rec.Answers["ship"].Answered() {
		t.Fatalf("after one approval: %s %+v", rec.Status, rec.Answers["ship"])
	}
	// Alice again: a double click changes nothing.
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))

	var wg sync.WaitGroup
	for _, u := range []slackUser{bob, morgan, bob, morgan} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.click(u, id, "ship", button(blocks.ActionApprove, "true"))
			if r.Status != 200 {
				t.Errorf("click by %s: %d %s", u.id, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	rec := answersOf(t, h, id)
	if rec.Status != "resolved" || rec.Answers["ship"].Value != true || len(rec.Answers["ship"].Signoffs) != 3 {
		t.Fatalf("after all approve: %s %+v", rec.Status, rec.Answers["ship"])
	}
	d := agent.wait(t, guard)
	if err := schema.ValidateResponse(d.body); err != nil {
		t.Errorf("response does not validate: %v", err)
	}
	var resp struct {
		Content struct {
			Body struct {
				Data struct {
					Responses []struct {
						Approved *bool `json:"approved"`
						Signoffs []struct {
							AgentID string   `json:"agent_id"`
							Roles   []string `json:"roles"`
							At      string   `json:"at"`
						} `json:"signoffs"`
					} `json:"responses"`
				}
			}
		}
	}
	if err := json.Unmarshal(d.body, &resp); err != nil {
		t.Fatal(err)
	}
	so := resp.Content.Body.Data.Responses[0].Signoffs
	roles := map[string]string{}
	for _, s := range so {
		roles[s.AgentID] = strings.Join(s.Roles, ",")
		if s.At == "" {
			t.Errorf("sign-off without a time: %+v", s)
		}
	}
	if len(so) != 3 || roles["human:U0ALICE"] != "legal" || roles["human:U0BOB"] != "marketing" || roles["human:U0MANAGER"] != "" {
		t.Errorf("sign-offs in the response: %s", d.body)
	}
	entries, _ := h.store.Audit(context.Background(), id)
	resolved := 0
	for _, e := range entries {
		if e.Event == "resolved" {
			resolved++
		}
	}
	if resolved != 1 {
		t.Errorf("resolved %d times", resolved)
	}
	if extra := agent.deliveries(); len(extra) != 1 {
		t.Errorf("%d deliveries, want 1", len(extra))
	}
}

// One rejection decides a gated approval, whatever the approvals so far.
func TestOneRejectionDecidesAQuorum(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "quorum-veto", map[string]any{"quorum": 2, "reviewers": []any{alice.id, bob.id, morgan.id}}))
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	ok(t, h.click(bob, id, "ship", button(blocks.ActionReject, "false")))
	rec := answersOf(t, h, id)
	if rec.Status != "resolved" || rec.Answers["ship"].Value != false || rec.Answers["ship"].By.ID != bob.id {
		t.Fatalf("after a rejection: %s %+v", rec.Status, rec.Answers["ship"])
	}
}

// A group lookup Slack fails refuses the click (fails closed) without
// storing anything; the person is asked to try again, and can.
func TestGroupLookupFailureFailsClosed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "authz-lookup", map[string]any{"reviewer_groups": []any{slackemu.UserGroupLeads}}))
	h.emu.InjectError("usergroups.users.list", "ratelimited", 1)
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	if err := h.emu.WaitFor(ctxTimeout(t, guard), func(s *slackemu.Snapshot) bool {
		return len(s.Ephemerals("C0APPROVALS", alice.id)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	if e := h.emu.Ephemerals("C0APPROVALS", alice.id)[0].Text; !strings.Contains(e, "try again") {
		t.Errorf("ephemeral = %q", e)
	}
	if rec := answersOf(t, h, id); rec.Status != "pending" || len(rec.Answers) != 0 {
		t.Fatalf("a failed lookup changed the request: %s %+v", rec.Status, rec.Answers)
	}
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))
	if rec := answersOf(t, h, id); rec.Status != "resolved" {
		t.Errorf("retry after the lookup failure: status %s", rec.Status)
	}
}

// Members of reviewer groups and roles find the request among theirs
// ("/approvals mine", the Home tab) once it is posted; others do not.
func TestGroupAndRoleMembersListTheRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "authz-listed", map[string]any{
		"reviewer_groups": []any{slackemu.UserGroupLeads}, // Morgan and Alice
		"required_roles":  []any{map[string]any{"role": "legal", "members": []any{"bob@example.com"}}},
	}))
	for _, tc := range []struct {
		u      slackUser
		listed bool
	}{{alice, true}, {morgan, true}, {bob, true}, {mallory, false}} {
		page, err := h.store.ListOpen(context.Background(), store.OpenQuery{Kind: store.OpenReviewer, Reviewer: tc.u.id})
		if err != nil {
			t.Fatal(err)
		}
		listed := false
		for _, rec := range page.Items {
			listed = listed || rec.ID == id
		}
		if listed != tc.listed {
			t.Errorf("%s lists the request: %v, want %v", tc.u.id, listed, tc.listed)
		}
	}
}
