package bot

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/approvalbot/approvalbot/handlers"
)

// readinessReport is /readyz's body. Each check is "ok" or what is wrong.
type readinessReport struct {
	Status string `json:"status"`           // "ok", "unavailable", or "draining" once shutting down
	Reason string `json:"reason,omitempty"` // the failed checks, "check: problem; …"
	Redis  string `json:"redis,omitempty"`
	// Slack is the bot token's check (auth.test at start); left out in
	// local mode, whose emulator always accepts its own token.
	Slack string `json:"slack,omitempty"`
	// SlackSocket is "connected" or "disconnected" in Socket Mode. It is
	// reported, not failed on: taking this process out of rotation would
	// not reopen the connection.
	SlackSocket string `json:"slack_socket,omitempty"`
}

// readiness runs the checks: Redis answered the ping (pingErr), and Slack
// accepted the bot token (auth; nil in local mode).
func readiness(pingErr error, auth *slackAuth, socket *handlers.SocketMode) readinessReport {
	rep := readinessReport{Status: "ok", Redis: "ok", SlackSocket: socketState(socket)}
	var failed []string
	if pingErr != nil {
		rep.Redis = pingErr.Error()
		failed = append(failed, "redis: "+rep.Redis)
	}
	if auth != nil {
		rep.Slack = "ok"
		if ok, problem := auth.status(); !ok {
			rep.Slack = problem
			failed = append(failed, "slack: "+problem)
		}
	}
	if len(failed) > 0 {
		rep.Status, rep.Reason = "unavailable", strings.Join(failed, "; ")
	}
	return rep
}

// drainingReport is /readyz's answer once Run has begun to shut down: the
// process still serves, but load balancers should send it nothing new.
var drainingReport = readinessReport{Status: "draining",
	Reason: "shutting down: finishing in-flight work; send new requests to another process"}

func writeReadiness(w http.ResponseWriter, rep readinessReport) {
	code := http.StatusOK
	if rep.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(rep)
}
