package bot_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

// CALLBACK_SECRETS gives agents their own callback keys; its errors never
// quote a secret, and a secret shared with another agent (or
// CALLBACK_SECRET) is refused: the point is that nobody else holds it.
func TestConfigCallbackSecrets(t *testing.T) {
	key := func(s string) string {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte(s+strings.Repeat(".", 32)))
	}
	pmKey, otherKey, shared := key("pm"), key("other"), key("shared")
	production := func(t *testing.T) {
		clearDeployEnv(t)
		for k, v := range map[string]string{"SLACK_BOT_TOKEN": "xoxb-1-2-3", "SLACK_SIGNING_SECRET": "secret",
			"INTAKE_TOKENS":   "pm:0123456789abcdef0123,other:0123456789abcdef9999,third:0123456789abcdef7777",
			"CALLBACK_SECRET": shared, "REDIS_URL": "redis://127.0.0.1:6379/0"} {
			t.Setenv(k, v)
		}
	}
	t.Run("valid", func(t *testing.T) {
		production(t)
		t.Setenv("CALLBACK_SECRETS", " pm:"+pmKey+" , other:"+otherKey)
		cfg, err := bot.LoadConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.AgentCallbackSecrets(); len(got) != 2 || got["pm"] != pmKey || got["other"] != otherKey {
			t.Errorf("secrets %v", got)
		}
		if shared := cfg.SharedCallbackAgents(); shared != nil {
			t.Errorf("agents sharing CALLBACK_SECRET: %v, want none (only third does)", shared)
		}
	})
	t.Run("unset: every agent shares CALLBACK_SECRET", func(t *testing.T) {
		production(t)
		cfg, err := bot.LoadConfig()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cfg.SharedCallbackAgents(), ","); got != "pm,other,third" {
			t.Errorf("agents sharing CALLBACK_SECRET: %q", got)
		}
	})
	for spec, want := range map[string]string{
		"pm=" + pmKey:                     "entry 1 is not <agent>:whsec_<base64>",
		"nobody:" + pmKey:                 "entry 1 names an agent that is not in INTAKE_TOKENS",
		"pm:whsec_c2hvcnQ=":               `the secret of "pm" must be whsec_`,
		"pm:" + pmKey + ",pm:" + otherKey: `agent "pm" is listed twice`,
		"pm:" + shared:                    `the secret of "pm" is CALLBACK_SECRET's`,
		"pm:" + pmKey + ",other:" + pmKey: `the secret of "other" is CALLBACK_SECRET's, the public local one, or another agent's`,
		"pm:" + bot.LocalCallbackSecret:   `the secret of "pm" is CALLBACK_SECRET's, the public local one`,
	} {
		t.Run(strings.NewReplacer(pmKey, "<pm>", otherKey, "<other>", shared, "<shared>").Replace(spec), func(t *testing.T) {
			production(t)
			t.Setenv("CALLBACK_SECRETS", spec)
			_, err := bot.LoadConfig()
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%v, want %q", err, want)
			}
			for _, k := range []string{pmKey, otherKey, shared, "c2hvcnQ="} {
				if strings.Contains(err.Error(), k) {
					t.Errorf("the error quotes a secret: %v", err)
				}
			}
		})
	}
}
