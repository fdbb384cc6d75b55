package slackemu

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// maxBodyBytes bounds the request bodies the emulator reads.
const maxBodyBytes = 8 << 20

// apiRequest is a parsed Web API request.
type apiRequest struct {
	method string
	token  string
	// params holds the form, query and JSON body parameters (body wins over
	// query). JSON values that are not strings are kept as their JSON text.
	// The token is not included.
	params map[string]string
	now    time.Time
}

// get returns the parameter key, or "".
func (r *apiRequest) get(key string) string { return r.params[key] }

// has reports whether the parameter key was sent.
func (r *apiRequest) has(key string) bool {
	_, ok := r.params[key]
	return ok
}

// parseRequest extracts the method, token and parameters of r. The second
// result is a Slack error code when the body could not be parsed.
func parseRequest(r *http.Request) (*apiRequest, string) {
	req := &apiRequest{method: path.Base(r.URL.Path), params: map[string]string{}}
	if req.method == "/" || req.method == "." {
		req.method = ""
	}
	for k, v := range r.URL.Query() {
		req.params[k] = v[0]
	}

	parseErr := parseBody(r, req.params)

	if auth := r.Header.Get("Authorization"); auth != "" {
		if tok, ok := strings.CutPrefix(auth, "Bearer "); ok {
			req.token = strings.TrimSpace(tok)
		}
	}
	if req.token == "" {
		req.token = req.params["token"]
	}
	delete(req.params, "token")
	return req, parseErr
}

// parseBody merges the body's parameters into params according to the
// request's Content-Type.
func parseBody(r *http.Request, params map[string]string) string {
	if r.Body == nil || r.Body == http.NoBody {
		return ""
	}
	ctype, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ctype == "multipart/form-data" {
		r.Body = io.NopCloser(io.LimitReader(r.Body, maxBodyBytes))
		if err := r.ParseMultipartForm(maxBodyBytes); err != nil {
			return "invalid_form_data"
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		return ""
	}

	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	if err != nil {
		return "request_timeout"
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	switch ctype {
	case "application/json":
		return parseJSONBody(body, params)
	case "application/x-www-form-urlencoded", "":
		values, err := url.ParseQuery(string(body))
		if err != nil {
			return "invalid_form_data"
		}
		for k, v := range values {
			params[k] = v[0]
		}
		return ""
	default:
		return "invalid_form_data"
	}
}

// parseJSONBody merges the top-level keys of a JSON object body into
// params: strings as their value, other values (objects, arrays, numbers,
// booleans) as compact JSON text; nulls are dropped.
func parseJSONBody(body []byte, params map[string]string) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return "invalid_json"
	}
	for k, raw := range obj {
		raw = bytes.TrimSpace(raw)
		switch {
		case len(raw) == 0 || string(raw) == "null":
			continue
		case raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "invalid_json"
			}
			params[k] = s
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				return "invalid_json"
			}
			params[k] = buf.String()
		}
	}
	return ""
}
