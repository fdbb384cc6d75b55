package bot

import "strings"

// validateCallbackSecrets parses CALLBACK_SECRETS: comma-separated
// "<agent>:whsec_<base64>" pairs, each agent's own key for the decision
// responses and events sent to it. A Standard Webhooks signature is an HMAC,
// so whoever verifies one can make one: agents sharing CALLBACK_SECRET can
// forge each other's callbacks. Errors name an entry by its position, never
// quoting a part that may be the secret.
func (c *Config) validateCallbackSecrets(add func(format string, args ...any)) {
	c.callbackSecrets = nil
	if strings.TrimSpace(c.CallbackSecrets) == "" {
		return
	}
	secrets := map[string]string{}
	taken := map[string]bool{c.CallbackSecret: true, LocalCallbackSecret: true} // no agent may share these
	for i, pair := range strings.Split(c.CallbackSecrets, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		agent, secret, ok := strings.Cut(pair, ":")
		switch {
		case !ok || !strings.HasPrefix(secret, "whsec_"):
			add("CALLBACK_SECRETS: entry %d is not <agent>:whsec_<base64>", i+1)
			continue
		case c.tokens.Len() > 0 && !c.tokens.Has(agent):
			add("CALLBACK_SECRETS: entry %d names an agent that is not in INTAKE_TOKENS", i+1)
			continue
		case !validWebhookSecret(secret):
			add("CALLBACK_SECRETS: the secret of %q must be whsec_ followed by base64 of at least 24 random bytes", agent)
			continue
		case secrets[agent] != "":
			add("CALLBACK_SECRETS: agent %q is listed twice", agent)
			continue
		case taken[secret]:
			add("CALLBACK_SECRETS: the secret of %q is CALLBACK_SECRET's, the public local one, or another agent's: "+
				"each agent needs its own", agent)
			continue
		}
		secrets[agent], taken[secret] = secret, true
	}
	c.callbackSecrets = secrets
}

// AgentCallbackSecrets are the parsed CALLBACK_SECRETS: agent -> its own
// callback secret. Agents not in it are signed for with CALLBACK_SECRET.
func (c Config) AgentCallbackSecrets() map[string]string { return c.callbackSecrets }

// SharedCallbackAgents are the INTAKE_TOKENS agents without their own
// CALLBACK_SECRETS entry, when there are two or more: each of them can
// forge the others' callbacks.
func (c Config) SharedCallbackAgents() []string {
	var shared []string
	for _, a := range c.tokens.Agents() {
		if _, own := c.callbackSecrets[a]; !own {
			shared = append(shared, a)
		}
	}
	if len(shared) < 2 {
		return nil
	}
	return shared
}
