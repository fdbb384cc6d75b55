package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// Delivery is one request the callback inbox received: a decision response
// approvalbot POSTed to a handoff.response_url pointing at the sandbox.
type Delivery struct {
	ID         uint64            `json:"id"`
	At         time.Time         `json:"at"`
	Path       string            `json:"path"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"` // indented when it is JSON
	Verified   bool              `json:"verified"`
	VerifyNote string            `json:"verify_note,omitempty"` // why the signature did not verify
	Status     int               `json:"status"`                // what the inbox answered
}

// handleInbox is POST /inbox[/…]: an agent's callback endpoint. It checks
// the Standard Webhooks signature with the callback secret, as an agent
// must, and answers 204, or 401 for a bad signature (so delivery retries
// show too).
func (sb *Sandbox) handleInbox(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	d := Delivery{At: sb.opts.Now(), Path: r.URL.Path, Headers: map[string]string{}, Status: http.StatusNoContent}
	for _, h := range []string{"Content-Type", "User-Agent", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
		if v := r.Header.Get(h); v != "" {
			d.Headers[h] = v
		}
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		d.Body = pretty.String()
	} else {
		d.Body = string(body)
	}
	d.Status = http.StatusUnauthorized
	for i, wh := range sb.whs { // CALLBACK_SECRET's, then the agents' own
		err := wh.Verify(body, r.Header)
		if err == nil {
			d.Verified, d.VerifyNote, d.Status = true, "", http.StatusNoContent
			break
		}
		if i == 0 {
			d.VerifyNote = err.Error()
		}
	}
	sb.log.InfoContext(r.Context(), "sandbox inbox: decision response received", "path", d.Path,
		"webhook_id", d.Headers["Webhook-Id"], "verified", d.Verified)
	sb.mu.Lock()
	d.ID = sb.st.next()
	sb.st.inbox = append(sb.st.inbox, d)
	if len(sb.st.inbox) > maxKept {
		sb.st.inbox = sb.st.inbox[1:]
	}
	sb.notify()
	sb.mu.Unlock()
	if !d.Verified {
		http.Error(w, "bad signature: "+d.VerifyNote, http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Inbox returns what the callback inbox received, oldest first.
func (sb *Sandbox) Inbox() []Delivery {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	out := make([]Delivery, len(sb.st.inbox))
	copy(out, sb.st.inbox)
	return out
}
