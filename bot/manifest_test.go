package bot_test

import (
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Every URL the Slack app manifest gives Slack is a route the bot serves,
// so an app created from it works.
func TestManifestURLsAreServed(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	urls := regexp.MustCompile(`(?m)^\s*(?:request_url|url):\s*(\S+)`).FindAllStringSubmatch(string(raw), -1)
	if len(urls) == 0 {
		t.Fatal("the manifest names no URL")
	}
	h := newHarness(t)
	for _, m := range urls {
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		// Unsigned, so a served route answers 401; an unknown one 404 or 405.
		if r := h.do(http.MethodPost, u.Path, "", "application/x-www-form-urlencoded", []byte("payload={}")); r.Status != http.StatusUnauthorized {
			t.Errorf("POST %s: %d, want 401 from a Slack endpoint", u.Path, r.Status)
		}
	}
}

// manifest is the part of a Slack app manifest approvalbot depends on.
type manifest struct {
	Features struct {
		AppHome struct {
			HomeTabEnabled bool `yaml:"home_tab_enabled"`
		} `yaml:"app_home"`
		SlashCommands []struct {
			Command     string `yaml:"command"`
			URL         string `yaml:"url"`
			Description string `yaml:"description"`
			UsageHint   string `yaml:"usage_hint"`
		} `yaml:"slash_commands"`
	} `yaml:"features"`
	OAuthConfig struct {
		Scopes struct {
			Bot []string `yaml:"bot"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		EventSubscriptions struct {
			RequestURL string   `yaml:"request_url"`
			BotEvents  []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			IsEnabled  bool   `yaml:"is_enabled"`
			RequestURL string `yaml:"request_url"`
		} `yaml:"interactivity"`
		SocketModeEnabled bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

func readManifest(t *testing.T, path string) manifest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// The Socket Mode manifest is the HTTP one without request URLs: the same
// scopes, command and events, with socket_mode_enabled.
func TestSocketModeManifestMatchesTheHTTPOne(t *testing.T) {
	t.Parallel()
	web := readManifest(t, "../deploy/slack-app-manifest.yaml")
	sock := readManifest(t, "../deploy/slack-app-manifest.socket-mode.yaml")
	if web.Settings.SocketModeEnabled || !sock.Settings.SocketModeEnabled {
		t.Errorf("socket_mode_enabled: HTTP manifest %v, Socket Mode manifest %v", web.Settings.SocketModeEnabled, sock.Settings.SocketModeEnabled)
	}
	if sock.Settings.EventSubscriptions.RequestURL != "" || sock.Settings.Interactivity.RequestURL != "" {
		t.Error("the Socket Mode manifest names request URLs")
	}
	if !sock.Settings.Interactivity.IsEnabled || !sock.Features.AppHome.HomeTabEnabled {
		t.Error("the Socket Mode manifest lacks interactivity or the Home tab")
	}
	if !slices.Equal(sock.OAuthConfig.Scopes.Bot, web.OAuthConfig.Scopes.Bot) || len(web.OAuthConfig.Scopes.Bot) == 0 {
		t.Errorf("bot scopes: Socket Mode %v, HTTP %v", sock.OAuthConfig.Scopes.Bot, web.OAuthConfig.Scopes.Bot)
	}
	if !slices.Equal(sock.Settings.EventSubscriptions.BotEvents, web.Settings.EventSubscriptions.BotEvents) {
		t.Errorf("bot events: Socket Mode %v, HTTP %v", sock.Settings.EventSubscriptions.BotEvents, web.Settings.EventSubscriptions.BotEvents)
	}
	if len(sock.Features.SlashCommands) != len(web.Features.SlashCommands) || len(web.Features.SlashCommands) == 0 {
		t.Fatalf("slash commands: Socket Mode %+v, HTTP %+v", sock.Features.SlashCommands, web.Features.SlashCommands)
	}
	for i, c := range sock.Features.SlashCommands {
		w := web.Features.SlashCommands[i]
		if c.URL != "" || c.Command != w.Command || c.Description != w.Description || c.UsageHint != w.UsageHint {
			t.Errorf("slash command %d: Socket Mode %+v, HTTP %+v", i, c, w)
		}
	}
}
