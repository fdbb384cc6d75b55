package bot

import (
	"net/url"
	"strings"
)

// placeholderMarkers are phrases of the placeholder values in
// deploy/approvalbot.env.example ("xoxb-your-bot-token",
// "replace-with-a-long-random-key", …). A secret containing one was copied
// from the example and never replaced: the bot refuses to start with it
// rather than run on a value anyone can read in this repository. Matching
// phrases, not whole values, also catches a placeholder edited only a little
// (a suffix added to pass a length check). TestEnvExamplePlaceholdersAreRefused
// proves that every placeholder in the example file is refused.
var placeholderMarkers = []string{"your-", "replace-with", "replace_with", "changeme"}

// isPlaceholder reports whether a secret is an example placeholder.
func isPlaceholder(secret string) bool {
	lower := strings.ToLower(secret)
	for _, m := range placeholderMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}

// validatePlaceholders reports every secret still set to a placeholder from
// deploy/approvalbot.env.example, naming the variable and never the value.
// It applies in local mode too: a placeholder is never meant to be used.
func (c *Config) validatePlaceholders(add func(format string, args ...any)) {
	const hint = "%s is still the placeholder from deploy/approvalbot.env.example; generate a real value (the example's comments say how)"
	const fromSlack = "%s is still the placeholder from deploy/approvalbot.env.example; copy it from your Slack app " +
		"(docs/deploy.md, \"Create the Slack app\")"
	for _, s := range []struct{ name, value, hint string }{
		{"SLACK_BOT_TOKEN", c.SlackBotToken, fromSlack},
		{"SLACK_SIGNING_SECRET", c.SlackSigningSecret, fromSlack},
		{"SLACK_APP_TOKEN", c.SlackAppToken, fromSlack},
		{"CALLBACK_SECRET", c.CallbackSecret, hint},
		{"CALLBACK_SECRETS", c.CallbackSecrets, hint},
		{"AUDIT_KEY", c.AuditKey, hint},
	} {
		if isPlaceholder(s.value) {
			add(s.hint, s.name)
		}
	}
	if agents := placeholderIntakeAgents(c.IntakeTokens); len(agents) > 0 {
		add("INTAKE_TOKENS: the token of agent(s) %s is still the placeholder from deploy/approvalbot.env.example; "+
			"generate one per agent with: openssl rand -hex 24", strings.Join(agents, ", "))
	}
	if u, err := url.Parse(c.RedisURL); err == nil && u.User != nil {
		if pw, _ := u.User.Password(); isPlaceholder(pw) || isPlaceholder(u.User.Username()) {
			add(hint, "the password in REDIS_URL")
		}
	}
}

// placeholderIntakeAgents names the agents of an INTAKE_TOKENS spec
// (name:token,…) whose token is a placeholder. Agent names are not secret.
func placeholderIntakeAgents(spec string) []string {
	var agents []string
	for pair := range strings.SplitSeq(spec, ",") {
		name, token, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if ok && isPlaceholder(token) {
			agents = append(agents, strings.TrimSpace(name))
		}
	}
	return agents
}
