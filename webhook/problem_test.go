package webhook_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/webhook"
)

// problemAnswer is an error as RFC 9457 problem details, with the members
// clients read before them.
type problemAnswer struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Error    string `json:"error"`
	Details  []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"details"`
	Rule string `json:"rule"`
}

// Every error is application/problem+json with type, title, status, detail
// and instance, and keeps error (the same sentence as detail), details and
// rule for the clients written before.
func TestErrorsAreProblemDetails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.grantAPI(0)
	if r := a.submit(tokenPM, scaleRequest(t, "prob-1")); r.Status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
		kind, field, rule               string
	}{
		{"invalid request", http.MethodPost, "/v1/requests", tokenPM, `{"aah_version":"0.1"}`, 400, "invalid", "artifact", ""},
		{"bad query", http.MethodGet, "/v1/requests?limit=0", tokenPM, "", 400, "invalid", "limit", ""},
		{"no token", http.MethodGet, "/v1/requests/prob-1", "", "", 401, "unauthorized", "", ""},
		{"unknown request", http.MethodGet, "/v1/requests/nope", tokenPM, "", 404, "not-found", "", ""},
		{"another agent's", http.MethodGet, "/v1/requests/prob-1", tokenOther, "", 403, "forbidden", "", ""},
		{"refused decision", http.MethodPost, "/v1/requests/prob-1/answers", tokenCarol, `{"answers":{"scale":true}}`, 403, "forbidden", "", "reviewer"},
		{"withdraw", http.MethodDelete, "/v1/requests/prob-1", tokenPM, "", 200, "", "", ""},
		{"withdrawn twice", http.MethodDelete, "/v1/requests/prob-1", tokenPM, "", 409, "conflict", "", ""},
		{"no such endpoint", http.MethodGet, "/v1/requests/prob-1/nope", tokenPM, "", 404, "not-found", "", ""},
		{"an endpoint without the method", http.MethodPut, "/v1/requests/prob-1", tokenPM, "", 405, "method-not-allowed", "", ""},
	} {
		req, err := http.NewRequest(tc.method, a.srv.URL+tc.path, strings.NewReader(tc.body))
		mustNil(t, err)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := a.srv.Client().Do(req)
		mustNil(t, err)
		var p problemAnswer
		if tc.kind != "" {
			err = json.NewDecoder(resp.Body).Decode(&p)
		}
		resp.Body.Close()
		mustNil(t, err)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (%+v)", tc.name, resp.StatusCode, tc.status, p)
			continue
		}
		if tc.kind == "" {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s: Content-Type %q", tc.name, ct)
		}
		path, _, _ := strings.Cut(tc.path, "?")
		if p.Type != webhook.ProblemTypeBase+tc.kind || p.Title == "" || p.Status != tc.status ||
			p.Detail == "" || p.Error != p.Detail || p.Instance != path || p.Rule != tc.rule {
			t.Errorf("%s: %+v", tc.name, p)
		}
		if tc.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "DELETE, GET, HEAD" {
			t.Errorf("%s: Allow %q", tc.name, resp.Header.Get("Allow"))
		}
		if tc.field != "" && (len(p.Details) == 0 || !strings.HasPrefix(p.Details[0].Field, tc.field)) {
			t.Errorf("%s: details %+v, want field %s", tc.name, p.Details, tc.field)
		}
	}
}

// A handler that panicked is answered like every other error.
func TestInternalErrorIsAProblem(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	webhook.WriteInternalError(w, httptest.NewRequest(http.MethodGet, "/v1/requests/x", nil))
	var p problemAnswer
	mustNil(t, json.Unmarshal(w.Body.Bytes(), &p))
	if w.Code != 500 || w.Header().Get("Content-Type") != "application/problem+json" ||
		p.Type != webhook.ProblemTypeBase+"internal" || p.Status != 500 || p.Error != p.Detail || p.Instance != "/v1/requests/x" {
		t.Errorf("%d %q %+v", w.Code, w.Header().Get("Content-Type"), p)
	}
}
