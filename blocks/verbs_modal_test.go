package blocks_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
)

// scaleRequest is a request whose approval decision proposes scaling a
// service, with one editable parameter of each kind and reasons to reject.
func scaleRequest(t *testing.T) *aah.Request {
	t.Helper()
	req := parse(t, wrap(decisionFixtures["approval"]))
	one, ten, three, forty := 1.0, 10.0, 3, 40
	req.Data.Decisions[0].Review = &aah.Review{
		Action: &aah.ProposedAction{ActionType: "tool_call", ToolName: "scale_service",
			Parameters:     map[string]any{"service": "api", "replicas": 6.0, "ratio": 0.5, "region": "eu-west-1", "drain": true},
			ParameterOrder: []string{"service", "replicas", "ratio", "region", "drain"}},
		Responses: aah.Verbs,
		Editable: []aah.EditableParam{
			{Name: "replicas", Type: aah.ParamInteger, Minimum: &one, Maximum: &ten},
			{Name: "ratio", Type: aah.ParamNumber},
			{Name: "region", Type: aah.ParamString, Enum: []string{"eu-west-1", "us-east-1"}},
			{Name: "drain", Type: aah.ParamBoolean},
			{Name: "service", Type: aah.ParamString, MinLength: &three, MaxLength: &forty, Pattern: "^[a-z-]+$"},
		},
		RejectReasons: []string{"Too expensive", "Wrong service"},
	}
	return req
}

// The verb modals, golden, and each one valid for Slack (the emulator's
// Block Kit validation).
func TestVerbModalsGolden(t *testing.T) {
	t.Parallel()
	req := scaleRequest(t)
	d := req.Data.Decisions[0]
	ref := blocks.ModalRef{RequestID: "req-fixture", DecisionID: "ship", Channel: "C0APPROVALS"}
	scope := blocks.ModalRef{RequestID: "req-fixture", DecisionID: blocks.RequestScope, Channel: "C0APPROVALS"}
	edited := map[string]any{"service": "api", "replicas": 4.0, "ratio": 0.5, "region": "us-east-1", "drain": false}
	cases := map[string]slack.ModalViewRequest{
		"modal_modify":              blocks.ModifyModal(req, d, d.Review.Action.Parameters, ref),
		"modal_modify_edited":       blocks.ModifyModal(req, d, edited, ref),
		"modal_defer":               blocks.DirectiveModal(req, aah.VerbDefer, scope),
		"modal_change_plan":         blocks.DirectiveModal(req, aah.VerbChangePlan, scope),
		"modal_abort":               blocks.DirectiveModal(req, aah.VerbAbort, scope),
		"modal_escalate":            blocks.EscalateModal(req, scope),
		"modal_reject_with_reasons": blocks.RejectModal(req, ref),
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

// What the verb modals promise the handlers: an input per editable
// parameter under its block id, starting at the current value; the
// directive's verb in the metadata; the reasons select only where reasons
// are offered.
func TestVerbModalsShape(t *testing.T) {
	t.Parallel()
	req := scaleRequest(t)
	d := req.Data.Decisions[0]
	ref := blocks.ModalRef{RequestID: "req-fixture", DecisionID: "ship"}
	v := blocks.ModifyModal(req, d, map[string]any{"replicas": 4.0, "region": "us-east-1", "drain": false}, ref)
	inputs := map[string]*slack.InputBlock{}
	for _, b := range v.Blocks.BlockSet {
		if in, ok := b.(*slack.InputBlock); ok {
			inputs[in.BlockID] = in
		}
	}
	if n := inputs["param:replicas"].Element.(*slack.NumberInputBlockElement); n.InitialValue != "4" || n.MinValue != "1" || n.MaxValue != "10" || n.IsDecimalAllowed {
		t.Errorf("replicas: %+v", n)
	}
	if n := inputs["param:ratio"].Element.(*slack.NumberInputBlockElement); !n.IsDecimalAllowed {
		t.Errorf("ratio: %+v", n)
	}
	if s := inputs["param:region"].Element.(*slack.SelectBlockElement); s.Type != "static_select" || s.InitialOption.Value != "us-east-1" || len(s.Options) != 2 {
		t.Errorf("region: %+v", s)
	}
	if r := inputs["param:drain"].Element.(*slack.RadioButtonsBlockElement); r.InitialOption.Value != blocks.BoolFalse {
		t.Errorf("drain: %+v", r)
	}
	if p := inputs["param:service"].Element.(*slack.PlainTextInputBlockElement); p.MinLength != 3 || p.MaxLength != 40 || inputs["param:service"].Optional {
		t.Errorf("service: %+v", p)
	}
	if c := inputs[blocks.BlockComment]; c == nil || !c.Optional || v.CallbackID != blocks.ModalModify {
		t.Errorf("comment %+v, callback %s", c, v.CallbackID)
	}
	dir := blocks.DirectiveModal(req, aah.VerbChangePlan, ref)
	if got, ok := blocks.ParseModalRef(dir.PrivateMetadata); !ok || got.Verb != "change_plan" || dir.CallbackID != blocks.ModalDirective {
		t.Errorf("directive ref %+v", got)
	}
	// The reasons: on the decision offering them, and on "Reject all" only
	// those every approval decision offers.
	if got := blocks.RejectReasons(req, "ship"); !slices.Equal(got, []string{"Too expensive", "Wrong service"}) {
		t.Errorf("reasons of ship: %v", got)
	}
	two := parse(t, wrap(decisionFixtures["approval"]+`,{"id":"budget","type":"approval","prompt":"Budget?","required":true}`))
	two.Data.Decisions[0].Review = d.Review
	if got := blocks.RejectReasons(two, blocks.RequestScope); len(got) != 0 {
		t.Errorf("reject all with a decision offering none: %v", got)
	}
	plain := blocks.RejectModal(parse(t, wrap(decisionFixtures["approval"])), ref)
	for _, b := range plain.Blocks.BlockSet {
		if in, ok := b.(*slack.InputBlock); ok && (in.BlockID == blocks.BlockRejectReason || in.Optional) {
			t.Errorf("a request without reasons: %+v", in)
		}
	}
}
