package webhook

import (
	"encoding/json"
	"net/http"

	"github.com/approvalbot/approvalbot/aah"
)

// problem is every API error: an RFC 9457 problem details object
// (application/problem+json) that also keeps the members clients read
// before it: error (the sentence, the same as detail) and, for validation,
// details (one entry per offending field). Refused decisions add the rule
// that refused them, 429s the limit they are about (limits.go).
type problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`

	Error   string           `json:"error"`
	Details []aah.FieldError `json:"details,omitempty"`
	Rule    string           `json:"rule,omitempty"`
	Limit   *limitBody       `json:"limit,omitempty"`
}

// ProblemTypeBase starts every problem type URI; the fragment names the
// kind of problem (docs/api.md#errors lists them).
const ProblemTypeBase = "https://github.com/approvalbot/approvalbot/blob/main/docs/api.md#problem-"

// Problem kinds: the fragment of a problem's type and its title.
var problemTitles = map[string]string{
	"invalid":                "The request is invalid",
	"policy":                 "Refused by the workspace's authorization policy",
	"unauthorized":           "Missing or invalid bearer token",
	"forbidden":              "Not allowed",
	"not-found":              "Not found",
	"method-not-allowed":     "Method not allowed",
	"conflict":               "Conflicts with the current state",
	"too-large":              "The body is too large",
	"unsupported-media-type": "Unsupported media type",
	"rate-limited":           "Rate limit exceeded",
	"too-many-open":          "Too many open requests",
	"internal":               "Internal error",
	"unavailable":            "Temporarily unavailable",
}

// kindOf is the problem kind of a status, when the caller names none.
func kindOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not-found"
	case http.StatusMethodNotAllowed:
		return "method-not-allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "too-large"
	case http.StatusUnsupportedMediaType:
		return "unsupported-media-type"
	case http.StatusTooManyRequests:
		return "rate-limited"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	return "internal"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, "application/json; charset=utf-8", status, v)
}

func writeBody(w http.ResponseWriter, contentType string, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeProblem is the one writer of every API error. kind is the problem
// kind (problemTitles); "" takes the status's. The instance is the path the
// error answered.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, kind string, p problem) {
	if kind == "" {
		kind = kindOf(status)
	}
	p.Type, p.Title, p.Status, p.Detail = ProblemTypeBase+kind, problemTitles[kind], status, p.Error
	if r != nil {
		p.Instance = r.URL.Path
	}
	writeBody(w, "application/problem+json", status, p)
}

// writeError answers an error: a sentence and, for validation, one entry
// per offending field.
func writeError(w http.ResponseWriter, r *http.Request, status int, msg string, details ...aah.FieldError) {
	writeProblem(w, r, status, "", problem{Error: msg, Details: details})
}

// writeRefused answers a refused decision (or grant): the reason a Slack
// click is given, the rule that refused it, and the field it is about.
func writeRefused(w http.ResponseWriter, r *http.Request, status int, msg, rule string, details ...aah.FieldError) {
	writeProblem(w, r, status, "", problem{Error: msg, Rule: rule, Details: details})
}

// WriteInternalError answers 500 as every API error is answered (a problem
// details object): for a handler that panicked (the bot's recoverPanics).
func WriteInternalError(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, http.StatusInternalServerError, "internal error")
}
