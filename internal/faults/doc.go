// Package faults is approvalbot's fault suite (issue #12). It has no code
// of its own: its tests run the real binary (cmd/approvalbot, built once per
// test run, with -race when the tests are) as child processes, so that a
// crash is a real SIGKILL, against a private redis-server with
// "appendfsync always" (a killed and restarted Redis keeps every write it
// acknowledged), the Slack emulator (internal/slackemu) on a loopback
// listener, agents submitting over HTTP, reviewers' clicks, dialogs and
// slash commands signed as Slack signs them, and a callback receiver
// checking every Standard Webhooks signature. All of these run in the test
// process.
//
// Each scenario is a subtest of TestFaults:
//
//   - intake: the bot is SIGKILLed while agents submit; agents resubmit what
//     was not acknowledged, with the same artifact ids;
//   - posting: Slack answers slowly and the bot is SIGKILLed while posts are
//     in flight (some reach Slack unrecorded);
//   - callbacks: the agents' receiver answers slowly and the bot is
//     SIGKILLed while deliveries are in flight;
//   - redis: Redis is frozen (SIGSTOP, then SIGCONT) during intake and
//     clicks, then SIGKILLed and restarted on the same port and directory,
//     under a running bot;
//   - slack-after-effect: chat.postMessage and chat.update take effect and
//     then answer 5xx or drop the connection;
//   - slack-late: the first post of each request reaches Slack after the
//     bot stopped waiting for it, so its retry posts again: Slack shows two
//     messages until the sweep deletes the one not recorded;
//   - replays: every signed click, dialog submission and slash command sent
//     during the run is sent again byte for byte.
//
// After each scenario the suite asserts, per request: every request an
// agent saw acknowledged (2xx) exists; it has exactly one Slack message,
// showing its final state; it was resolved at most once (one "resolved"
// audit entry) and its audit chain verifies; a resolved request with a
// response_url was called back, every delivery correctly signed, and every
// delivery of it carried the same webhook-id and body (deliveries may
// repeat: they are at least once). Replays change no answer and add no
// audit entry. Timings (recovery, acks past Slack's 3 s, transient
// duplicates, redeliveries) are reported, never asserted.
//
// `go test ./internal/faults` runs the reduced form (a few requests, one
// kill per scenario); FAULTS=full runs the full form (more requests,
// several kills at different points) and prints the figures table that
// BENCHMARKS.md records:
//
//	FAULTS=full go test -race -count=1 -run TestFaults -v ./internal/faults
package faults
