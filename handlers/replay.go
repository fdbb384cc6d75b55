package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"
)

// ReplayStore remembers the Slack requests already applied;
// *store.Store implements it.
type ReplayStore interface {
	FirstSlackRequest(ctx context.Context, id string, ttl time.Duration) (bool, error)
}

// replayTTL is how long a signed HTTP request is remembered. A request
// verifies while its timestamp is within five minutes of the verifying
// clock, either way: first seen as early as 5 minutes before its timestamp,
// it can be replayed until 5 minutes after it, 10 minutes in all; 5 more
// cover clocks of bot processes that disagree.
const replayTTL = 15 * time.Minute

// envelopeTTL is how long a Socket Mode envelope id is remembered: as long
// as an event id, since Slack redelivers both the same way.
const envelopeTTL = eventDedupTTL

// httpRequestID names a signed HTTP request for replay detection: the
// SHA-256 of exactly what its signature covers, "v0:<timestamp>:<body>".
//
// Why this and not fields of the payload (user, action_ts, trigger_id, view
// hash): without the signing secret the only replay anyone can make is the
// captured request byte for byte, since changing any byte of the timestamp
// or body breaks the signature, so this digest catches every replay, for
// interactions and slash commands alike, before anything is parsed. Slack
// itself never sends one interaction or command twice, and two genuine
// requests never share it (each has its own trigger id), so nothing genuine
// is dropped. Not the X-Slack-Signature header: it is compared after hex
// decoding, so a replay with the hex in upper case would verify under
// another key.
func httpRequestID(r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write([]byte("v0:" + r.Header.Get("X-Slack-Request-Timestamp") + ":"))
	h.Write(body)
	return "http:" + hex.EncodeToString(h.Sum(nil))
}

// firstApplied reports whether the Slack request named id is applied for
// the first time. Without a ReplayStore every request is.
func (s *Slack) firstApplied(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	if s.opts.Replays == nil {
		return true, nil
	}
	return s.opts.Replays.FirstSlackRequest(ctx, id, ttl)
}

// replayed reports whether a verified HTTP request is applied for the first
// time; a replay is counted and logged here, and its caller answers it 200
// with nothing (the original was acked; the replay changes nothing and its
// sender learns nothing). An error means Redis could not tell, and the
// request must not be applied: it might apply twice.
func (s *Slack) replayed(ctx context.Context, r *http.Request, body []byte) (first bool, err error) {
	id := httpRequestID(r, body)
	first, err = s.firstApplied(ctx, id, replayTTL)
	if err == nil && !first {
		s.metrics.replays.WithLabelValues("http").Inc()
		s.log.WarnContext(ctx, "replayed Slack request ignored: this signed request was already applied",
			"path", r.URL.Path, "request", id, "remote", r.RemoteAddr)
	}
	return first, err
}
