package slackout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// ChatEndpoint is where the poster sends chat.postMessage itself
// (Options.Chat), with the form slack-go would send, reading back only
// what it uses of Slack's answer: ok, error, channel and ts. Slack's answer
// echoes the whole message, and slack-go decodes its blocks into its typed
// structs, which cost a third of a post's CPU (issue #17, BENCHMARKS.md).
// The errors are slack-go's types, so everything that reads a post's error
// (errors.go) reads it unchanged.
type ChatEndpoint struct {
	// Client is the HTTP client of the Slack client (its timeout and
	// instrumented transport).
	Client *http.Client
	// APIURL is the Slack client's API URL (slack.OptionAPIURL), ending in
	// "/".
	APIURL string
	// Token is the bot token.
	Token string
}

// chatAnswer is the part of chat.postMessage's answer the poster reads.
type chatAnswer struct {
	slack.SlackResponse
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// postMessage sends chat.postMessage to channel with text, blocks and
// opts (as slack.Client.PostMessageContext with MsgOptionText(text, false)
// and MsgOptionBlocks(blocks...) would) and returns the channel's id and
// the message's ts.
func (e *ChatEndpoint) postMessage(ctx context.Context, channel, text string, blocks []slack.Block, opts ...slack.MsgOption) (string, string, error) {
	endpoint, values, err := slack.UnsafeApplyMsgOptions(e.Token, channel, e.APIURL,
		append([]slack.MsgOption{slack.MsgOptionText(text, false)}, opts...)...)
	if err != nil {
		return "", "", err
	}
	if blocks == nil {
		blocks = []slack.Block{} // slack-go sends "[]" for no blocks
	}
	encoded, err := json.Marshal(blocks)
	if err != nil {
		return "", "", fmt.Errorf("encode the message's blocks: %w", err)
	}
	values.Set("blocks", string(encoded))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(values.Encode()))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := e.Client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	// As slack-go's checkStatusCode.
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		retry, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
		if err != nil {
			return "", "", err
		}
		return "", "", &slack.RateLimitedError{RetryAfter: time.Duration(retry) * time.Second}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return "", "", slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	var answer chatAnswer
	if err := json.Unmarshal(body, &answer); err != nil {
		return "", "", err
	}
	return answer.Channel, answer.TS, answer.Err()
}
