package blocks_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

func TestModalsGolden(t *testing.T) {
	t.Parallel()
	text := parse(t, wrap(decisionFixtures["text"]))
	number := parse(t, wrap(decisionFixtures["number"]))
	long := parse(t, wrap(`{"id":"long","type":"choice","prompt":"Pick one","required":true,
		"description":"`+strings.Repeat("A very long description. ", 300)+`",
		"options":[{"value":"a","label":"A","description":"`+strings.Repeat("details ", 40)+`"},{"value":"b","label":"B"}]}`))
	ref := func(d string) blocks.ModalRef {
		return blocks.ModalRef{RequestID: "req-fixture", DecisionID: d, Channel: "C0APPROVALS"}
	}
	cases := map[string]any{
		"modal_input_text":   blocks.InputModal(text, text.Data.Decisions[0], aah.Answer{}, "", ref("tagline")),
		"modal_input_number": blocks.InputModal(number, number.Data.Decisions[0], aah.Answer{Value: 7500.0}, "Q2 push", ref("budget")),
		"modal_comment":      blocks.CommentModal(text, text.Data.Decisions[0], "Earlier thought", ref("tagline")),
		"modal_details":      blocks.DetailsModal(long, long.Data.Decisions[0], ref("long")),
		"modal_submit":       blocks.SubmitModal(text, ref(blocks.RequestScope)),
	}
	for name, view := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			golden(t, name, view)
			compact, _ := json.Marshal(view)
			for _, e := range slackemu.ValidateView(compact) {
				t.Errorf("Slack would reject this modal: %v", e)
			}
		})
	}
}

func TestModalRefRoundTrip(t *testing.T) {
	t.Parallel()
	in := blocks.ModalRef{RequestID: "aah_decision_abc123", DecisionID: "d4", Channel: "C0APPROVALS"}
	out, ok := blocks.ParseModalRef(in.Encode())
	if !ok || out != in {
		t.Errorf("round trip: %+v %v", out, ok)
	}
	for _, bad := range []string{"", "{}", "not json", `{"r":"x"}`} {
		if _, ok := blocks.ParseModalRef(bad); ok {
			t.Errorf("ParseModalRef(%q) accepted", bad)
		}
	}
}
