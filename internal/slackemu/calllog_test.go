package slackemu_test

import (
	"context"
	"testing"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

// MaxCalls bounds the call log and keeps the latest calls.
func TestMaxCallsBoundsTheCallLog(t *testing.T) {
	t.Parallel()
	emu := slackemu.New(slackemu.Options{MaxCalls: 8})
	api := slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
	for range 50 {
		if _, err := api.AuthTestContext(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := api.GetUserInfoContext(context.Background(), slackemu.UserAlice); err != nil {
		t.Fatal(err)
	}
	calls := emu.Calls()
	if len(calls) < 8 || len(calls) > 10 {
		t.Errorf("%d calls kept, want 8 to 10", len(calls))
	}
	if last := calls[len(calls)-1]; last.Method != "users.info" {
		t.Errorf("latest call kept is %s, want users.info", last.Method)
	}
}
