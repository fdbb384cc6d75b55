package slackout

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

// ChatEndpoint sends what slack-go sends for the same message (text,
// blocks, metadata, channel, token), answers what it answers, and fails
// with slack-go's error types, which errors.go reads.
func TestChatEndpointPostsAsSlackGoDoes(t *testing.T) {
	emu := slackemu.New(slackemu.Options{})
	t.Cleanup(func() { _ = emu.Close() })
	api := slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
	chat := &ChatEndpoint{Client: emu.Client(), APIURL: emu.APIURL(), Token: emu.Token()}
	ctx := context.Background()
	text := "Approve *Q3 plan* & budget <ok>?"
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Q3 plan* & <budget>", false, false), nil, nil),
		slack.NewActionBlock("a1", slack.NewButtonBlockElement("approve", "true",
			slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false))),
	}
	meta := postMetadata("req-1", 2)

	wantChannel, wantTS, err := api.PostMessageContext(ctx, slackemu.ChannelApprovals,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), meta)
	if err != nil {
		t.Fatal(err)
	}
	channel, ts, err := chat.postMessage(ctx, slackemu.ChannelApprovals, text, blocks, meta)
	if err != nil {
		t.Fatal(err)
	}
	if channel != wantChannel || ts == "" || ts == wantTS {
		t.Errorf("answered channel %q ts %q; slack-go read %q %q", channel, ts, wantChannel, wantTS)
	}
	msgs := emu.Messages(slackemu.ChannelApprovals)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	a, b := msgs[0], msgs[1]
	if b.TS != ts || a.Text != b.Text || string(a.Blocks) != string(b.Blocks) || string(a.Metadata) != string(b.Metadata) || a.User != b.User {
		t.Errorf("ChatEndpoint's message differs from slack-go's:\n%+v\n%+v", a, b)
	}
	if len(b.Blocks) < 10 || len(b.Metadata) < 10 {
		t.Errorf("message lost its blocks or metadata: %+v", b)
	}

	// No blocks: "[]", as slack-go sends.
	if _, _, err := chat.postMessage(ctx, slackemu.ChannelApprovals, "plain", nil); err != nil {
		t.Errorf("a message without blocks: %v", err)
	}

	// Slack's refusals, as slack-go reports them.
	emu.InjectError("chat.postMessage", "channel_not_found", 1)
	_, _, err = chat.postMessage(ctx, slackemu.ChannelApprovals, text, blocks)
	var apiErr slack.SlackErrorResponse
	if !errors.As(err, &apiErr) || apiErr.Err != "channel_not_found" {
		t.Errorf("error answer: %v (%T), want slack.SlackErrorResponse channel_not_found", err, err)
	}
	emu.InjectRateLimit("chat.postMessage", 1, 7*time.Second)
	_, _, err = chat.postMessage(ctx, slackemu.ChannelApprovals, text, blocks)
	var rate *slack.RateLimitedError
	if !errors.As(err, &rate) || rate.RetryAfter != 7*time.Second {
		t.Errorf("429: %v (%T), want *slack.RateLimitedError of 7s", err, err)
	}
	emu.InjectHTTPStatus("chat.postMessage", http.StatusServiceUnavailable, 1)
	_, _, err = chat.postMessage(ctx, slackemu.ChannelApprovals, text, blocks)
	var status slack.StatusCodeError
	if !errors.As(err, &status) || status.Code != http.StatusServiceUnavailable {
		t.Errorf("503: %v (%T), want slack.StatusCodeError 503", err, err)
	}
	if got := len(emu.Messages(slackemu.ChannelApprovals)); got != 3 {
		t.Errorf("%d messages after the refusals, want 3", got)
	}
}
