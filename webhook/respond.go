package webhook

import (
	"encoding/json"
	"net/http"

	"github.com/approvalbot/approvalbot/aah"
)

// errorBody is every API error: a sentence and, for validation, one entry per
// offending field.
type errorBody struct {
	Error   string           `json:"error"`
	Details []aah.FieldError `json:"details,omitempty"`
	// Limit names the per-agent limit a 429 is about (limits.go).
	Limit *limitBody `json:"limit,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string, details ...aah.FieldError) {
	writeJSON(w, status, errorBody{Error: msg, Details: details})
}
