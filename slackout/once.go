package slackout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// Exactly-once Slack messages: the Slack half of the protocol described in
// store/sideeffects.go. Every message the bot sends for a request carries
// metadata naming the request and the effect (the request's own message, or
// one reminder or escalation copy), so that a later attempt can find it in
// the conversation and adopt it rather than send it again, and a sweep can
// delete the copies that lost the race to be recorded.

// Message metadata event types.
const (
	requestEventType = "approvalbot_request" // the request's own message
	copyEventType    = "approvalbot_copy"    // a reminder or escalation copy
)

// lookupSkew is how much older than the first attempt a message may look:
// Slack's clock, which stamps ts, may run behind ours.
const lookupSkew = 5 * time.Minute

// lookupMaxPages bounds a lookup (200 messages a page): a conversation with
// more messages since the first attempt is not searched further.
const lookupMaxPages = 50

// errLookupTooLong: the conversation has too many messages since the first
// attempt to search them all.
var errLookupTooLong = errors.New("too many messages since the first attempt to search")

// errChannelUnknown: the channel is known by name only (no post to it ever
// reported its id), and history is read by id.
var errChannelUnknown = errors.New("the channel's id is not known yet")

// messageLookup is what finding and deleting sent messages needs;
// *slack.Client implements it.
type messageLookup interface {
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
	DeleteMessageContext(ctx context.Context, channel, messageTimestamp string) (string, string, error)
}

// postMetadata marks the request's own message.
func postMetadata(requestID string, attempt int) slack.MsgOption {
	return slack.MsgOptionMetadata(slack.SlackMetadata{EventType: requestEventType,
		EventPayload: map[string]any{"request_id": requestID, "attempt": attempt}})
}

// copyMetadata marks one copy.
func copyMetadata(requestID, effect string, attempt int) slack.MsgOption {
	return slack.MsgOptionMetadata(slack.SlackMetadata{EventType: copyEventType,
		EventPayload: map[string]any{"request_id": requestID, "effect": effect, "attempt": attempt}})
}

// isEffect reports whether m is the message of effect for requestID.
func isEffect(m slack.Message, requestID, effect string) bool {
	md := m.Metadata
	if md.EventPayload["request_id"] != requestID {
		return false
	}
	if effect == store.PostEffect {
		return md.EventType == requestEventType
	}
	return md.EventType == copyEventType && md.EventPayload["effect"] == effect
}

// findSent lists the ts of the messages of effect for requestID in channel
// (in the thread threadTS when set) since the first attempt, oldest first.
func findSent(ctx context.Context, api messageLookup, channel, threadTS string, firstAt time.Time, requestID, effect string) ([]string, error) {
	oldest := slackTS(firstAt.Add(-lookupSkew))
	var found []string
	cursor := ""
	for range lookupMaxPages {
		var msgs []slack.Message
		var more bool
		if threadTS != "" {
			var err error
			msgs, more, cursor, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: threadTS, Oldest: oldest, Cursor: cursor, Limit: 200, IncludeAllMetadata: true})
			if err != nil {
				return nil, err
			}
		} else {
			res, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: oldest, Cursor: cursor, Limit: 200, IncludeAllMetadata: true})
			if err != nil {
				return nil, err
			}
			msgs, more, cursor = res.Messages, res.HasMore, res.ResponseMetaData.NextCursor
		}
		for _, m := range msgs {
			if isEffect(m, requestID, effect) {
				found = append(found, m.Timestamp)
			}
		}
		if !more || cursor == "" {
			// History pages run newest first: oldest first is the reverse.
			if threadTS == "" {
				for i, j := 0, len(found)-1; i < j; i, j = i+1, j-1 {
					found[i], found[j] = found[j], found[i]
				}
			}
			return found, nil
		}
	}
	return nil, errLookupTooLong
}

// slackTS formats t as a Slack message ts.
func slackTS(t time.Time) string {
	if t.Before(time.Unix(0, 0)) {
		return "0"
	}
	return strconv.FormatInt(t.Unix(), 10) + "." + fmt.Sprintf("%06d", t.Nanosecond()/1000)
}

// lookupFailed decides what a failed lookup means before a repeated
// attempt. A failure that may pass (Slack down, rate limited, a network
// error) is returned as retry: nothing is sent, so no duplicate. A refusal
// that no retry can fix (missing_scope when the app lacks the history
// scopes, not_in_channel, a too long conversation) gives no retry: the
// caller sends anyway, because a request nobody sees is worse than one seen
// twice; the error log says so.
func lookupFailed(ctx context.Context, log *slog.Logger, err error, hold time.Duration, requestID, effect string) (retry error) {
	code, retry := classifySlack(err, hold, isPermanent)
	if retry != nil && !errors.Is(err, errLookupTooLong) && !errors.Is(err, errChannelUnknown) {
		log.WarnContext(ctx, "could not look for an earlier attempt's message; retrying", "request_id", requestID,
			"effect", effect, "err", err)
		return retry
	}
	if code == "" {
		code = err.Error()
	}
	log.ErrorContext(ctx, "cannot look for an earlier attempt's message; sending without checking: Slack may show it twice",
		"request_id", requestID, "effect", effect, "slack_error", code)
	return nil
}

// deleteCopy deletes a message the bot sent that lost the race to be
// recorded. A message already gone is fine.
func deleteCopy(ctx context.Context, api messageLookup, log *slog.Logger, requestID, effect, channel, ts string) error {
	_, _, err := api.DeleteMessageContext(ctx, channel, ts)
	var apiErr slack.SlackErrorResponse
	if err != nil && !(errors.As(err, &apiErr) && apiErr.Err == "message_not_found") {
		return fmt.Errorf("delete duplicate %s of %s (%s %s): %w", effect, requestID, channel, ts, err)
	}
	log.InfoContext(ctx, "duplicate message deleted", "request_id", requestID, "effect", effect, "channel", channel, "ts", ts)
	return nil
}

// refusedOutright reports whether a failed chat.postMessage certainly sent
// nothing: Slack answered 429, or refused the message with a code that says
// why it was not sent (the permanent codes, and "ratelimited"). Slack's own
// failures (internal_error, fatal_error, service_unavailable, an unknown
// code), a network error or a 5xx may hide a message Slack accepted: "it's
// possible some aspect of the operation succeeded", Slack says of them.
func refusedOutright(err error) bool {
	var rate *slack.RateLimitedError
	var status slack.StatusCodeError
	var apiErr slack.SlackErrorResponse
	switch {
	case errors.As(err, &rate):
		return true
	case errors.As(err, &status):
		return status.Code == http.StatusTooManyRequests
	case errors.As(err, &apiErr):
		return isPermanent(apiErr.Err) || apiErr.Err == "ratelimited" || apiErr.Err == "rate_limited"
	}
	return false
}
