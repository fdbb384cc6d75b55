package client

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// FieldError names one offending field of a refused call (the answer's
// "details").
type FieldError = aah.FieldError

// Sentinels an *APIError matches with errors.Is, by its status:
//
//	if errors.Is(err, client.ErrNotFound) { … }
var (
	ErrInvalid      = errors.New("approvalbot: invalid")      // 400
	ErrUnauthorized = errors.New("approvalbot: unauthorized") // 401
	ErrForbidden    = errors.New("approvalbot: forbidden")    // 403
	ErrNotFound     = errors.New("approvalbot: not found")    // 404
	ErrConflict     = errors.New("approvalbot: conflict")     // 409
	ErrTooLarge     = errors.New("approvalbot: too large")    // 413
	ErrRateLimited  = errors.New("approvalbot: rate limited") // 429
	ErrUnavailable  = errors.New("approvalbot: unavailable")  // 503
)

// APIError is a non-2xx answer of the API. It reads both shapes the bot
// answers with: {"error", "details"} and RFC 9457 problem details
// (application/problem+json: type, title, status, detail), which keep
// those members.
type APIError struct {
	// Status is the HTTP status (the problem's "status" when the body has
	// one and the HTTP status is missing).
	Status int
	// Code says which refusal it is, for programs: the problem's "code"
	// or the decision API's "rule" (reviewer, self_approval, closed…), a
	// 429's limit ("rate", "open_cap"), the last segment of the problem's
	// "type", or else a name of the status (not_found, conflict…).
	Code string
	// Message is the bot's sentence ("error", else the problem's
	// "detail" or "title").
	Message string
	// Details names each offending field (400s).
	Details []FieldError
	// Field is the field a decision API refusal is about, when it names one.
	Field string
	// RetryAfter is the Retry-After the bot sent (429, 503), 0 without one.
	RetryAfter time.Duration
	// Body is the answer as received.
	Body []byte
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "approvalbot: %d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	for _, d := range e.Details {
		fmt.Fprintf(&b, "; %s: %s", d.Field, d.Message)
	}
	return b.String()
}

// Is matches the sentinels by status.
func (e *APIError) Is(target error) bool {
	want, ok := sentinelStatus[target]
	return ok && e.Status == want
}

var sentinelStatus = map[error]int{
	ErrInvalid: http.StatusBadRequest, ErrUnauthorized: http.StatusUnauthorized, ErrForbidden: http.StatusForbidden,
	ErrNotFound: http.StatusNotFound, ErrConflict: http.StatusConflict, ErrTooLarge: http.StatusRequestEntityTooLarge,
	ErrRateLimited: http.StatusTooManyRequests, ErrUnavailable: http.StatusServiceUnavailable,
}

var statusCodes = map[int]string{
	400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict",
	413: "too_large", 415: "unsupported_media_type", 429: "rate_limited", 503: "unavailable",
}

// apiError builds the *APIError of a non-2xx answer.
func apiError(res result) *APIError {
	var body struct {
		Type    string       `json:"type"`
		Title   string       `json:"title"`
		Status  int          `json:"status"`
		Detail  string       `json:"detail"`
		Error   string       `json:"error"`
		Details []FieldError `json:"details"`
		Code    string       `json:"code"`
		Rule    string       `json:"rule"`
		Field   string       `json:"field"`
		Limit   *struct {
			Name string `json:"name"`
		} `json:"limit"`
	}
	_ = json.Unmarshal(res.body, &body) // a body that is not JSON leaves a bare status
	e := &APIError{Status: cmp.Or(res.status, body.Status), Details: body.Details, Field: body.Field, Body: res.body}
	e.Message = cmp.Or(body.Error, body.Detail, body.Title)
	if e.Message == "" && len(res.body) > 0 && len(res.body) < 512 && !json.Valid(res.body) {
		e.Message = strings.TrimSpace(string(res.body))
	}
	var limit, typ string
	if body.Limit != nil {
		limit = body.Limit.Name
	}
	if body.Type != "" && body.Type != "about:blank" {
		typ = problemCode(body.Type)
	}
	e.Code = cmp.Or(body.Code, body.Rule, limit, typ, statusCodes[e.Status])
	if res.header != nil {
		e.RetryAfter, _ = retryAfter(res.header.Get("Retry-After"), time.Now())
	}
	return e
}

// problemCode names a problem type for programs: the bot's types are
// anchors of its API documentation (".../docs/api.md#problem-not-found"),
// named here as the statuses are ("not_found"); another URI's last path
// segment is its name.
func problemCode(typ string) string {
	if _, frag, ok := strings.Cut(typ, "#"); ok {
		if name, ok := strings.CutPrefix(frag, "problem-"); ok {
			return strings.ReplaceAll(name, "-", "_")
		}
		return frag
	}
	return path.Base(strings.TrimRight(typ, "/"))
}
