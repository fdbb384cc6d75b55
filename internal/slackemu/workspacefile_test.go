package slackemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func TestParseWorkspace(t *testing.T) {
	t.Parallel()
	ws, err := ParseWorkspace([]byte(`{
	  "team_name": "Acme",
	  "users": [
	    {"id": "U1ANA", "name": "ana", "real_name": "Ana Approver", "email": "ana@acme.test", "title": "Reviewer"},
	    {"id": "U1BEN", "name": "ben", "email": "ben@acme.test"}
	  ],
	  "channels": [{"id": "C1OPS", "name": "ops", "members": ["U1ANA"]}, {"id": "C1QUIET", "name": "quiet", "bot_is_member": false}],
	  "user_groups": [{"id": "S1LEADS", "handle": "@leads", "members": ["U1BEN"]}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Workspace: &ws})
	api := newInProc(s)
	u, err := api.GetUserByEmail("ana@acme.test")
	if err != nil || u.ID != "U1ANA" || u.Profile.Title != "Reviewer" || u.RealName != "Ana Approver" {
		t.Fatalf("lookup ana = %+v, %v", u, err)
	}
	if ben, _ := api.GetUserInfo("U1BEN"); ben == nil || ben.RealName != "ben" {
		t.Fatalf("a user without real_name is named by handle: %+v", ben)
	}
	if _, err := api.GetUserInfo(UserAlice); err == nil {
		t.Fatal("the default users stayed although the file lists its own")
	}
	if members, err := api.GetUserGroupMembers("leads"); err != nil || len(members) != 1 || members[0] != "U1BEN" {
		t.Fatalf("group = %v, %v", members, err)
	}
	if _, _, err := api.PostMessage("#quiet", slack.MsgOptionText("x", false)); err == nil {
		t.Fatal("posted to a channel the bot is not in")
	}
	if _, err := api.PostEphemeral("#ops", "U1BEN", slack.MsgOptionText("x", false)); err == nil {
		t.Fatal("an ephemeral reached a user outside the channel's members")
	}
	if ws.TeamName != "Acme" || ws.BotUserID != DefaultBotUserID {
		t.Fatalf("team = %q, bot = %q", ws.TeamName, ws.BotUserID)
	}
}

func TestParseWorkspaceKeepsDefaultSections(t *testing.T) {
	t.Parallel()
	ws, err := ParseWorkspace([]byte(`{"channels": [{"id": "C1X", "name": "x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws.Users) != len(DefaultWorkspace().Users) || len(ws.UserGroups) != 1 || len(ws.Channels) != 1 {
		t.Fatalf("workspace = %+v", ws)
	}
}

func TestParseWorkspaceRejects(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ json, want string }{
		"unknown key":   {`{"userz": []}`, "unknown field"},
		"bad user id":   {`{"users": [{"id": "X1", "name": "x"}]}`, "must start with U or W"},
		"no name":       {`{"users": [{"id": "U1"}]}`, "name is required"},
		"duplicate":     {`{"users": [{"id": "U1", "name": "a"}, {"id": "U2", "name": "a"}]}`, "already used"},
		"dup email":     {`{"users": [{"id": "U1", "name": "a", "email": "A@x"}, {"id": "U2", "name": "b", "email": "a@x"}]}`, "already used"},
		"bad channel":   {`{"channels": [{"id": "X1", "name": "x"}]}`, "must start with C or G"},
		"hash name":     {`{"channels": [{"id": "C1", "name": "#x"}]}`, "without #"},
		"stranger":      {`{"channels": [{"id": "C1", "name": "x", "members": ["U0NOBODY"]}]}`, "not a user"},
		"bot as member": {`{"user_groups": [{"id": "S1", "handle": "h", "members": ["U0BOT"]}]}`, "not a user"},
		"group no id":   {`{"user_groups": [{"id": "G1", "handle": "h"}]}`, "starting with S"},
		"not json":      {`{`, "parse"},
		"every problem": {`{"users": [{"id": "X1", "name": "x"}], "channels": [{"id": "X2", "name": "y"}]}`, "; "},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseWorkspace([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadWorkspace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ws.json")
	if err := os.WriteFile(path, []byte(`{"team_name": "Files"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := LoadWorkspace(path)
	if err != nil || ws.TeamName != "Files" {
		t.Fatalf("LoadWorkspace = %+v, %v", ws.TeamName, err)
	}
	if _, err := LoadWorkspace(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing file gave no error")
	}
}
