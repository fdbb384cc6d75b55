package client_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/client"
)

// scaleAction is a gate's proposed tool call with editable parameters.
func scaleAction() client.Action {
	return client.Action{
		Tool:            "scale_service",
		Parameters:      map[string]any{"service": "checkout-api", "replicas": float64(12), "region": "eu-west-1"},
		Editable:        map[string]client.Param{"replicas": {Type: "integer", Minimum: client.Float(2), Maximum: client.Float(16)}},
		ExpectedOutcome: "p99 under 300 ms at 3x traffic",
		Reversible:      client.Bool(true),
		Cost:            420, CostUnit: "USD/day",
		Risk:          &client.Risk{Level: "medium", Factors: []string{"Raises the bill"}, Confidence: client.Float(0.8)},
		RejectReasons: []string{"Too expensive", "Wrong service"},
	}
}

// Each way a reviewer can end a gate, decided through the decision API,
// comes back as its verdict.
func TestRequireApprovalOutcomes(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	c := b.client()
	for _, tc := range []struct {
		name, verb, body string
		want             client.Verdict
	}{
		{"approve", "answers", `{"answers": {"action": true}, "comment": "go ahead"}`, client.Verdict{Outcome: client.Approved,
			Parameters: scaleAction().Parameters, Comment: "go ahead"}},
		{"reject", "reject", `{"reason": "We scaled last week", "reject_reason": "Too expensive"}`, client.Verdict{Outcome: client.Rejected,
			Reason: "We scaled last week", RejectReason: "Too expensive", Comment: "We scaled last week"}},
		{"modify", "modify", `{"decision_id": "action", "parameters": {"replicas": 8}}`, client.Verdict{Outcome: client.Modified,
			Parameters:         map[string]any{"service": "checkout-api", "replicas": float64(8), "region": "eu-west-1"},
			OriginalParameters: scaleAction().Parameters}},
		{"defer", "defer", `{"guidance": "Wait for the capacity review on Monday"}`, client.Verdict{Outcome: client.Deferred,
			Text: "Wait for the capacity review on Monday"}},
		{"change_plan", "change_plan", `{"requirement": "Scale the read replicas instead"}`, client.Verdict{Outcome: client.ChangePlan,
			Text: "Scale the read replicas instead"}},
		{"abort", "abort", `{"reason": "The launch is cancelled"}`, client.Verdict{Outcome: client.Aborted,
			Text: "The launch is cancelled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			id := "gate-" + tc.name
			type result struct {
				v   client.Verdict
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := client.RequireApproval(ctx, c, scaleAction(), &client.GateOptions{ID: id, Timeout: time.Hour,
					Context: "Traffic is forecast at 3x for tomorrow's launch."})
				done <- result{v, err}
			}()
			waitStored(t, c, id)
			b.decide(id, tc.verb, aliceToken, tc.body)
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			got := r.v
			if got.Response == nil || got.RequestID != id || got.By != "human:U0ALICE" || got.Allowed() != (tc.name == "approve" || tc.name == "modify") {
				t.Errorf("verdict: %+v", got)
			}
			got.Response, got.RequestID, got.By, got.ByName = nil, "", "", ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("verdict:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// waitStored waits until the gate's request is stored.
func waitStored(t *testing.T, c *client.Client, id string) {
	t.Helper()
	for ctx := testCtx(t); ; {
		_, err := c.Get(ctx, id)
		if err == nil {
			return
		}
		if !errors.Is(err, client.ErrNotFound) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Nobody answers: at the deadline the gate's timeout action (reject, as
// in seed 001) gives the verdict.
func TestRequireApprovalTimesOut(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	v, err := client.RequireApproval(testCtx(t), b.client(), client.Action{Tool: "delete_branch",
		Parameters: map[string]any{"branch": "old"}}, &client.GateOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if v.Outcome != client.Rejected || !v.TimedOut || v.Allowed() {
		t.Errorf("verdict: %+v", v)
	}
}

// A gate whose caller gives up withdraws its request.
func TestRequireApprovalWithdrawsWhenCancelled(t *testing.T) {
	t.Parallel()
	b := startBot(t)
	c := b.client()
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := client.RequireApproval(ctx, c, client.Action{Tool: "send_email"}, &client.GateOptions{ID: "gate-cancel"})
		done <- err
	}()
	waitStored(t, c, "gate-cancel")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	v, err := c.Get(testCtx(t), "gate-cancel")
	if err != nil || v.Status != "withdrawn" {
		t.Fatalf("after cancel: %+v, %v", v, err)
	}
}
