package bot_test

import (
	"net/http"
	"net/url"
	"os"
	"regexp"
	"testing"
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
