package slackemu

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Limits of conversations.history / conversations.replies pagination.
const (
	defaultHistoryLimit = 100
	maxHistoryLimit     = 999
)

// authTest implements auth.test.
func (s *Server) authTest(*apiRequest) result {
	ws := &s.dir.ws
	return okResult(map[string]any{
		"url":                   "https://" + ws.Domain + ".slack.com/",
		"team":                  ws.TeamName,
		"user":                  ws.BotName,
		"team_id":               ws.TeamID,
		"user_id":               ws.BotUserID,
		"bot_id":                ws.BotID,
		"is_enterprise_install": false,
	})
}

// conversationsOpen implements conversations.open for one-to-one DMs: the
// DM with user U… has the stable id dmID(U…). Multi-person DMs are not
// emulated and answer "emulator_mpim_unsupported".
func (s *Server) conversationsOpen(req *apiRequest) result {
	var conv conversation
	switch {
	case req.get("channel") != "":
		u, ok := s.dir.dmUser(req.get("channel"))
		if !ok {
			return errResult("channel_not_found")
		}
		var code string
		if conv, code = s.dir.dm(u); code != "" {
			return errResult(code)
		}
	case req.get("users") != "":
		users := strings.Split(req.get("users"), ",")
		if len(users) > 1 {
			return errResult("emulator_mpim_unsupported")
		}
		u, ok := s.dir.user(strings.TrimSpace(users[0]))
		if !ok {
			return errResult("user_not_found")
		}
		var code string
		if conv, code = s.dir.dm(u); code != "" {
			return errResult(code)
		}
	default:
		return errResult("users_list_not_supplied")
	}
	already := s.st.openedDMs[conv.id]
	s.st.openedDMs[conv.id] = true
	return okResult(map[string]any{
		"no_op":        already,
		"already_open": already,
		"channel":      s.conversationJSON(conv),
	})
}

// conversationJSON renders conv as Slack's conversation object.
func (s *Server) conversationJSON(conv conversation) map[string]any {
	if conv.dmUser != nil {
		return map[string]any{
			"id": conv.id, "is_im": true, "is_org_shared": false, "user": conv.dmUser.ID,
			"is_user_deleted": conv.dmUser.Deleted, "priority": 0, "created": 1700000000,
		}
	}
	c := conv.channel
	return map[string]any{
		"id": c.ID, "name": c.Name, "name_normalized": c.Name, "is_channel": !c.IsPrivate,
		"is_group": c.IsPrivate, "is_im": false, "is_mpim": false, "is_private": c.IsPrivate,
		"is_archived": false, "is_general": c.Name == "general", "is_member": c.IsMember,
		"created": 1700000000, "context_team_id": s.dir.ws.TeamID,
	}
}

// conversationsInfo implements conversations.info.
func (s *Server) conversationsInfo(req *apiRequest) result {
	conv, code := s.dir.resolve(req.get("channel"))
	if code != "" {
		return errResult("channel_not_found")
	}
	return okResult(map[string]any{"channel": s.conversationJSON(conv)})
}

// conversationsHistory implements conversations.history: top-level messages
// (and thread broadcasts), newest first, with limit, latest, oldest,
// inclusive, cursor and include_all_metadata.
func (s *Server) conversationsHistory(req *apiRequest) result {
	conv, code := s.dir.resolveID(req.get("channel"))
	if code != "" {
		return errResult(code)
	}
	if !conv.isMember {
		return errResult("not_in_channel")
	}
	latest, okL := parseTSParam(req.get("latest"))
	oldest, okO := parseTSParam(req.get("oldest"))
	if !okL || !okO {
		return errResult("invalid_ts_latest")
	}
	inclusive := isTrue(req.get("inclusive"))

	var msgs []*Message
	replies := map[string][]*Message{}
	if log := s.st.convs[conv.id]; log != nil {
		for _, m := range log.msgs {
			if m.ThreadTS != "" && m.ThreadTS != m.TS {
				replies[m.ThreadTS] = append(replies[m.ThreadTS], m)
				if !m.Broadcast {
					continue
				}
			}
			at, _ := parseTSParam(m.TS)
			if (latest > 0 && (at > latest || at == latest && !inclusive)) ||
				(oldest > 0 && (at < oldest || at == oldest && !inclusive)) {
				continue
			}
			msgs = append(msgs, m)
		}
	}
	for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
		msgs[i], msgs[j] = msgs[j], msgs[i] // newest first
	}
	page, next, res, ok := paginate(req, msgs)
	if !ok {
		return res
	}
	out := make([]any, len(page))
	withMetadata := isTrue(req.get("include_all_metadata"))
	for i, m := range page {
		out[i] = withoutMetadata(s.threadJSON(m, replies[m.TS]), withMetadata)
	}
	return historyResult(out, next)
}

// conversationsReplies implements conversations.replies: the thread's
// parent then its replies, oldest first.
func (s *Server) conversationsReplies(req *apiRequest) result {
	conv, code := s.dir.resolveID(req.get("channel"))
	if code != "" {
		return errResult(code)
	}
	if !conv.isMember {
		return errResult("not_in_channel")
	}
	log := s.st.convs[conv.id]
	if log == nil || log.byTS[req.get("ts")] == nil {
		return errResult("thread_not_found")
	}
	parent := log.byTS[req.get("ts")]
	if parent.ThreadTS != "" {
		if p := log.byTS[parent.ThreadTS]; p != nil {
			parent = p
		}
	}
	var replies []*Message
	for _, m := range log.msgs {
		if m.ThreadTS == parent.TS && m.TS != parent.TS {
			replies = append(replies, m)
		}
	}
	page, next, res, ok := paginate(req, append([]*Message{parent}, replies...))
	if !ok {
		return res
	}
	out := make([]any, len(page))
	withMetadata := isTrue(req.get("include_all_metadata"))
	for i, m := range page {
		if m == parent {
			out[i] = withoutMetadata(s.threadJSON(m, replies), withMetadata)
		} else {
			out[i] = withoutMetadata(s.messageJSON(m), withMetadata)
		}
	}
	return historyResult(out, next)
}

// threadJSON renders m, adding the thread properties Slack shows on a
// thread's parent when it has replies.
func (s *Server) threadJSON(m *Message, replies []*Message) map[string]any {
	j := s.messageJSON(m)
	if len(replies) == 0 || (m.ThreadTS != "" && m.ThreadTS != m.TS) {
		return j
	}
	users := []string{}
	for _, r := range replies {
		if !slices.Contains(users, r.User) {
			users = append(users, r.User)
		}
	}
	j["thread_ts"] = m.TS
	j["reply_count"] = len(replies)
	j["reply_users"] = users
	j["reply_users_count"] = len(users)
	j["latest_reply"] = replies[len(replies)-1].TS
	return j
}

// withoutMetadata drops a message's metadata unless keep is set: like
// Slack, conversations.history and conversations.replies return message
// metadata only when asked with include_all_metadata.
func withoutMetadata(j map[string]any, keep bool) map[string]any {
	if !keep {
		delete(j, "metadata")
	}
	return j
}

// paginate applies the limit and cursor parameters to msgs, returning the
// page and the cursor of the next one ("" when there is none).
func paginate(req *apiRequest, msgs []*Message) ([]*Message, string, result, bool) {
	limit := defaultHistoryLimit
	if l := req.get("limit"); l != "" && l != "0" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return nil, "", errResult("invalid_limit"), false
		}
		limit = min(n, maxHistoryLimit)
	}
	offset := 0
	if c := req.get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		n, ok := strings.CutPrefix(string(raw), "offset:")
		if err != nil || !ok {
			return nil, "", errResult("invalid_cursor"), false
		}
		if offset, err = strconv.Atoi(n); err != nil || offset < 0 {
			return nil, "", errResult("invalid_cursor"), false
		}
	}
	offset = min(offset, len(msgs))
	end := min(offset+limit, len(msgs))
	next := ""
	if end < len(msgs) {
		next = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "offset:%d", end))
	}
	return msgs[offset:end], next, result{}, true
}

func historyResult(msgs []any, next string) result {
	fields := map[string]any{"messages": msgs, "has_more": next != "", "pin_count": 0}
	if next != "" {
		fields["response_metadata"] = map[string]any{"next_cursor": next}
	}
	return okResult(fields)
}

// parseTSParam parses a message ts ("1700000000.000100") into microseconds;
// "" is 0.
func parseTSParam(ts string) (int64, bool) {
	if ts == "" {
		return 0, true
	}
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, false
	}
	frac = (frac + "000000")[:6]
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, false
	}
	return s*1e6 + f, true
}

// usersInfo implements users.info, for one user or (users=…) several.
func (s *Server) usersInfo(req *apiRequest) result {
	if list := req.get("users"); list != "" && req.get("user") == "" {
		var users []any
		for id := range strings.SplitSeq(list, ",") {
			u, ok := s.dir.user(strings.TrimSpace(id))
			if !ok {
				return errResult("user_not_found")
			}
			users = append(users, s.userJSON(u))
		}
		return okResult(map[string]any{"users": users})
	}
	u, ok := s.dir.user(req.get("user"))
	if !ok {
		return errResult("user_not_found")
	}
	return okResult(map[string]any{"user": s.userJSON(u)})
}

// usersLookupByEmail implements users.lookupByEmail (case-insensitive).
func (s *Server) usersLookupByEmail(req *apiRequest) result {
	email := strings.ToLower(strings.TrimSpace(req.get("email")))
	if email == "" {
		return errResult("invalid_arguments")
	}
	u, ok := s.dir.usersByEmail[email]
	if !ok {
		return errResult("users_not_found")
	}
	return okResult(map[string]any{"user": s.userJSON(u)})
}

// usergroupsUsersList implements usergroups.users.list; the usergroup may be
// given by id or handle.
func (s *Server) usergroupsUsersList(req *apiRequest) result {
	ref := req.get("usergroup")
	if ref == "" {
		return errResult("invalid_arguments")
	}
	g, ok := s.dir.group(ref)
	if !ok {
		return errResult("no_such_subteam")
	}
	return okResult(map[string]any{"users": append([]string{}, g.Members...)})
}

// userJSON renders u as Slack's user object.
func (s *Server) userJSON(u *User) map[string]any {
	tz, label := u.TZ, u.TZ
	if tz == "" {
		tz, label = "UTC", "Coordinated Universal Time"
	}
	profile := map[string]any{
		"real_name":               u.RealName,
		"real_name_normalized":    u.RealName,
		"display_name":            u.DisplayName,
		"display_name_normalized": u.DisplayName,
		"email":                   u.Email,
		"title":                   u.Title,
		"team":                    s.dir.ws.TeamID,
		"avatar_hash":             "",
		"image_24":                "",
		"image_32":                "",
		"image_48":                "",
		"image_72":                "",
		"image_192":               "",
		"image_512":               "",
	}
	if u.ID == s.dir.ws.BotUserID {
		profile["bot_id"] = s.dir.ws.BotID
		profile["api_app_id"] = s.dir.ws.AppID
	}
	return map[string]any{
		"id":                  u.ID,
		"team_id":             s.dir.ws.TeamID,
		"name":                u.Name,
		"deleted":             u.Deleted,
		"color":               "9f69e7",
		"real_name":           u.RealName,
		"tz":                  tz,
		"tz_label":            label,
		"tz_offset":           u.TZOffset,
		"profile":             profile,
		"is_admin":            u.IsAdmin,
		"is_owner":            false,
		"is_primary_owner":    false,
		"is_restricted":       false,
		"is_ultra_restricted": false,
		"is_bot":              u.IsBot,
		"is_app_user":         false,
		"updated":             1700000000,
		"is_email_confirmed":  u.Email != "",
	}
}
