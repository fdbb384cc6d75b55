package sandbox

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// ack is the bot's answer to one request, or the reason Slack would have
// given up on it.
type ack struct {
	Status   int
	Body     []byte
	Type     string // Content-Type of Body
	Elapsed  time.Duration
	TimedOut bool // no answer within the ack deadline: Slack's operation_timeout
}

// failure is the Slack error code the person would see for a, or "".
func (a ack) failure() string {
	switch {
	case a.TimedOut:
		return "operation_timeout"
	case a.Status < 200 || a.Status > 299:
		return fmt.Sprintf("dispatch_failed (HTTP %d)", a.Status)
	}
	return ""
}

// signV0 is Slack's request signature: "v0=" + hex(HMAC-SHA256(secret,
// "v0:<timestamp>:<body>")).
func signV0(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// deliver sends a signed request to the bot's handler in process, as Slack
// sends it over HTTP, and waits at most the ack deadline for the answer. A
// late answer is dropped, as Slack drops it; the handler still runs to its
// end.
func (sb *Sandbox) deliver(ctx context.Context, path, contentType string, body []byte) ack {
	h := sb.bot.Load()
	if h == nil {
		sb.log.WarnContext(ctx, "sandbox: the bot is not attached yet", "path", path)
		return ack{Status: http.StatusServiceUnavailable}
	}
	now := sb.opts.Now()
	// Slack does not cancel a request because the person closed the tab.
	req := httptest.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("X-Slack-Signature", signV0(sb.opts.SigningSecret, now.Unix(), body))
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		(*h).ServeHTTP(rec, req)
	}()
	start := time.Now()
	timer := time.NewTimer(sb.opts.AckTimeout)
	defer timer.Stop()
	select {
	case <-done:
		a := ack{Status: rec.Code, Body: rec.Body.Bytes(), Type: rec.Header().Get("Content-Type"), Elapsed: time.Since(start)}
		sb.log.DebugContext(ctx, "sandbox: sent to the bot", "path", path, "status", a.Status, "elapsed", a.Elapsed)
		return a
	case <-timer.C:
		sb.log.WarnContext(ctx, "sandbox: the bot did not answer within Slack's ack deadline; Slack would show operation_timeout",
			"path", path, "deadline", sb.opts.AckTimeout)
		return ack{TimedOut: true, Elapsed: time.Since(start)}
	}
}

// deliverPayload sends an interaction payload: form-encoded, one field.
func (sb *Sandbox) deliverPayload(ctx context.Context, payload map[string]any) (ack, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return ack{}, fmt.Errorf("encode %v payload: %w", payload["type"], err)
	}
	body := []byte("payload=" + url.QueryEscape(string(raw)))
	return sb.deliver(ctx, "/slack/interactions", "application/x-www-form-urlencoded", body), nil
}

// userObject is the "user" of interaction payloads.
func (sb *Sandbox) userObject(u slackemu.User) map[string]any {
	return map[string]any{"id": u.ID, "username": u.Name, "name": u.Name, "team_id": sb.ws.TeamID}
}

// envelope returns the fields every interaction payload starts with.
func (sb *Sandbox) envelope(typ string, u slackemu.User) map[string]any {
	return map[string]any{
		"type":                  typ,
		"team":                  map[string]any{"id": sb.ws.TeamID, "domain": sb.ws.Domain},
		"user":                  sb.userObject(u),
		"api_app_id":            sb.ws.AppID,
		"token":                 verificationToken,
		"is_enterprise_install": false,
		"enterprise":            nil,
	}
}

// verificationToken stands in for Slack's deprecated verification token,
// which payloads still carry; approvalbot checks signatures instead.
const verificationToken = "sandboxVerificationToken"

// trigger issues a trigger id for an action of user, remembering whose it
// is so the modal the bot opens with it is shown to them.
func (sb *Sandbox) trigger(user string) string {
	id := sb.emu.IssueTriggerID()
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.st.triggers[id] = user
	return id
}

// slackTS formats t as a Slack timestamp.
func slackTS(t time.Time) string {
	us := t.UnixMicro()
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}
