package aah_test

import (
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// reviewRequest is a request with an approval decision "deploy" carrying the
// review extension, and a plain approval "plain".
func reviewRequest(t testing.TB) *aah.Request {
	t.Helper()
	raw := `{"aah_version":"0.1","artifact":{"id":"req_r","type":"decision/request","title":"Scale"},` +
		`"source":{"agent_id":"agent-7"},"content":{"body":{"schema":"aah:decision/request@1.0","data":{"decisions":[` +
		`{"id":"deploy","type":"approval","prompt":"Scale the API?","required":true},` +
		`{"id":"plain","type":"approval","prompt":"Notify users?","required":false}]}}},` +
		`"extensions":{"decisions":{"deploy":{"proposed_action":{"tool_name":"scale_service","parameters":{"service":"api","replicas":6}},` +
		`"responses":["approve","reject","modify","defer","change_plan","abort"],` +
		`"editable":{"replicas":{"type":"integer","minimum":1,"maximum":10}},"reject_reasons":["Too expensive","Wrong service"]}}}}`
	return mustParse(t, []byte(raw), aah.ParseOptions{Now: seedNow})
}

func responseAt(t testing.TB, resp *aah.Response, path string) string {
	t.Helper()
	return rawJSON(t, decodeDoc(t, resp.JSON()), "content.body.data."+path)
}

func TestBuildResponseModify(t *testing.T) {
	t.Parallel()
	req := reviewRequest(t)
	d, _ := req.Decision("deploy")
	full, err := aah.CheckParameters(d, map[string]any{"replicas": 4.0})
	if err != nil {
		t.Fatal(err)
	}
	a := answer("deploy", true, "", alice, answeredAt)
	a.Verb, a.Parameters = aah.VerbModify, full
	resp := build(req, map[string]aah.Answer{"deploy": a, "plain": answer("plain", true, "", alice, answeredAt)}, alice, "")
	for path, want := range map[string]string{
		"responses[0].approved":            `true`,
		"responses[0].action":              `"modify"`,
		"responses[0].modified":            `true`,
		"responses[0].parameters":          `{"replicas":4,"service":"api"}`,
		"responses[0].original_parameters": `{"replicas":6,"service":"api"}`,
		"responses[0].reject_reason":       `<absent>`,
		"responses[1].action":              `<absent>`, // no review extension: as before
		"responses[1].modified":            `<absent>`,
		"overall_status":                   `"all_approved"`,
		"summary":                          `"Approved: Scale the API? (modified: replicas 6 → 4), Notify users?."`,
		"directive":                        `<absent>`,
	} {
		if got := responseAt(t, resp, path); got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
}

func TestBuildResponseActionRejectReasonGrant(t *testing.T) {
	t.Parallel()
	req := reviewRequest(t)
	rej := answer("deploy", false, "Use 3 at most", alice, answeredAt)
	rej.RejectReason = "Too expensive"
	resp := build(req, map[string]aah.Answer{"deploy": rej}, alice, "")
	for path, want := range map[string]string{
		"responses[0].approved":      `false`,
		"responses[0].action":        `"reject"`,
		"responses[0].reject_reason": `"Too expensive"`,
		"responses[0].comment":       `"Use 3 at most"`,
		"responses[0].modified":      `<absent>`,
		"summary":                    `"Rejected: Scale the API? (Too expensive; Use 3 at most). Notify users?: no answer."`,
	} {
		if got := responseAt(t, resp, path); got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}

	// Grants keep milliseconds; the response writes them to the second.
	grant := &aah.GrantRef{ID: "g1", ActionKey: "scale_service", Agent: "ops-bot", By: bob,
		GrantedAt: answeredAt.Add(207 * time.Millisecond), ExpiresAt: answeredAt.Add(time.Hour + 207*time.Millisecond), FromRequest: "req_0"}
	ok := answer("deploy", true, "", bob, answeredAt)
	ok.Grant = grant
	resp = build(req, map[string]aah.Answer{"deploy": ok}, aah.Person{}, "")
	if got, want := string(resp.JSON()),
		`"grant":{"id":"g1","action_key":"scale_service","agent":"ops-bot","by":{"id":"U0BOB","name":"Bob Example"},`+
			`"granted_at":"2026-02-16T14:00:00Z","expires_at":"2026-02-16T15:00:00Z","from_request":"req_0"}}`; !strings.Contains(got, want) {
		t.Errorf("response %s\ndoes not hold %s", got, want)
	}
	if got := responseAt(t, resp, "responses[0].action"); got != `"approve"` {
		t.Errorf("action = %s, want approve", got)
	}
	// A rejection's reason is not carried on an approval.
	ok.RejectReason = "stale"
	if got := responseAt(t, build(req, map[string]aah.Answer{"deploy": ok}, bob, ""), "responses[0].reject_reason"); got != `<absent>` {
		t.Errorf("approval carries reject_reason %s", got)
	}
}

func TestBuildResponseDirective(t *testing.T) {
	t.Parallel()
	req := reviewRequest(t)
	at := answeredAt.Add(90*time.Second + 300*time.Millisecond)
	for _, tc := range []struct {
		verb            aah.Verb
		field, sentence string
	}{
		{aah.VerbDefer, "guidance", "Deferred by Alice Example: try a smaller batch."},
		{aah.VerbChangePlan, "requirement", "Alice Example asked for a change of plan: try a smaller batch."},
		{aah.VerbAbort, "reason", "Aborted by Alice Example: try a smaller batch."},
	} {
		t.Run(string(tc.verb), func(t *testing.T) {
			t.Parallel()
			dir := &aah.Directive{Verb: tc.verb, Text: "try a smaller\nbatch", By: alice, At: at}
			answers := map[string]aah.Answer{"plain": answer("plain", true, "", alice, answeredAt)}
			resp := aah.BuildResponse(req, answers, aah.ResponseOptions{ID: "resp", CreatedAt: resolvedAt, ResolvedBy: alice, Directive: dir})
			want := `"directive":{"action":"` + string(tc.verb) + `","` + tc.field + `":"try a smaller\nbatch",` +
				`"decided_by":{"id":"U0ALICE","name":"Alice Example"},"decided_at":"2026-02-16T14:01:30Z"}`
			if got := string(resp.JSON()); !strings.Contains(got, want) {
				t.Errorf("response %s\ndoes not hold %s", got, want)
			}
			if got := responseAt(t, resp, "overall_status"); got != `"pending"` {
				t.Errorf("overall_status = %s, want pending", got)
			}
			wantSummary := tc.sentence + " Approved: Notify users?. Scale the API?: no answer."
			if got := resp.Content.Body.Data.Summary; got != wantSummary {
				t.Errorf("summary = %q\nwant %q", got, wantSummary)
			}
			if got := responseAt(t, resp, "responses[1].approved"); got != `true` {
				t.Errorf("answers so far not listed: %s", got)
			}
		})
	}
	long := &aah.Directive{Verb: aah.VerbAbort, Text: strings.Repeat("stop ", 400), By: aah.Person{ID: "U0X"}, At: at}
	resp := aah.BuildResponse(req, nil, aah.ResponseOptions{ID: "r", CreatedAt: resolvedAt, Directive: long})
	if s := resp.Content.Body.Data.Summary; !strings.HasPrefix(s, "Aborted by U0X: stop stop") || len([]rune(s)) > aah.MaxSummaryLength {
		t.Errorf("long directive summary = %q", s)
	}
	if resp.Content.Body.Data.Directive.Reason != long.Text {
		t.Error("the directive's reason was shortened; only the summary may be")
	}
}

func TestAnswersSoFarShowsReviewFields(t *testing.T) {
	t.Parallel()
	req := reviewRequest(t)
	rej := answer("deploy", false, "", alice, answeredAt)
	rej.RejectReason = "Wrong service"
	got := aah.AnswersSoFar(req, map[string]aah.Answer{"deploy": rej})
	if got[0].Action != aah.VerbReject || got[0].RejectReason != "Wrong service" || got[0].DecidedBy == nil {
		t.Errorf("AnswersSoFar[0] = %+v", got[0])
	}
	if got[1].Action != "" || got[1].Answered == nil {
		t.Errorf("AnswersSoFar[1] = %+v", got[1])
	}
}
