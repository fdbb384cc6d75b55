// Package slackout sends to Slack what the core decided: it holds the job
// handlers of the outbox whose effect is outside approvalbot, in Slack.
// Handlers returns them by job kind; package bot registers them with the
// job runner (package jobs), next to the deadline job and the agent's
// callback.
//
//	job kind             file                what it sends
//	post                 post.go             the request's message (chat.postMessage), paced per channel
//	sync                 sync.go             the message brought up to date (chat.update)
//	sweep                sweep.go            deletes the copies of a message that lost the race to be recorded
//	remind               remind.go           reminder DMs, or a reply in the request's thread
//	escalate             escalate.go         the escalated request, to each target user or channel
//	copies               copies.go           reminder and escalation copies updated once the request closes
//	home, homepub        home.go             App Home tabs, coalesced per user
//
// once.go is the Slack half of the exactly-once protocol (its Redis half is
// store/sideeffects.go); errors.go sorts Slack's failures into retries and
// refusals.
//
// Why each message is sent exactly once: Slack has no idempotency key, and a
// job runs again whenever its worker dies or outlives its lease, so a
// resend that only repeated the call would leave a second copy of a message
// whose answer was lost. Every message therefore carries metadata naming the
// request and the copy; a repeated attempt looks for it in the conversation
// and adopts it; the first recorded wins, and the loser deletes its copy (or
// a sweep does, one lease later). Updates (sync, copies) and Home publishes
// render the latest state, so a repeat shows the same thing and needs none
// of this. docs/architecture.md ("Exactly-once Slack messages") says what is
// guaranteed and what is not.
package slackout
