package slackemu

import (
	"errors"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// Like Slack, history and replies return message metadata only with
// include_all_metadata, and take conversation ids only.
func TestHistoryMetadataOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	md := slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "approvalbot_request", EventPayload: map[string]any{"request_id": "r1"}})
	_, parent, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("parent", false), md)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("reply", false), slack.MsgOptionTS(parent), md); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		h, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ChannelApprovals, IncludeAllMetadata: all})
		if err != nil || len(h.Messages) != 1 {
			t.Fatalf("history: %v %+v", err, h)
		}
		if got := h.Messages[0].Metadata.EventPayload["request_id"] == "r1"; got != all {
			t.Errorf("include_all_metadata=%v: history metadata %+v", all, h.Messages[0].Metadata)
		}
		msgs, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: ChannelApprovals,
			Timestamp: parent, IncludeAllMetadata: all})
		if err != nil || len(msgs) != 2 {
			t.Fatalf("replies: %v %d", err, len(msgs))
		}
		for _, m := range msgs {
			if got := m.Metadata.EventType == "approvalbot_request"; got != all {
				t.Errorf("include_all_metadata=%v: reply metadata %+v", all, m.Metadata)
			}
		}
	}
	var apiErr slack.SlackErrorResponse
	if _, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "#approvals"}); !errors.As(err, &apiErr) || apiErr.Err != "channel_not_found" {
		t.Errorf("history by name: %v, want channel_not_found", err)
	}
}

// SetMethodLimit answers 429 with the Retry-After of the window's oldest
// call once the limit is reached, and can be switched off.
func TestMethodLimit(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	s := New(Options{Now: func() time.Time { return now }})
	api := newInProc(s)
	s.SetMethodLimit("views.publish", 2)
	publish := func() error {
		_, err := api.PublishView("U0ALICE", slack.HomeTabViewRequest{Type: slack.VTHomeTab,
			Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewDividerBlock()}}}, "")
		return err
	}
	for i := range 2 {
		if err := publish(); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		now = now.Add(10 * time.Second)
	}
	var rate *slack.RateLimitedError
	if err := publish(); !errors.As(err, &rate) || rate.RetryAfter != 40*time.Second {
		t.Fatalf("third publish within the minute: %v, want 429 with Retry-After 40s", err)
	}
	now = now.Add(40 * time.Second)
	if err := publish(); err != nil {
		t.Fatalf("publish once the first left the window: %v", err)
	}
	s.SetMethodLimit("views.publish", 0)
	for range 5 {
		if err := publish(); err != nil {
			t.Fatalf("publish with the limit off: %v", err)
		}
	}
}
