package bot_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/prometheus/client_golang/prometheus"
)

// Production mode (a real bot token) builds no emulator and no sandbox
// (internal/localmode's TestProductionModeBuildsNoSandbox; bot.NewSlack has
// no way to), and the service serves nothing under /sandbox/.
func TestProductionModeServesNoSandbox(t *testing.T) {
	t.Parallel()
	cfg := bot.Config{SlackBotToken: "xoxb-real", SlackAPIURL: "https://slack.example/api/"}
	if client := bot.NewSlack(cfg, bot.NewMetrics(prometheus.NewRegistry())); client == nil {
		t.Fatal("no Slack client")
	}
	h := newHarness(t) // a production-mode service over the emulator's API, without Deps.Sandbox
	for _, path := range []string{"/sandbox/", "/sandbox/inbox", "/sandbox/api/state"} {
		rec := httptest.NewRecorder()
		h.svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, rec.Code)
		}
	}
}
