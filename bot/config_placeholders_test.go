package bot_test

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

// exampleSettings are the variables of deploy/approvalbot.env.example whose
// example values are meant to be kept (addresses, formats). Every other value
// in the file is a placeholder the bot must refuse: a variable added to the
// example later fails TestEnvExamplePlaceholdersAreRefused until its
// placeholder is refused too (or it is listed here, as a real setting).
var exampleSettings = map[string]bool{
	"LISTEN_ADDR": true, "REDIS_URL": true, "SLACK_DEFAULT_CHANNEL": true, "LOG_FORMAT": true, "LOG_LEVEL": true,
	// The authorization policy: its example values are the safe defaults.
	"DEFAULT_REVIEWERS": true, "DEFAULT_REVIEWER_GROUPS": true, "ADMIN_USERS": true, "APPROVAL_QUORUM": true,
	"ALLOW_SELF_APPROVAL": true, "REQUIRE_REASON": true, "POLICY_OVERRIDE_AGENTS": true,
	// Deciding through the API: empty, nobody does.
	"REVIEWER_TOKENS": true, "AGENT_APPROVERS": true,
	// Retention: the example's value is the default, keep everything.
	"RETENTION": true,
	// Telling requesters: the example's value is the default.
	"NOTIFY_REQUESTER": true,
	// Never the embedded store: a real setting, as compose and the chart set it.
	"REQUIRE_REDIS": true,
}

// Commented-out assignments ("# SLACK_APP_TOKEN=…") count: uncommenting one
// must not start the bot on a placeholder either.
var envAssignment = regexp.MustCompile(`^#?\s*([A-Z][A-Z0-9_]*)=(.*)$`)

func readEnvExample(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../deploy/approvalbot.env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := envAssignment.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			vars[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vars
}

// Every placeholder in deploy/approvalbot.env.example is refused on its own,
// in a configuration otherwise valid for production, with an error naming the
// variable and not the value. (Not parallel: it sets environment variables.)
func TestEnvExamplePlaceholdersAreRefused(t *testing.T) {
	example := readEnvExample(t)
	valid := map[string]string{
		"SLACK_BOT_TOKEN":      "xoxb-1234-5678-a1b2c3d4e5",
		"SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543",
		"SLACK_APP_TOKEN":      "xapp-1-A0123-4567-89abcdef",
		"INTAKE_TOKENS":        "planner:0123456789abcdef0123,release-bot:fedcba9876543210fedc",
		"CALLBACK_SECRET":      "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"AUDIT_KEY":            "3f786850e387550fdab836ed7e6dc881de23001b",
	}
	setValid := func() {
		clearEnv(t)
		for k := range example {
			t.Setenv(k, "")
			_ = os.Unsetenv(k)
		}
		for k, v := range example {
			if exampleSettings[k] {
				t.Setenv(k, v)
			}
		}
		for k, v := range valid {
			t.Setenv(k, v)
		}
	}
	setValid()
	if _, err := bot.LoadConfig(); err != nil {
		t.Fatalf("the example's settings with real secrets must start: %v", err)
	}
	placeholders := 0
	for name, value := range example {
		if exampleSettings[name] {
			continue
		}
		placeholders++
		setValid()
		t.Setenv(name, value)
		_, err := bot.LoadConfig()
		if err == nil {
			t.Errorf("%s=<the example's placeholder> was accepted", name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, name) || !strings.Contains(msg, "placeholder") {
			t.Errorf("%s's placeholder: the error does not name it as a placeholder:\n%v", name, msg)
		}
		for part := range strings.SplitSeq(value, ",") {
			_, secret, _ := strings.Cut(part, ":") // INTAKE_TOKENS: name:token
			if secret == "" || name != "INTAKE_TOKENS" {
				secret = part
			}
			if strings.Contains(msg, secret) {
				t.Errorf("%s's placeholder: the error repeats the value:\n%v", name, msg)
			}
		}
	}
	// The parser must have found the secrets the example is known to hold.
	for _, name := range []string{"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "INTAKE_TOKENS",
		"CALLBACK_SECRET", "AUDIT_KEY"} {
		if _, ok := example[name]; !ok {
			t.Errorf("deploy/approvalbot.env.example has no %s line", name)
		}
	}
	if placeholders < 6 {
		t.Errorf("found %d placeholders in the example, want at least 6", placeholders)
	}
}

// One placeholder token among real ones is still refused, naming its agent.
func TestIntakePlaceholderNamesTheAgent(t *testing.T) {
	clearEnv(t)
	t.Setenv("INTAKE_TOKENS", "planner:0123456789abcdef0123,release-bot:replace-with-another-long-random-token")
	_, err := bot.LoadConfig()
	if err == nil || !strings.Contains(err.Error(), "INTAKE_TOKENS: the token of agent(s) release-bot is still the placeholder") {
		t.Fatalf("a placeholder intake token in local mode: %v", err)
	}
}
