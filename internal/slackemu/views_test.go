package slackemu

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func plain(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, text, false, false)
}

// approvalModal is a typical modal: a reason input and a date picker.
func approvalModal(title string) slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain(title),
		Submit:          plain("Submit"),
		Close:           plain("Cancel"),
		CallbackID:      "request_modal",
		PrivateMetadata: `{"channel":"C0APPROVALS"}`,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock("reason", plain("Reason"), nil, slack.NewPlainTextInputBlockElement(plain("Why?"), "reason_input")),
			slack.NewInputBlock("when", plain("When"), nil, slack.NewDatePickerBlockElement("date")),
		}},
	}
}

func TestViewsOpenUpdate(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s := New(Options{})
			api := tr.client(t, s)
			resp, err := api.OpenView("12345.98765.abcd", approvalModal("New request"))
			if err != nil {
				t.Fatal(err)
			}
			v := resp.View
			if !strings.HasPrefix(v.ID, "V") || v.Hash == "" || v.Type != slack.VTModal || v.Title.Text != "New request" ||
				v.CallbackID != "request_modal" || v.TeamID != DefaultTeamID || v.RootViewID != v.ID || len(v.Blocks.BlockSet) != 2 ||
				v.PrivateMetadata != `{"channel":"C0APPROVALS"}` {
				t.Fatalf("views.open view = %+v", v)
			}
			stored, ok := s.View(v.ID)
			if !ok || stored.TriggerID != "12345.98765.abcd" || stored.Type != "modal" {
				t.Fatalf("stored view = %+v", stored)
			}

			upd, err := api.UpdateView(approvalModal("Edited"), "", v.Hash, v.ID)
			if err != nil {
				t.Fatal(err)
			}
			if upd.View.ID != v.ID || upd.View.Hash == v.Hash || upd.View.Title.Text != "Edited" {
				t.Fatalf("views.update view = %+v", upd.View)
			}
			_, err = api.UpdateView(approvalModal("Stale"), "", v.Hash, v.ID)
			slackErr(t, err, "hash_conflict")
			_, err = api.UpdateView(approvalModal("Gone"), "", "", "V404")
			slackErr(t, err, "not_found")
			if got := s.Views(); len(got) != 1 || got[0].Updates != 1 || !strings.Contains(string(got[0].JSON), "Edited") {
				t.Fatalf("Views() = %+v", got)
			}
		})
	}
}

func TestViewsUpdateByExternalID(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	modal := approvalModal("Request")
	modal.ExternalID = "req-42"
	if _, err := api.OpenView("t1", modal); err != nil {
		t.Fatal(err)
	}
	_, err := api.OpenView("t2", modal)
	slackErr(t, err, "duplicate_external_id")
	resp, err := api.UpdateView(approvalModal("Updated"), "req-42", "", "")
	if err != nil || resp.View.ExternalID != "req-42" || resp.View.Title.Text != "Updated" {
		t.Fatalf("update by external id = %+v, %v", resp, err)
	}
	_, err = api.UpdateView(approvalModal("x"), "req-unknown", "", "")
	slackErr(t, err, "not_found")
}

func TestViewsOpenNeedsTrigger(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	body, _ := json.Marshal(map[string]any{"view": approvalModal("x")})
	_, _, got := raw(t, s, http.MethodPost, "/api/views.open", "application/json", string(body),
		http.Header{"Authorization": {"Bearer " + s.Token()}})
	if got != `{"ok":false,"error":"invalid_arguments"}` {
		t.Fatalf("views.open without trigger = %s", got)
	}
}

func TestStrictTriggers(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := New(Options{StrictTriggers: true, Now: clock.Now})
	api := newInProc(s)
	_, err := api.OpenView("made.up.trigger", approvalModal("x"))
	slackErr(t, err, "invalid_trigger_id")

	trig := s.IssueTriggerID()
	if _, err := api.OpenView(trig, approvalModal("x")); err != nil {
		t.Fatal(err)
	}
	_, err = api.OpenView(trig, approvalModal("x"))
	slackErr(t, err, "exchanged_trigger_id")

	late := s.IssueTriggerID()
	clock.Advance(3*time.Second + time.Millisecond)
	_, err = api.OpenView(late, approvalModal("x"))
	slackErr(t, err, "expired_trigger_id")
}

func TestViewsPushStacksOnTop(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	first, err := api.OpenView("t1", approvalModal("First"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := api.PushView("t2", approvalModal("Second"))
	if err != nil {
		t.Fatal(err)
	}
	if second.View.PreviousViewID != first.View.ID || second.View.RootViewID != first.View.ID {
		t.Fatalf("pushed view = %+v", second.View)
	}
}

func TestViewsPublish(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)
	home := slack.HomeTabViewRequest{
		Type:       slack.VTHomeTab,
		CallbackID: "home",
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewHeaderBlock(plain("Your approvals")),
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "Nothing pending", false, false), nil, nil),
		}},
	}
	resp, err := api.PublishView(UserAlice, home, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.View.Type != slack.VTHomeTab || resp.View.ID == "" {
		t.Fatalf("published view = %+v", resp.View)
	}
	got, ok := s.HomeView(UserAlice)
	if !ok || !strings.Contains(string(got), "Nothing pending") {
		t.Fatalf("HomeView = %s, %v", got, ok)
	}
	if _, ok := s.HomeView(UserBob); ok {
		t.Fatal("Bob has no home view")
	}

	again, err := api.PublishView(UserAlice, home, resp.View.Hash)
	if err != nil || again.View.ID != resp.View.ID || again.View.Hash == resp.View.Hash {
		t.Fatalf("re-publish = %+v, %v", again, err)
	}
	_, err = api.PublishView(UserAlice, home, resp.View.Hash)
	slackErr(t, err, "hash_conflict")
	_, err = api.PublishView("U0NOBODY", home, "")
	slackErr(t, err, "user_not_found")

	// A modal cannot be published to the Home tab.
	body := `{"user_id":"U0BOB","view":{"type":"modal","title":{"type":"plain_text","text":"x"},"blocks":[]}}`
	_, _, out := raw(t, s, http.MethodPost, "/api/views.publish", "application/json", body,
		http.Header{"Authorization": {"Bearer " + s.Token()}})
	if !strings.Contains(out, `"error":"invalid_arguments"`) || !strings.Contains(out, "json-pointer:/view/type") {
		t.Fatalf("publishing a modal = %s", out)
	}
}

func TestInvalidViewIsRejected(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)

	_, err := api.OpenView("t", approvalModal("This title is far too long for Slack"))
	se := slackErr(t, err, "invalid_arguments")
	if len(se.ResponseMetadata.Messages) != 1 || se.ResponseMetadata.Messages[0] != "[ERROR] must be less than 25 characters [json-pointer:/view/title/text]" {
		t.Fatalf("messages = %q", se.ResponseMetadata.Messages)
	}

	modal := approvalModal("Fine")
	modal.Blocks.BlockSet = append(modal.Blocks.BlockSet, slack.NewSectionBlock(nil, nil, nil))
	_, err = api.OpenView("t", modal)
	se = slackErr(t, err, "invalid_blocks")
	if len(se.Errors) != 1 || *se.Errors[0].Message != "must provide either text or fields [json-pointer:/view/blocks/2]" {
		t.Fatalf("errors = %+v", se.Errors)
	}
	if len(s.Views()) != 0 {
		t.Fatal("invalid views must not be stored")
	}
}
