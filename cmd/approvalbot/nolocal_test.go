//go:build nolocal

package main

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

// The release build refuses what only local mode could run, before it
// opens anything, and says how to get local mode: no SLACK_BOT_TOKEN (the
// Slack emulator), and no REDIS_URL or REDIS_URL=memory:// (the embedded
// Redis). (Not parallel: it sets environment variables.)
func TestNoLocalBuildRefusesLocalMode(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no configuration": {},
		"bot token, memory:// redis": {"SLACK_BOT_TOKEN": "xoxb-1-2-3", "SLACK_SIGNING_SECRET": "s", "REDIS_URL": bot.MemoryRedisURL,
			"INTAKE_TOKENS": "pm:0123456789abcdef0123", "CALLBACK_SECRET": "whsec_" + strings.Repeat("QUFB", 8)},
	} {
		t.Run(name, func(t *testing.T) {
			clearConfig(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			code := runCLI(context.Background(), nil, &out, &errOut)
			if code != exitError || !strings.Contains(errOut.String(), "this build of approvalbot has no local mode") ||
				!strings.Contains(errOut.String(), "go run ./cmd/approvalbot") {
				t.Errorf("exit %d, stderr %q; want the no-local-mode refusal", code, errOut.String())
			}
		})
	}
}

// --help says this build has no local mode, and does not promise one.
func TestNoLocalHelpSaysSo(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := runCLI(context.Background(), []string{"--help"}, &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "This build has no local mode") || strings.Contains(out.String(), "LOCAL MODE") {
		t.Errorf("exit %d, help:\n%s", code, out.String())
	}
}

// clearConfig unsets every setting bot.Config reads, until the test ends.
func clearConfig(t *testing.T) {
	typ := reflect.TypeFor[bot.Config]()
	for i := range typ.NumField() {
		if k := typ.Field(i).Tag.Get("envconfig"); k != "" {
			t.Setenv(k, "") // restores the value after the test
			_ = os.Unsetenv(k)
		}
	}
}
