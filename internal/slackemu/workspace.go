package slackemu

import (
	"slices"
	"strings"
)

// Workspace describes the emulated Slack workspace: the team, the bot's own
// identity, and the users, channels and user groups the Web API knows about.
// A Workspace is copied by New, so changing it afterwards has no effect on a
// running Server.
type Workspace struct {
	TeamID   string // e.g. "T0LOCAL"
	TeamName string // e.g. "Local Workspace"
	Domain   string // the <domain>.slack.com part, used in auth.test and permalinks

	BotUserID string // the bot's user id, e.g. "U0BOT"; its messages are posted as this user
	BotName   string // the bot user's handle, e.g. "approvalbot"
	BotID     string // the bot id (B…) shown on bot messages
	AppID     string // the app id (A…) shown on bot messages and views

	Users      []User
	Channels   []Channel
	UserGroups []UserGroup
}

// User is a member of the emulated workspace.
type User struct {
	ID          string // e.g. "U0ALICE"
	Name        string // handle without "@", e.g. "alice"
	RealName    string // e.g. "Alice Reviewer"
	DisplayName string // optional; defaults to RealName in API responses
	Email       string
	Title       string // what they do, e.g. "Reviewer"; shown by the local sandbox's user switcher
	IsBot       bool
	IsAdmin     bool
	Deleted     bool
	TZ          string // IANA zone name; "UTC" when empty
	TZOffset    int    // offset from UTC in seconds, as Slack reports it
}

// Channel is a public or private channel of the emulated workspace. DM
// channels are not listed here: they are created on demand for users.
type Channel struct {
	ID        string // e.g. "C0APPROVALS"
	Name      string // without "#", e.g. "approvals"
	IsPrivate bool
	IsMember  bool // whether the bot is a member (else posting fails with not_in_channel)
	// Members lists the human members of the channel, used by
	// chat.postEphemeral (user_not_in_channel). Nil means every user.
	Members []string
}

// UserGroup is a user group (subteam) such as @leads.
type UserGroup struct {
	ID      string // e.g. "S0LEADS"
	Handle  string // without "@", e.g. "leads"
	Name    string // e.g. "Team Leads"
	Members []string
}

// Default identifiers of DefaultWorkspace, exported so tests and local mode
// can refer to them without repeating string literals.
const (
	DefaultToken     = "xoxb-local-emulator"
	DefaultTeamID    = "T0LOCAL"
	DefaultBotUserID = "U0BOT"
	UserRequester    = "U0REQUESTER"
	UserAlice        = "U0ALICE"
	UserBob          = "U0BOB"
	UserManager      = "U0MANAGER"
	UserMallory      = "U0MALLORY"
	ChannelApprovals = "C0APPROVALS"
	ChannelGeneral   = "C0GENERAL"
	ChannelNoBot     = "C0NOBOT"
	UserGroupLeads   = "S0LEADS"
	defaultDomain    = "local-emulator"
)

// DefaultWorkspace returns the workspace used when Options.Workspace is nil:
// team T0LOCAL, bot U0BOT ("approvalbot"), five human users, the channels
// #approvals and #general (bot is a member) and #no-bot (bot is not), and
// the user group @leads (manager and alice).
func DefaultWorkspace() Workspace {
	return Workspace{
		TeamID:    DefaultTeamID,
		TeamName:  "Local Workspace",
		Domain:    defaultDomain,
		BotUserID: DefaultBotUserID,
		BotName:   "approvalbot",
		BotID:     "B0BOT",
		AppID:     "A0LOCAL",
		Users: []User{
			{ID: DefaultBotUserID, Name: "approvalbot", RealName: "Approval Bot", IsBot: true},
			{ID: UserRequester, Name: "riley", RealName: "Riley Requester", Email: "requester@example.com", Title: "Requester"},
			{ID: UserAlice, Name: "alice", RealName: "Alice Reviewer", Email: "alice@example.com", Title: "Reviewer"},
			{ID: UserBob, Name: "bob", RealName: "Bob Reviewer", Email: "bob@example.com", Title: "Reviewer"},
			{ID: UserManager, Name: "morgan", RealName: "Morgan Manager", Email: "manager@example.com", IsAdmin: true,
				Title: "Manager, the escalation target"},
			{ID: UserMallory, Name: "mallory", RealName: "Mallory Outsider", Email: "mallory@example.com", Title: "Not a reviewer"},
		},
		Channels: []Channel{
			{ID: ChannelApprovals, Name: "approvals", IsMember: true},
			{ID: ChannelGeneral, Name: "general", IsMember: true},
			{ID: ChannelNoBot, Name: "no-bot", IsMember: false},
		},
		UserGroups: []UserGroup{
			{ID: UserGroupLeads, Handle: "leads", Name: "Team Leads", Members: []string{UserManager, UserAlice}},
		},
	}
}

// clone returns a deep copy of w.
func (w Workspace) clone() Workspace {
	c := w
	c.Users = slices.Clone(w.Users)
	c.Channels = slices.Clone(w.Channels)
	for i := range c.Channels {
		c.Channels[i].Members = slices.Clone(c.Channels[i].Members)
	}
	c.UserGroups = slices.Clone(w.UserGroups)
	for i := range c.UserGroups {
		c.UserGroups[i].Members = slices.Clone(c.UserGroups[i].Members)
	}
	return c
}

// directory is an immutable index over a Workspace. It is built once by New
// and only read afterwards, so it needs no locking.
type directory struct {
	ws            Workspace
	usersByID     map[string]*User
	usersByEmail  map[string]*User
	usersByName   map[string]*User
	channelsByID  map[string]*Channel
	channelByName map[string]*Channel
	groupsByID    map[string]*UserGroup
	groupByHandle map[string]*UserGroup
}

func newDirectory(ws Workspace) *directory {
	ws = ws.clone()
	if ws.BotUserID != "" && !slices.ContainsFunc(ws.Users, func(u User) bool { return u.ID == ws.BotUserID }) {
		ws.Users = append(ws.Users, User{ID: ws.BotUserID, Name: ws.BotName, RealName: ws.BotName, IsBot: true})
	}
	d := &directory{
		ws:            ws,
		usersByID:     map[string]*User{},
		usersByEmail:  map[string]*User{},
		usersByName:   map[string]*User{},
		channelsByID:  map[string]*Channel{},
		channelByName: map[string]*Channel{},
		groupsByID:    map[string]*UserGroup{},
		groupByHandle: map[string]*UserGroup{},
	}
	for i := range d.ws.Users {
		u := &d.ws.Users[i]
		d.usersByID[u.ID] = u
		if u.Email != "" {
			d.usersByEmail[strings.ToLower(u.Email)] = u
		}
		if u.Name != "" {
			d.usersByName[u.Name] = u
		}
	}
	for i := range d.ws.Channels {
		c := &d.ws.Channels[i]
		d.channelsByID[c.ID] = c
		d.channelByName[c.Name] = c
	}
	for i := range d.ws.UserGroups {
		g := &d.ws.UserGroups[i]
		d.groupsByID[g.ID] = g
		d.groupByHandle[g.Handle] = g
	}
	return d
}

// user returns the user with the given id.
func (d *directory) user(id string) (*User, bool) {
	u, ok := d.usersByID[id]
	return u, ok
}

// group finds a user group by id, or by handle with or without "@".
func (d *directory) group(ref string) (*UserGroup, bool) {
	if g, ok := d.groupsByID[ref]; ok {
		return g, true
	}
	g, ok := d.groupByHandle[strings.TrimPrefix(ref, "@")]
	return g, ok
}

// dmID is the stable id of the DM channel between the bot and user id:
// "D" followed by the user id without its leading "U" (U0ALICE → D0ALICE).
func dmID(userID string) string {
	if rest, ok := strings.CutPrefix(userID, "U"); ok {
		return "D" + rest
	}
	return "D" + userID
}

// dmUser is the inverse of dmID: the user whose DM channel id is id.
func (d *directory) dmUser(id string) (*User, bool) {
	rest, ok := strings.CutPrefix(id, "D")
	if !ok {
		return nil, false
	}
	if u, ok := d.usersByID["U"+rest]; ok {
		return u, true
	}
	u, ok := d.usersByID[rest]
	return u, ok
}

// conversation is a resolved channel reference: a workspace channel or a DM.
type conversation struct {
	id       string
	channel  *Channel // nil for DMs
	dmUser   *User    // set for DMs
	isMember bool     // whether the bot may post here
}

// resolve turns a channel reference as a client sends it — a channel id,
// "#name", "name", a DM id (D…) or a user id (U…/W…, meaning the user's DM) —
// into a conversation. The error is a Slack error code.
func (d *directory) resolve(ref string) (conversation, string) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return conversation{}, "channel_not_found"
	}
	if c, ok := d.channelsByID[ref]; ok {
		return conversation{id: c.ID, channel: c, isMember: c.IsMember}, ""
	}
	if name, ok := strings.CutPrefix(ref, "#"); ok {
		if c, ok := d.channelByName[name]; ok {
			return conversation{id: c.ID, channel: c, isMember: c.IsMember}, ""
		}
		return conversation{}, "channel_not_found"
	}
	if u, ok := d.usersByID[ref]; ok {
		return d.dm(u)
	}
	if u, ok := d.dmUser(ref); ok {
		return d.dm(u)
	}
	if c, ok := d.channelByName[ref]; ok {
		return conversation{id: c.ID, channel: c, isMember: c.IsMember}, ""
	}
	return conversation{}, "channel_not_found"
}

// resolveID finds a conversation by its id only, as the conversations.*
// read methods do: unlike chat.postMessage they take no "#name" or user id.
func (d *directory) resolveID(ref string) (conversation, string) {
	ref = strings.TrimSpace(ref)
	if c, ok := d.channelsByID[ref]; ok {
		return conversation{id: c.ID, channel: c, isMember: c.IsMember}, ""
	}
	if u, ok := d.dmUser(ref); ok {
		return d.dm(u)
	}
	return conversation{}, "channel_not_found"
}

// dm returns the DM conversation with u; bots cannot be DMed.
func (d *directory) dm(u *User) (conversation, string) {
	if u.IsBot {
		return conversation{}, "cannot_dm_bot"
	}
	return conversation{id: dmID(u.ID), dmUser: u, isMember: true}, ""
}

// hasMember reports whether userID is a member of c (for chat.postEphemeral).
func (c conversation) hasMember(userID string) bool {
	if c.dmUser != nil {
		return c.dmUser.ID == userID
	}
	return c.channel.Members == nil || slices.Contains(c.channel.Members, userID)
}
