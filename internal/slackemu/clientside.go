package slackemu

import (
	"encoding/json"
	"fmt"
	"time"
)

// This file serves emulated Slack *clients* (the local sandbox): what a
// person's Slack app would know in order to act on the emulator's state and
// build the interaction payloads Slack sends to apps.

// MessageObject returns m as Slack's message object, as it appears in
// conversations.history and in the "message" of a block_actions payload.
func (s *Server) MessageObject(m Message) map[string]any {
	return s.messageJSON(&m)
}

// ViewObject returns v as Slack's view object, as it appears in interaction
// payloads (block_actions from a view, view_submission, view_closed), with
// state.values set to values (nil: none entered).
func (s *Server) ViewObject(v View, values map[string]any) (map[string]any, error) {
	pv := parsedView{raw: v.JSON}
	if err := json.Unmarshal(v.JSON, &pv.fields); err != nil {
		return nil, fmt.Errorf("view %s: %w", v.ID, err)
	}
	pv.typ = pv.str("type")
	out := s.viewJSON(&v, pv)
	if values == nil {
		values = map[string]any{}
	}
	out["state"] = map[string]any{"values": values}
	if _, ok := out["close"]; !ok {
		out["close"] = nil
	}
	if _, ok := out["submit"]; !ok {
		out["submit"] = nil
	}
	return out, nil
}

// DMChannel returns the id of the DM between the bot and userID, the
// channel the bot's messages to that user land in (U0ALICE → D0ALICE).
func DMChannel(userID string) string { return dmID(userID) }

// Pacing reports whether per-channel chat.postMessage pacing is enforced,
// and its interval (see SetPacing).
func (s *Server) Pacing() (enabled bool, interval time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pacing, s.pacingInterval
}

// RecentCalls returns the last n recorded calls, oldest first, without
// copying the whole call log.
func (s *Server) RecentCalls(n int) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls := s.st.calls
	if n >= 0 && len(calls) > n {
		calls = calls[len(calls)-n:]
	}
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = copyCall(c)
	}
	return out
}
