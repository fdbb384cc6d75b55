package slackemu

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"
)

// content is the text, blocks and attachments of a message request.
type content struct {
	text        string
	hasText     bool
	blocks      json.RawMessage // compact, nil when absent
	hasBlocks   bool
	attachments json.RawMessage // compact, nil when absent
	hasAttach   bool
}

// empty reports whether the content has nothing to show (Slack's no_text).
func (c content) empty() bool {
	return c.text == "" && isEmptyArray(c.blocks) && isEmptyArray(c.attachments)
}

func isEmptyArray(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "[]"
}

// readContent reads and validates text, blocks and attachments. On failure
// it returns the error result and false.
func readContent(req *apiRequest) (content, result, bool) {
	var c content
	c.text, c.hasText = req.params["text"]
	if utf8.RuneCountInString(c.text) > maxMessageText {
		return c, errResult("msg_too_long"), false
	}
	if raw := req.get("blocks"); raw != "" {
		blocks, err := compactArray(raw)
		if err != nil {
			return c, errResult("invalid_blocks_format"), false
		}
		if errs := ValidateBlocks(SurfaceMessage, blocks); len(errs) > 0 {
			return c, blockErrResult("invalid_blocks", errs), false
		}
		c.blocks, c.hasBlocks = blocks, true
	}
	if raw := req.get("attachments"); raw != "" {
		attachments, err := compactArray(raw)
		if err != nil {
			return c, errResult("invalid_attachments"), false
		}
		c.attachments, c.hasAttach = attachments, true
	}
	return c, result{}, true
}

// compactArray returns raw compacted, or an error if it is not a JSON array.
func compactArray(raw string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(raw)); err != nil {
		return nil, err
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '[' {
		return nil, errors.New("not an array")
	}
	return buf.Bytes(), nil
}

// compactObject returns raw compacted, or an error if it is not a JSON object.
func compactObject(raw string) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(raw)); err != nil {
		return nil, err
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, errors.New("not an object")
	}
	return buf.Bytes(), nil
}

// chatPostMessage implements chat.postMessage.
func (s *Server) chatPostMessage(req *apiRequest) result {
	conv, code := s.dir.resolve(req.get("channel"))
	if code != "" {
		return errResult(code)
	}
	if !conv.isMember {
		return errResult("not_in_channel")
	}
	if res, limited := s.checkPacing(conv.id, req.now); limited {
		return res
	}
	c, res, ok := readContent(req)
	if !ok {
		return res
	}
	if c.empty() {
		return errResult("no_text")
	}
	var metadata json.RawMessage
	if raw := req.get("metadata"); raw != "" {
		var err error
		if metadata, err = compactObject(raw); err != nil {
			return errResult("invalid_metadata_format")
		}
	}
	log := s.st.conv(conv.id)
	threadTS := req.get("thread_ts")
	if threadTS != "" {
		parent, ok := log.byTS[threadTS]
		if !ok {
			return errResult("thread_not_found")
		}
		if parent.ThreadTS != "" {
			threadTS = parent.ThreadTS // replying to a reply joins its thread
		}
	}

	m := &Message{
		Channel:     conv.id,
		TS:          s.nextTS(req.now),
		ThreadTS:    threadTS,
		User:        s.dir.ws.BotUserID,
		Text:        c.text,
		Blocks:      c.blocks,
		Attachments: c.attachments,
		Metadata:    metadata,
		Broadcast:   threadTS != "" && isTrue(req.get("reply_broadcast")),
		PostedAt:    req.now,
	}
	log.add(m)
	if conv.dmUser != nil {
		s.st.openedDMs[conv.id] = true
	}
	s.notePost(conv.id, req.now)
	s.publish(Event{Type: EventMessagePosted, At: req.now, Message: ptr(m.clone())})

	res = okResult(map[string]any{"channel": m.Channel, "ts": m.TS, "message": s.messageJSON(m)})
	res.messages = []Message{m.clone()}
	return res
}

// chatUpdate implements chat.update. Parameters that are sent replace the
// message's text, blocks, attachments and metadata; absent ones are kept.
func (s *Server) chatUpdate(req *apiRequest) result {
	m, res, ok := s.findOwnMessage(req, "ts", "cant_update_message")
	if !ok {
		return res
	}
	c, res, ok := readContent(req)
	if !ok {
		return res
	}
	if !c.hasText && !c.hasBlocks && !c.hasAttach {
		return errResult("no_text")
	}
	var metadata json.RawMessage
	if raw := req.get("metadata"); raw != "" {
		var err error
		if metadata, err = compactObject(raw); err != nil {
			return errResult("invalid_metadata_format")
		}
	}
	if !c.hasText {
		c.text = m.Text
	}
	if !req.has("blocks") {
		c.blocks = m.Blocks
	}
	if !req.has("attachments") {
		c.attachments = m.Attachments
	}
	if c.empty() {
		return errResult("no_text")
	}
	m.Text, m.Blocks, m.Attachments = c.text, c.blocks, c.attachments
	if metadata != nil {
		m.Metadata = metadata
	}
	m.Edited++
	m.EditedTS = s.nextTS(req.now)
	m.UpdatedAt = req.now
	s.publish(Event{Type: EventMessageUpdated, At: req.now, Message: ptr(m.clone())})

	res = okResult(map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text, "message": s.messageJSON(m)})
	res.messages = []Message{m.clone()}
	return res
}

// chatDelete implements chat.delete.
func (s *Server) chatDelete(req *apiRequest) result {
	m, res, ok := s.findOwnMessage(req, "ts", "cant_delete_message")
	if !ok {
		return res
	}
	s.st.convs[m.Channel].remove(m.TS)
	s.publish(Event{Type: EventMessageDeleted, At: req.now, Message: ptr(m.clone())})
	return okResult(map[string]any{"channel": m.Channel, "ts": m.TS})
}

// findOwnMessage finds the message named by the channel and tsParam
// parameters and checks that the bot wrote it (else notOwn).
func (s *Server) findOwnMessage(req *apiRequest, tsParam, notOwn string) (*Message, result, bool) {
	conv, code := s.dir.resolve(req.get("channel"))
	if code != "" {
		return nil, errResult(code), false
	}
	log := s.st.convs[conv.id]
	if log == nil || log.byTS[req.get(tsParam)] == nil {
		return nil, errResult("message_not_found"), false
	}
	m := log.byTS[req.get(tsParam)]
	if m.User != s.dir.ws.BotUserID {
		return nil, errResult(notOwn), false
	}
	return m, result{}, true
}

// chatGetPermalink implements chat.getPermalink.
func (s *Server) chatGetPermalink(req *apiRequest) result {
	conv, code := s.dir.resolve(req.get("channel"))
	if code != "" {
		return errResult(code)
	}
	log := s.st.convs[conv.id]
	if log == nil || log.byTS[req.get("message_ts")] == nil {
		return errResult("message_not_found")
	}
	m := log.byTS[req.get("message_ts")]
	return okResult(map[string]any{"channel": conv.id, "permalink": s.permalink(m.Channel, m.TS, m.ThreadTS)})
}

// Permalink returns the permalink chat.getPermalink answers for the message
// ts in channel (an id), whether or not the message exists.
func (s *Server) Permalink(channel, ts string) string {
	return s.permalink(channel, ts, "")
}

func (s *Server) permalink(channel, ts, threadTS string) string {
	link := strings.TrimSuffix(s.permalinkBase, "/") + "/archives/" + channel + "/p" + strings.Replace(ts, ".", "", 1)
	if threadTS != "" && threadTS != ts {
		link += "?" + url.Values{"thread_ts": {threadTS}, "cid": {channel}}.Encode()
	}
	return link
}

// chatPostEphemeral implements chat.postEphemeral.
func (s *Server) chatPostEphemeral(req *apiRequest) result {
	conv, code := s.dir.resolve(req.get("channel"))
	if code != "" {
		return errResult(code)
	}
	if !conv.isMember {
		return errResult("not_in_channel")
	}
	user, ok := s.dir.user(req.get("user"))
	if !ok {
		return errResult("user_not_found")
	}
	if !conv.hasMember(user.ID) {
		return errResult("user_not_in_channel")
	}
	c, res, ok := readContent(req)
	if !ok {
		return res
	}
	if c.empty() {
		return errResult("no_text")
	}
	e := Ephemeral{
		Channel:  conv.id,
		User:     user.ID,
		TS:       s.nextTS(req.now),
		ThreadTS: req.get("thread_ts"),
		Text:     c.text,
		Blocks:   c.blocks,
		PostedAt: req.now,
	}
	s.st.ephemerals = append(s.st.ephemerals, e)
	s.publish(Event{Type: EventEphemeralPosted, At: req.now, Ephemeral: ptr(e.clone())})
	return okResult(map[string]any{"message_ts": e.TS})
}

// messageJSON renders m as Slack's message object.
func (s *Server) messageJSON(m *Message) map[string]any {
	ws := &s.dir.ws
	out := map[string]any{
		"type": "message",
		"user": m.User,
		"text": m.Text,
		"ts":   m.TS,
		"team": ws.TeamID,
	}
	if m.User == ws.BotUserID {
		out["bot_id"] = ws.BotID
		out["app_id"] = ws.AppID
		out["bot_profile"] = map[string]any{
			"id": ws.BotID, "app_id": ws.AppID, "name": ws.BotName, "team_id": ws.TeamID, "deleted": false,
		}
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
		if m.Broadcast {
			out["subtype"] = "thread_broadcast"
		}
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = m.Blocks
	}
	if len(m.Attachments) > 0 {
		out["attachments"] = m.Attachments
	}
	if len(m.Metadata) > 0 {
		out["metadata"] = m.Metadata
	}
	if m.Edited > 0 {
		out["edited"] = map[string]any{"user": m.User, "ts": m.EditedTS}
	}
	return out
}

// PostAsUser stores a message written by a human user, as if they had
// posted it in Slack (e.g. to exercise cant_update_message, or to seed
// history). channel is resolved like chat.postMessage's; threadTS may be
// "". It returns the stored message, or the Slack error code.
func (s *Server) PostAsUser(channel, user, text, threadTS string) (Message, error) {
	m, err := s.postAsUser(channel, user, text, threadTS)
	if err == nil && s.onMessage != nil {
		s.onMessage(m)
	}
	return m, err
}

func (s *Server) postAsUser(channel, user, text, threadTS string) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	u, ok := s.dir.user(user)
	if !ok {
		return Message{}, errors.New("user_not_found")
	}
	conv, code := s.dir.resolve(channel)
	if code != "" {
		return Message{}, errors.New(code)
	}
	m := &Message{Channel: conv.id, TS: s.nextTS(now), ThreadTS: threadTS, User: u.ID, Text: text, PostedAt: now}
	s.st.conv(conv.id).add(m)
	s.publish(Event{Type: EventMessagePosted, At: now, Message: ptr(m.clone())})
	s.notify()
	return m.clone(), nil
}

// isTrue reports whether a form boolean is set ("true" or "1").
func isTrue(v string) bool { return v == "true" || v == "1" }

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
