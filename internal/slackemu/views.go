package slackemu

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// IssueTriggerID returns a new trigger id, as Slack includes in interaction
// payloads. With Options.StrictTriggers, views.open and views.push accept
// only such ids, once each and within Options.TriggerTTL (default 3s,
// like Slack); otherwise any non-empty trigger id is accepted.
func (s *Server) IssueTriggerID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := s.nextSeq()
	id := fmt.Sprintf("%d.%d.%016x", now.Unix(), n, n*0x9e3779b97f4a7c15)
	s.st.triggers[id] = &trigger{issued: now}
	return id
}

// useTrigger checks and consumes a trigger id; the result is a Slack error
// code or "".
func (s *Server) useTrigger(id string, now time.Time) string {
	if id == "" {
		return "invalid_arguments"
	}
	if !s.strict {
		return ""
	}
	t, ok := s.st.triggers[id]
	switch {
	case !ok:
		return "invalid_trigger_id"
	case t.used:
		return "exchanged_trigger_id"
	case now.Sub(t.issued) > s.triggerTTL:
		return "expired_trigger_id"
	}
	t.used = true
	return ""
}

// parsedView is a validated view from a request.
type parsedView struct {
	raw    json.RawMessage
	fields map[string]json.RawMessage
	typ    string
}

func (v parsedView) str(key string) string {
	var s string
	_ = json.Unmarshal(v.fields[key], &s)
	return s
}

// readView reads and validates the "view" parameter, which must be of type
// want. Invalid views answer invalid_arguments when a view-level property
// is wrong and invalid_blocks when only blocks are, listing every problem.
func readView(req *apiRequest, want string) (parsedView, result, bool) {
	raw, err := compactObject(req.get("view"))
	if err != nil {
		return parsedView{}, errResult("invalid_arguments"), false
	}
	if errs := ValidateView(raw); len(errs) > 0 {
		code := "invalid_blocks"
		for _, e := range errs {
			if !strings.HasPrefix(e.Pointer, "/view/blocks") {
				code = "invalid_arguments"
			}
		}
		return parsedView{}, blockErrResult(code, errs), false
	}
	v := parsedView{raw: raw}
	_ = json.Unmarshal(raw, &v.fields)
	v.typ = v.str("type")
	if want != "" && v.typ != want {
		return parsedView{}, blockErrResult("invalid_arguments", []BlockError{{
			Pointer: "/view/type", Message: fmt.Sprintf("must be %q for this method", want),
		}}), false
	}
	return v, result{}, true
}

// viewsOpen implements views.open.
func (s *Server) viewsOpen(req *apiRequest) result {
	return s.openView(req, EventViewOpened, "")
}

// viewsPush implements views.push: like views.open, on top of the most
// recently opened modal.
func (s *Server) viewsPush(req *apiRequest) result {
	prev := ""
	for i := len(s.st.viewOrder) - 1; i >= 0; i-- {
		if v := s.st.views[s.st.viewOrder[i]]; v.Type == "modal" {
			prev = v.ID
			break
		}
	}
	return s.openView(req, EventViewOpened, prev)
}

func (s *Server) openView(req *apiRequest, ev EventType, previous string) result {
	if req.get("trigger_id") == "" || req.get("view") == "" {
		return errResult("invalid_arguments")
	}
	pv, res, ok := readView(req, "modal")
	if !ok {
		return res
	}
	ext := pv.str("external_id")
	if ext != "" && s.st.viewByExt[ext] != "" {
		return errResult("duplicate_external_id")
	}
	if code := s.useTrigger(req.get("trigger_id"), req.now); code != "" {
		return errResult(code)
	}
	v := &View{
		ID:             fmt.Sprintf("V%08d", s.nextSeq()),
		Type:           pv.typ,
		TriggerID:      req.get("trigger_id"),
		ExternalID:     ext,
		CallbackID:     pv.str("callback_id"),
		PreviousViewID: previous,
		JSON:           pv.raw,
		OpenedAt:       req.now,
		UpdatedAt:      req.now,
	}
	v.RootViewID = v.ID
	if previous != "" {
		v.RootViewID = s.st.views[previous].RootViewID
	}
	v.Hash = s.newHash(req.now)
	s.addView(v)
	s.publish(Event{Type: ev, At: req.now, View: ptr(v.clone())})
	return okResult(map[string]any{"view": s.viewJSON(v, pv)})
}

// viewsUpdate implements views.update, by view_id or external_id, with the
// optional hash check.
func (s *Server) viewsUpdate(req *apiRequest) result {
	id := req.get("view_id")
	switch {
	case id != "":
	case req.get("external_id") != "":
		id = s.st.viewByExt[req.get("external_id")]
	default:
		return errResult("invalid_arguments")
	}
	v, ok := s.st.views[id]
	if !ok {
		return errResult("not_found")
	}
	if h := req.get("hash"); h != "" && h != v.Hash {
		return errResult("hash_conflict")
	}
	pv, res, ok := readView(req, v.Type)
	if !ok {
		return res
	}
	if ext := pv.str("external_id"); ext != "" && ext != v.ExternalID {
		if s.st.viewByExt[ext] != "" {
			return errResult("duplicate_external_id")
		}
		delete(s.st.viewByExt, v.ExternalID)
		v.ExternalID = ext
		s.st.viewByExt[ext] = v.ID
	}
	v.CallbackID = pv.str("callback_id")
	v.JSON = pv.raw
	v.Hash = s.newHash(req.now)
	v.Updates++
	v.UpdatedAt = req.now
	s.publish(Event{Type: EventViewUpdated, At: req.now, View: ptr(v.clone())})
	return okResult(map[string]any{"view": s.viewJSON(v, pv)})
}

// viewsPublish implements views.publish: a user's Home tab keeps its view
// id across publishes.
func (s *Server) viewsPublish(req *apiRequest) result {
	user, ok := s.dir.user(req.get("user_id"))
	if !ok {
		return errResult("user_not_found")
	}
	if req.get("view") == "" {
		return errResult("invalid_arguments")
	}
	pv, res, ok := readView(req, "home")
	if !ok {
		return res
	}
	v := s.st.views[s.st.homeByUser[user.ID]]
	if h := req.get("hash"); h != "" && v != nil && h != v.Hash {
		return errResult("hash_conflict")
	}
	if v == nil {
		v = &View{ID: fmt.Sprintf("V%08d", s.nextSeq()), Type: "home", User: user.ID, OpenedAt: req.now}
		v.RootViewID = v.ID
		s.addView(v)
		s.st.homeByUser[user.ID] = v.ID
	} else {
		v.Updates++
	}
	v.CallbackID = pv.str("callback_id")
	v.ExternalID = pv.str("external_id")
	v.JSON = pv.raw
	v.Hash = s.newHash(req.now)
	v.UpdatedAt = req.now
	s.publish(Event{Type: EventViewPublished, At: req.now, View: ptr(v.clone())})
	return okResult(map[string]any{"view": s.viewJSON(v, pv)})
}

func (s *Server) addView(v *View) {
	s.st.views[v.ID] = v
	s.st.viewOrder = append(s.st.viewOrder, v.ID)
	if v.ExternalID != "" {
		s.st.viewByExt[v.ExternalID] = v.ID
	}
}

// newHash returns a fresh view hash, "<unix seconds>.<8 hex digits>".
func (s *Server) newHash(now time.Time) string {
	return fmt.Sprintf("%d.%08x", now.Unix(), uint32(s.nextSeq()*2654435761))
}

// viewJSON renders v as Slack's view object: the properties the bot sent
// plus the ones Slack adds.
func (s *Server) viewJSON(v *View, pv parsedView) map[string]any {
	ws := &s.dir.ws
	out := map[string]any{}
	for k, raw := range pv.fields {
		out[k] = raw
	}
	if _, ok := out["private_metadata"]; !ok {
		out["private_metadata"] = ""
	}
	out["callback_id"] = v.CallbackID
	out["external_id"] = v.ExternalID
	for _, k := range []string{"clear_on_close", "notify_on_close"} {
		if _, ok := out[k]; !ok {
			out[k] = false
		}
	}
	out["id"] = v.ID
	out["team_id"] = ws.TeamID
	out["state"] = map[string]any{"values": map[string]any{}}
	out["hash"] = v.Hash
	out["root_view_id"] = v.RootViewID
	out["previous_view_id"] = nil
	if v.PreviousViewID != "" {
		out["previous_view_id"] = v.PreviousViewID
	}
	out["app_id"] = ws.AppID
	out["app_installed_team_id"] = ws.TeamID
	out["bot_id"] = ws.BotID
	return out
}
