package slackemu

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// workspaceFile is the JSON form of a Workspace, as a person writes it to
// describe the local sandbox's members (SANDBOX_WORKSPACE). Sections left
// out keep DefaultWorkspace's.
type workspaceFile struct {
	TeamName   string      `json:"team_name"`
	Users      []userFile  `json:"users"`
	Channels   []chanFile  `json:"channels"`
	UserGroups []groupFile `json:"user_groups"`
}

type userFile struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	RealName string `json:"real_name"`
	Email    string `json:"email"`
	Title    string `json:"title"`
	IsAdmin  bool   `json:"is_admin"`
	TZ       string `json:"tz"`
}

type chanFile struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	IsPrivate   bool     `json:"is_private"`
	BotIsMember *bool    `json:"bot_is_member"` // default true: the bot can post
	Members     []string `json:"members"`       // default: everyone
}

type groupFile struct {
	ID      string   `json:"id"`
	Handle  string   `json:"handle"`
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

// LoadWorkspace reads a workspace description from a JSON file (see
// ParseWorkspace).
func LoadWorkspace(path string) (Workspace, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Workspace{}, fmt.Errorf("read workspace file: %w", err)
	}
	ws, err := ParseWorkspace(raw)
	if err != nil {
		return Workspace{}, fmt.Errorf("workspace file %s: %w", path, err)
	}
	return ws, nil
}

// ParseWorkspace builds a Workspace from JSON such as
//
//	{"team_name": "Acme",
//	 "users": [{"id": "U0ALICE", "name": "alice", "real_name": "Alice",
//	            "email": "alice@example.com", "title": "Reviewer"}],
//	 "channels": [{"id": "C0APPROVALS", "name": "approvals"}],
//	 "user_groups": [{"id": "S0LEADS", "handle": "leads", "members": ["U0ALICE"]}]}
//
// The team, the bot's identity and every section left out are
// DefaultWorkspace's. Unknown keys, duplicate ids, names or emails, ids of
// the wrong kind and members who are not users are errors, all reported at
// once, so a typo does not silently change who may answer.
func ParseWorkspace(raw []byte) (Workspace, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f workspaceFile
	if err := dec.Decode(&f); err != nil {
		return Workspace{}, fmt.Errorf("parse: %w", err)
	}
	ws := DefaultWorkspace()
	if f.TeamName != "" {
		ws.TeamName = f.TeamName
	}
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if f.Users != nil {
		ws.Users = []User{ws.Users[0]} // the bot user stays
		seen := map[string]bool{ws.BotUserID: true, ws.BotName: true}
		for i, u := range f.Users {
			switch {
			case !strings.HasPrefix(u.ID, "U") && !strings.HasPrefix(u.ID, "W"):
				bad("users[%d]: id %q must start with U or W", i, u.ID)
			case u.Name == "":
				bad("users[%d]: name is required", i)
			case seen[u.ID] || seen[u.Name] || (u.Email != "" && seen[strings.ToLower(u.Email)]):
				bad("users[%d]: id, name or email already used", i)
			}
			seen[u.ID], seen[u.Name] = true, true
			if u.Email != "" {
				seen[strings.ToLower(u.Email)] = true
			}
			ws.Users = append(ws.Users, User{ID: u.ID, Name: u.Name, RealName: cmp.Or(u.RealName, u.Name),
				Email: u.Email, Title: u.Title, IsAdmin: u.IsAdmin, TZ: u.TZ})
		}
	}
	isUser := map[string]bool{}
	for _, u := range ws.Users {
		isUser[u.ID] = !u.IsBot
	}
	members := func(where string, ids []string) {
		for _, id := range ids {
			if !isUser[id] {
				bad("%s: member %q is not a user of the workspace", where, id)
			}
		}
	}
	if f.Channels != nil {
		ws.Channels = nil
		seen := map[string]bool{}
		for i, c := range f.Channels {
			where := fmt.Sprintf("channels[%d]", i)
			if !strings.HasPrefix(c.ID, "C") && !strings.HasPrefix(c.ID, "G") {
				bad("%s: id %q must start with C or G", where, c.ID)
			}
			if c.Name == "" || strings.HasPrefix(c.Name, "#") || seen[c.ID] || seen["#"+c.Name] {
				bad("%s: name must be unique, without #", where)
			}
			seen[c.ID], seen["#"+c.Name] = true, true
			members(where, c.Members)
			ws.Channels = append(ws.Channels, Channel{ID: c.ID, Name: c.Name, IsPrivate: c.IsPrivate,
				IsMember: c.BotIsMember == nil || *c.BotIsMember, Members: c.Members})
		}
	}
	if f.UserGroups != nil {
		ws.UserGroups = nil
		for i, g := range f.UserGroups {
			where := fmt.Sprintf("user_groups[%d]", i)
			if !strings.HasPrefix(g.ID, "S") || g.Handle == "" {
				bad("%s: needs an id starting with S and a handle", where)
			}
			members(where, g.Members)
			ws.UserGroups = append(ws.UserGroups, UserGroup{ID: g.ID, Handle: strings.TrimPrefix(g.Handle, "@"),
				Name: cmp.Or(g.Name, g.Handle), Members: g.Members})
		}
	}
	if len(probs) > 0 {
		return Workspace{}, errors.New(strings.Join(probs, "; "))
	}
	return ws, nil
}
