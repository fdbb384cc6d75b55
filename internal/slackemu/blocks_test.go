package slackemu

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// rep returns a string of n "x" characters.
func rep(n int) string { return strings.Repeat("x", n) }

// txt returns a JSON text object.
func txt(typ, text string) string {
	return fmt.Sprintf(`{"type":%q,"text":%q}`, typ, text)
}

func pt(text string) string { return txt("plain_text", text) }

// repeatJSON joins n copies of item with commas.
func repeatJSON(item string, n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = strings.ReplaceAll(item, "%d", fmt.Sprint(i))
	}
	return strings.Join(items, ",")
}

func button(id, text string) string {
	return fmt.Sprintf(`{"type":"button","action_id":%q,"text":%s}`, id, pt(text))
}

func option(value, text string) string {
	return fmt.Sprintf(`{"value":%q,"text":%s}`, value, pt(text))
}

func actions(elements ...string) string {
	return `{"type":"actions","elements":[` + strings.Join(elements, ",") + `]}`
}

func selectEl(extra string) string {
	return `{"type":"static_select","action_id":"s","options":[` + option("a", "A") + `,` + option("b", "B") + `]` + extra + `}`
}

func confirmEl(title, text, confirm, deny string) string {
	return actions(`{"type":"button","action_id":"b","text":` + pt("Go") + `,"confirm":{"title":` + pt(title) +
		`,"text":` + txt("mrkdwn", text) + `,"confirm":` + pt(confirm) + `,"deny":` + pt(deny) + `}}`)
}

func inputEl(element string) string {
	return `{"type":"input","label":` + pt("Label") + `,"element":` + element + `}`
}

func TestValidateBlocksRules(t *testing.T) {
	t.Parallel()
	section := func(s string) string { return `{"type":"section","text":` + txt("mrkdwn", s) + `}` }
	cases := []struct {
		name    string
		surface Surface
		blocks  string // JSON array body, without brackets
		ptr     string
		msg     string
	}{
		{"message over 50 blocks", SurfaceMessage, repeatJSON(`{"type":"divider"}`, 51), "/blocks", "no more than 50 items allowed"},
		{"modal over 100 blocks", SurfaceModal, repeatJSON(`{"type":"divider"}`, 101), "/blocks", "no more than 100 items allowed"},
		{"home over 100 blocks", SurfaceHome, repeatJSON(`{"type":"divider"}`, 101), "/blocks", "no more than 100 items allowed"},
		{"block not an object", SurfaceMessage, `1`, "/blocks/0", "must be an object"},
		{"block without type", SurfaceMessage, `{}`, "/blocks/0", "missing required field: type"},
		{"unknown block type", SurfaceMessage, `{"type":"video"}`, "/blocks/0/type", `unsupported block type "video"`},
		{"unknown element type", SurfaceMessage, actions(`{"type":"slider","action_id":"x"}`), "/blocks/0/elements/0/type", `unsupported element type "slider"`},
		{"input element in actions", SurfaceModal, actions(`{"type":"plain_text_input","action_id":"x"}`), "/blocks/0/elements/0/type", `element type "plain_text_input" is not allowed in "actions" blocks`},
		{"block_id too long", SurfaceMessage, `{"type":"divider","block_id":"` + rep(256) + `"}`, "/blocks/0/block_id", "must be less than 256 characters"},
		{"block_id not unique", SurfaceMessage, `{"type":"divider","block_id":"d"},{"type":"divider","block_id":"d"}`, "/blocks/1/block_id", `non-unique block_id "d"`},
		{"action_id too long", SurfaceMessage, actions(button(rep(256), "Go")), "/blocks/0/elements/0/action_id", "must be less than 256 characters"},
		{"action_id not unique in block", SurfaceMessage, actions(button("a", "Go"), button("a", "Stop")), "/blocks/0/elements/1/action_id", `non-unique action_id "a"`},
		{"header text too long", SurfaceMessage, `{"type":"header","text":` + pt(rep(151)) + `}`, "/blocks/0/text/text", "must be less than 151 characters"},
		{"header mrkdwn", SurfaceMessage, `{"type":"header","text":` + txt("mrkdwn", "Hi") + `}`, "/blocks/0/text/type", `must be "plain_text"`},
		{"header without text", SurfaceMessage, `{"type":"header"}`, "/blocks/0", "missing required field: text"},
		{"section text too long", SurfaceMessage, section(rep(3001)), "/blocks/0/text/text", "must be less than 3001 characters"},
		{"section over 10 fields", SurfaceMessage, `{"type":"section","fields":[` + repeatJSON(pt("f"), 11) + `]}`, "/blocks/0/fields", "no more than 10 items allowed"},
		{"section field too long", SurfaceMessage, `{"type":"section","fields":[` + pt("ok") + `,` + txt("mrkdwn", rep(2001)) + `]}`, "/blocks/0/fields/1/text", "must be less than 2001 characters"},
		{"section without text or fields", SurfaceMessage, `{"type":"section"}`, "/blocks/0", "must provide either text or fields"},
		{"section accessory input", SurfaceModal, `{"type":"section","text":` + pt("x") + `,"accessory":{"type":"number_input","is_decimal_allowed":false}}`, "/blocks/0/accessory/type", `element type "number_input" is not allowed in "section" blocks`},
		{"context over 10 elements", SurfaceMessage, `{"type":"context","elements":[` + repeatJSON(pt("c"), 11) + `]}`, "/blocks/0/elements", "no more than 10 items allowed"},
		{"context empty", SurfaceMessage, `{"type":"context","elements":[]}`, "/blocks/0/elements", "must provide at least 1 item"},
		{"actions over 25 elements", SurfaceMessage, actions(repeatJSON(button("b%d", "B"), 26)), "/blocks/0/elements", "no more than 25 items allowed"},
		{"button text too long", SurfaceMessage, actions(button("b", rep(76))), "/blocks/0/elements/0/text/text", "must be less than 76 characters"},
		{"button text mrkdwn", SurfaceMessage, actions(`{"type":"button","text":` + txt("mrkdwn", "*Go*") + `}`), "/blocks/0/elements/0/text/type", `must be "plain_text"`},
		{"button value too long", SurfaceMessage, actions(`{"type":"button","text":` + pt("Go") + `,"value":"` + rep(2001) + `"}`), "/blocks/0/elements/0/value", "must be less than 2001 characters"},
		{"button url too long", SurfaceMessage, actions(`{"type":"button","text":` + pt("Go") + `,"url":"https://` + rep(2993) + `"}`), "/blocks/0/elements/0/url", "must be less than 3001 characters"},
		{"button style", SurfaceMessage, actions(`{"type":"button","text":` + pt("Go") + `,"style":"secondary"}`), "/blocks/0/elements/0/style", `must be one of "primary", "danger"`},
		{"confirm title too long", SurfaceMessage, confirmEl(rep(101), "Sure?", "Yes", "No"), "/blocks/0/elements/0/confirm/title/text", "must be less than 101 characters"},
		{"confirm text too long", SurfaceMessage, confirmEl("Sure?", rep(301), "Yes", "No"), "/blocks/0/elements/0/confirm/text/text", "must be less than 301 characters"},
		{"confirm button too long", SurfaceMessage, confirmEl("Sure?", "Really?", rep(31), "No"), "/blocks/0/elements/0/confirm/confirm/text", "must be less than 31 characters"},
		{"deny button too long", SurfaceMessage, confirmEl("Sure?", "Really?", "Yes", rep(31)), "/blocks/0/elements/0/confirm/deny/text", "must be less than 31 characters"},
		{"select without options", SurfaceMessage, actions(`{"type":"static_select","options":[]}`), "/blocks/0/elements/0/options", "must provide at least 1 item"},
		{"select over 100 options", SurfaceMessage, actions(`{"type":"static_select","options":[` + repeatJSON(option("v%d", "T"), 101) + `]}`), "/blocks/0/elements/0/options", "no more than 100 items allowed"},
		{"option text too long", SurfaceMessage, actions(`{"type":"static_select","options":[` + option("v", rep(76)) + `]}`), "/blocks/0/elements/0/options/0/text/text", "must be less than 76 characters"},
		{"select option text mrkdwn", SurfaceMessage, actions(`{"type":"static_select","options":[{"value":"v","text":` + txt("mrkdwn", "*v*") + `}]}`), "/blocks/0/elements/0/options/0/text/type", `must be "plain_text"`},
		{"option value too long", SurfaceMessage, actions(`{"type":"static_select","options":[` + option(rep(151), "T") + `]}`), "/blocks/0/elements/0/options/0/value", "must be less than 151 characters"},
		{"option description too long", SurfaceMessage, actions(`{"type":"static_select","options":[{"value":"v","text":` + pt("T") + `,"description":` + pt(rep(76)) + `}]}`), "/blocks/0/elements/0/options/0/description/text", "must be less than 76 characters"},
		{"option values not unique", SurfaceMessage, actions(`{"type":"static_select","options":[` + option("v", "A") + `,` + option("v", "B") + `]}`), "/blocks/0/elements/0/options/1/value", `non-unique option value "v"`},
		{"initial_option not an option", SurfaceMessage, actions(selectEl(`,"initial_option":` + option("c", "C"))), "/blocks/0/elements/0/initial_option", "must exactly match one of the provided options"},
		{"initial_option text differs", SurfaceMessage, actions(selectEl(`,"initial_option":` + option("a", "Not A"))), "/blocks/0/elements/0/initial_option", "must exactly match one of the provided options"},
		{"multi initial_options not options", SurfaceMessage, actions(`{"type":"multi_static_select","options":[` + option("a", "A") + `],"initial_options":[` + option("z", "Z") + `]}`), "/blocks/0/elements/0/initial_options/0", "must exactly match one of the provided options"},
		{"placeholder too long", SurfaceMessage, actions(selectEl(`,"placeholder":` + pt(rep(151)))), "/blocks/0/elements/0/placeholder/text", "must be less than 151 characters"},
		{"multi max_selected_items 0", SurfaceMessage, actions(`{"type":"multi_static_select","options":[` + option("a", "A") + `],"max_selected_items":0}`), "/blocks/0/elements/0/max_selected_items", "must be greater than or equal to 1"},
		{"datepicker bad format", SurfaceMessage, actions(`{"type":"datepicker","initial_date":"2026-2-17"}`), "/blocks/0/elements/0/initial_date", "must be a valid date in the format YYYY-MM-DD"},
		{"datepicker impossible date", SurfaceMessage, actions(`{"type":"datepicker","initial_date":"2026-02-30"}`), "/blocks/0/elements/0/initial_date", "must be a valid date in the format YYYY-MM-DD"},
		{"timepicker bad time", SurfaceMessage, actions(`{"type":"timepicker","initial_time":"25:00"}`), "/blocks/0/elements/0/initial_time", "must be a valid time in the format HH:mm"},
		{"overflow over 5 options", SurfaceMessage, actions(`{"type":"overflow","options":[` + repeatJSON(option("v%d", "T"), 6) + `]}`), "/blocks/0/elements/0/options", "no more than 5 items allowed"},
		{"overflow option text mrkdwn", SurfaceMessage, actions(`{"type":"overflow","action_id":"o","options":[{"value":"v","text":` + txt("mrkdwn", "*v*") + `}]}`), "/blocks/0/elements/0/options/0/text/type", `must be "plain_text"`},
		{"overflow without options", SurfaceMessage, actions(`{"type":"overflow","action_id":"o"}`), "/blocks/0/elements/0", "missing required field: options"},
		{"overflow confirm title too long", SurfaceMessage, actions(`{"type":"overflow","action_id":"o","options":[` + option("v", "V") + `],"confirm":{"title":` + pt(rep(101)) + `,"text":` + pt("Sure?") + `,"confirm":` + pt("Yes") + `}}`), "/blocks/0/elements/0/confirm/title/text", "must be less than 101 characters"},
		{"confirm style unknown", SurfaceMessage, actions(`{"type":"button","action_id":"b","text":` + pt("Go") + `,"confirm":{"title":` + pt("T") + `,"text":` + pt("Sure?") + `,"confirm":` + pt("Yes") + `,"style":"warning"}}`), "/blocks/0/elements/0/confirm/style", `must be one of "primary", "danger"`},
		{"confirm without confirm button", SurfaceMessage, actions(`{"type":"button","action_id":"b","text":` + pt("Go") + `,"confirm":{"title":` + pt("T") + `,"text":` + pt("Sure?") + `}}`), "/blocks/0/elements/0/confirm", "missing required field: confirm"},
		{"datetimepicker negative time", SurfaceMessage, actions(`{"type":"datetimepicker","action_id":"d","initial_date_time":-5}`), "/blocks/0/elements/0/initial_date_time", "must be a UNIX timestamp in seconds"},
		{"datetimepicker time as text", SurfaceMessage, actions(`{"type":"datetimepicker","action_id":"d","initial_date_time":"2026-03-02T14:30:00Z"}`), "/blocks/0/elements/0/initial_date_time", "must be an integer"},
		{"checkboxes initial not an option", SurfaceModal, actions(`{"type":"checkboxes","options":[` + option("a", "A") + `],"initial_options":[` + option("b", "B") + `]}`), "/blocks/0/elements/0/initial_options/0", "must exactly match one of the provided options"},
		{"input in message", SurfaceMessage, inputEl(`{"type":"plain_text_input","action_id":"r"}`), "/blocks/0/type", `"input" blocks are only allowed in modals and Home tabs`},
		{"input label too long", SurfaceModal, `{"type":"input","label":` + pt(rep(2001)) + `,"element":{"type":"plain_text_input"}}`, "/blocks/0/label/text", "must be less than 2001 characters"},
		{"input without element", SurfaceModal, `{"type":"input","label":` + pt("L") + `}`, "/blocks/0", "missing required field: element"},
		{"input with button", SurfaceModal, inputEl(button("b", "B")), "/blocks/0/element/type", `element type "button" is not allowed in "input" blocks`},
		{"text input min > max", SurfaceModal, inputEl(`{"type":"plain_text_input","min_length":10,"max_length":5}`), "/blocks/0/element/min_length", "must be less than or equal to max_length"},
		{"text input max > 3000", SurfaceModal, inputEl(`{"type":"plain_text_input","max_length":3001}`), "/blocks/0/element/max_length", "must be between 1 and 3000"},
		{"number input without is_decimal_allowed", SurfaceModal, inputEl(`{"type":"number_input"}`), "/blocks/0/element", "missing required field: is_decimal_allowed"},
		{"number input min > max", SurfaceModal, inputEl(`{"type":"number_input","is_decimal_allowed":false,"min_value":"10","max_value":"1"}`), "/blocks/0/element/min_value", "must be less than or equal to max_value"},
		{"number input decimal not allowed", SurfaceModal, inputEl(`{"type":"number_input","is_decimal_allowed":false,"initial_value":"1.5"}`), "/blocks/0/element/initial_value", "must be an integer when is_decimal_allowed is false"},
		{"text object bad type", SurfaceMessage, `{"type":"section","text":` + txt("markdown", "x") + `}`, "/blocks/0/text/type", `must be one of "plain_text", "mrkdwn"`},
		{"text object empty text", SurfaceMessage, `{"type":"section","text":` + txt("mrkdwn", "") + `}`, "/blocks/0/text/text", "must be more than 0 characters"},
		{"text object without text", SurfaceMessage, `{"type":"section","text":{"type":"mrkdwn"}}`, "/blocks/0/text", "missing required field: text"},
		{"image without alt_text", SurfaceMessage, `{"type":"image","image_url":"https://example.com/a.png"}`, "/blocks/0", "missing required field: alt_text"},
		{"option groups share unique values", SurfaceMessage, actions(`{"type":"static_select","option_groups":[{"label":` + pt("G1") + `,"options":[` + option("v", "A") + `]},{"label":` + pt("G2") + `,"options":[` + option("v", "B") + `]}]}`), "/blocks/0/elements/0/option_groups/1/options/0/value", `non-unique option value "v"`},
		{"option group initial_option", SurfaceMessage, actions(`{"type":"static_select","option_groups":[{"label":` + pt("G1") + `,"options":[` + option("v", "A") + `]}],"initial_option":` + option("w", "W") + `}`), "/blocks/0/elements/0/initial_option", "must exactly match one of the provided options"},
		{"select with options and groups", SurfaceMessage, actions(`{"type":"static_select","options":[` + option("v", "A") + `],"option_groups":[]}`), "/blocks/0/elements/0", "must provide either options or option_groups, not both"},
		{"option url outside overflow", SurfaceMessage, actions(`{"type":"static_select","options":[{"value":"v","text":` + pt("A") + `,"url":"https://x"}]}`), "/blocks/0/elements/0/options/0/url", "only allowed in overflow menus"},
		{"rich text bad element", SurfaceMessage, `{"type":"rich_text","elements":[{"type":"paragraph"}]}`, "/blocks/0/elements/0/type", `unsupported rich text element type "paragraph"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := ValidateBlocks(tc.surface, json.RawMessage("["+tc.blocks+"]"))
			if len(errs) != 1 || errs[0].Pointer != tc.ptr || errs[0].Message != tc.msg {
				t.Fatalf("errors = %q\nwant   %q", errs, BlockError{Pointer: tc.ptr, Message: tc.msg}.Error())
			}
		})
	}
}

func TestValidateBlocksNotAnArray(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"type":"divider"}`, `not json`} {
		if errs := ValidateBlocks(SurfaceMessage, json.RawMessage(in)); len(errs) != 1 || errs[0].Pointer != "/blocks" {
			t.Errorf("ValidateBlocks(%s) = %v", in, errs)
		}
	}
}

func TestValidateBlocksAcceptsLimits(t *testing.T) {
	t.Parallel()
	cases := map[Surface]string{
		SurfaceMessage: repeatJSON(`{"type":"divider"}`, 50),
		SurfaceModal:   repeatJSON(`{"type":"divider"}`, 100),
	}
	// Exactly at every length limit, and the same action_id in two blocks.
	cases[SurfaceHome] = strings.Join([]string{
		`{"type":"header","text":` + pt(rep(150)) + `}`,
		`{"type":"section","text":` + txt("mrkdwn", rep(3000)) + `,"fields":[` + repeatJSON(txt("mrkdwn", rep(2000)), 10) + `]}`,
		actions(button("same", rep(75))),
		actions(button("same", "B"), `{"type":"button","text":`+pt("U")+`,"url":"https://`+rep(2992)+`","value":"`+rep(2000)+`","style":"danger"}`),
		inputEl(`{"type":"plain_text_input","min_length":3000,"max_length":3000}`),
		`{"type":"context","elements":[` + repeatJSON(pt("c"), 10) + `]}`,
	}, ",")
	for surface, blocks := range cases {
		if errs := ValidateBlocks(surface, json.RawMessage("["+blocks+"]")); len(errs) != 0 {
			t.Errorf("%s: unexpected errors %v", surface, errs)
		}
	}
}

// approvalMessage is a realistic approval request built with slack-go.
func approvalMessage() []slack.Block {
	mk := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
	}
	opts := []*slack.OptionBlockObject{
		slack.NewOptionBlockObject("now", plain("Launch now"), nil),
		slack.NewOptionBlockObject("monday", plain("Launch next Monday"), plain("after the freeze")),
	}
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("When?"), "when", opts...)
	sel.InitialOption = opts[1]
	date := slack.NewDatePickerBlockElement("date")
	date.InitialDate = "2026-02-17"
	approve := slack.NewButtonBlockElement("approve", "req-1", plain("Approve")).WithStyle(slack.StylePrimary)
	reject := slack.NewButtonBlockElement("reject", "req-1", plain("Reject")).WithStyle(slack.StyleDanger).
		WithConfirm(slack.NewConfirmationBlockObject(plain("Reject?"), mk("This cannot be undone."), plain("Reject"), plain("Cancel")))
	overflow := slack.NewOverflowBlockElement("more",
		slack.NewOptionBlockObject("details", plain("Details"), nil), slack.NewOptionBlockObject("cancel", plain("Cancel"), nil))
	return []slack.Block{
		slack.NewHeaderBlock(plain("Deploy approval")),
		slack.NewSectionBlock(mk("<@U0REQUESTER> asks to deploy *api*"),
			[]*slack.TextBlockObject{mk("*Service:*\napi"), mk("*Env:*\nprod")},
			slack.NewAccessory(slack.NewButtonBlockElement("view", "", plain("View")).WithURL("https://example.com"))),
		slack.NewContextBlock("meta", mk("Requested <!date^1700000000^{date_short_pretty}|Nov 14>"),
			slack.NewImageBlockElement("https://example.com/i.png", "icon")),
		slack.NewDividerBlock(),
		slack.NewActionBlock("decide", approve, reject, sel, date, overflow),
		slack.NewImageBlock("https://example.com/chart.png", "chart", "img", plain("Chart")),
	}
}

func TestValidateBlocksAcceptsSlackGoBlocks(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(approvalMessage())
	if err != nil {
		t.Fatal(err)
	}
	if errs := ValidateBlocks(SurfaceMessage, raw); len(errs) != 0 {
		t.Fatalf("unexpected errors %v in %s", errs, raw)
	}

	maxItems := 2
	multi := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Pick"), "multi",
		slack.NewOptionBlockObject("a", plain("A"), nil), slack.NewOptionBlockObject("b", plain("B"), nil))
	multi.MaxSelectedItems = &maxItems
	num := slack.NewNumberInputBlockElement(plain("Amount"), "amount", true)
	num.MinValue, num.MaxValue = "0", "10000.50"
	checks := slack.NewCheckboxGroupsBlockElement("checks",
		slack.NewOptionBlockObject("x", slack.NewTextBlockObject(slack.MarkdownType, "*X*", false, false), nil))
	radio := slack.NewRadioButtonsBlockElement("radio", slack.NewOptionBlockObject("r", plain("R"), nil))
	users := slack.NewOptionsSelectBlockElement(slack.OptTypeUser, plain("Approver"), "approver")
	users.InitialUser = UserAlice
	modal := slack.ModalViewRequest{
		Type: slack.VTModal, Title: plain("New request"), Submit: plain("Submit"), Close: plain("Cancel"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock("what", plain("What"), plain("hint"), slack.NewPlainTextInputBlockElement(plain("Describe"), "what")),
			slack.NewInputBlock("amount", plain("Amount"), nil, num),
			slack.NewInputBlock("tags", plain("Tags"), nil, multi),
			slack.NewInputBlock("checks", plain("Checks"), nil, checks),
			slack.NewInputBlock("radio", plain("Radio"), nil, radio),
			slack.NewInputBlock("approver", plain("Approver"), nil, users),
			slack.NewInputBlock("time", plain("Time"), nil, slack.NewTimePickerBlockElement("time")),
			slack.NewInputBlock("channel", plain("Channel"), nil,
				slack.NewOptionsSelectBlockElement(slack.OptTypeConversations, plain("Channel"), "channel")),
			slack.NewInputBlock("at", plain("At"), nil, slack.NewDateTimePickerBlockElement("at")),
		}},
	}
	rawView, err := json.Marshal(modal)
	if err != nil {
		t.Fatal(err)
	}
	if errs := ValidateView(rawView); len(errs) != 0 {
		t.Fatalf("unexpected errors %v in %s", errs, rawView)
	}
}

func TestValidateViewRules(t *testing.T) {
	t.Parallel()
	input := inputEl(`{"type":"plain_text_input"}`)
	modal := func(extra, blocks string) string {
		return `{"type":"modal","title":` + pt("Title") + extra + `,"blocks":[` + blocks + `]}`
	}
	cases := []struct {
		name, view, ptr, msg string
	}{
		{"not an object", `[]`, "/view", "must be an object"},
		{"no type", `{"blocks":[]}`, "/view", "missing required field: type"},
		{"bad type", `{"type":"sheet","blocks":[]}`, "/view/type", `must be one of "modal", "home"`},
		{"no blocks", `{"type":"home"}`, "/view", "missing required field: blocks"},
		{"no title", `{"type":"modal","blocks":[]}`, "/view", "missing required field: title"},
		{"title too long", `{"type":"modal","title":` + pt(rep(25)) + `,"blocks":[]}`, "/view/title/text", "must be less than 25 characters"},
		{"title mrkdwn", `{"type":"modal","title":` + txt("mrkdwn", "T") + `,"blocks":[]}`, "/view/title/type", `must be "plain_text"`},
		{"submit too long", modal(`,"submit":`+pt(rep(25)), ""), "/view/submit/text", "must be less than 25 characters"},
		{"close too long", modal(`,"close":`+pt(rep(25)), ""), "/view/close/text", "must be less than 25 characters"},
		{"inputs need submit", modal("", input), "/view", "missing required field: submit (required when the view has input blocks)"},
		{"private_metadata too long", modal(`,"private_metadata":"`+rep(3001)+`"`, ""), "/view/private_metadata", "must be less than 3001 characters"},
		{"callback_id too long", modal(`,"callback_id":"`+rep(256)+`"`, ""), "/view/callback_id", "must be less than 256 characters"},
		{"over 100 blocks", `{"type":"home","blocks":[` + repeatJSON(`{"type":"divider"}`, 101) + `]}`, "/view/blocks", "no more than 100 items allowed"},
		{"block error pointer", modal("", `{"type":"divider"},{"type":"header","text":`+pt(rep(151))+`}`), "/view/blocks/1/text/text", "must be less than 151 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := ValidateView(json.RawMessage(tc.view))
			if len(errs) != 1 || errs[0].Pointer != tc.ptr || errs[0].Message != tc.msg {
				t.Fatalf("errors = %q\nwant   %q", errs, BlockError{Pointer: tc.ptr, Message: tc.msg}.Error())
			}
		})
	}
	if errs := ValidateView(json.RawMessage(`{"type":"home","blocks":[` + input + `]}`)); len(errs) != 0 {
		t.Fatalf("home tab with input: %v", errs)
	}
}

func TestInvalidBlocksThroughAPI(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newHTTP(t, s)
	blocks := approvalMessage()[:3]
	blocks = append(blocks, slack.NewActionBlock("a", slack.NewButtonBlockElement("b", "v", plain(rep(80)))))
	_, _, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("x", false), slack.MsgOptionBlocks(blocks...))
	se := slackErr(t, err, "invalid_blocks")
	want := "must be less than 76 characters [json-pointer:/blocks/3/elements/0/text/text]"
	if len(se.Errors) != 1 || se.Errors[0].Message == nil || *se.Errors[0].Message != want {
		t.Fatalf("errors = %+v", se.Errors)
	}
	if len(se.ResponseMetadata.Messages) != 1 || se.ResponseMetadata.Messages[0] != "[ERROR] "+want {
		t.Fatalf("response_metadata = %+v", se.ResponseMetadata)
	}
	if len(s.Messages(ChannelApprovals)) != 0 {
		t.Fatal("invalid message stored")
	}

	// The same check applies to updates and ephemerals.
	_, ts, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("ok", false))
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = api.UpdateMessage(ChannelApprovals, ts, slack.MsgOptionBlocks(blocks...))
	slackErr(t, err, "invalid_blocks")
	_, err = api.PostEphemeral(ChannelApprovals, UserAlice, slack.MsgOptionBlocks(blocks...))
	slackErr(t, err, "invalid_blocks")

	status, body := postForm(t, s, "chat.postMessage", map[string][]string{"channel": {ChannelApprovals}, "blocks": {`{"type":`}})
	if status != 200 || body != `{"ok":false,"error":"invalid_blocks_format"}` {
		t.Fatalf("malformed blocks = %d %s", status, body)
	}
}

// The controls of a request with the review extension pass chat.postMessage
// and chat.update as Slack takes them: a request menu (overflow), an
// Approve asking to confirm in a danger dialog, a date-and-time picker.
func TestReviewControlsThroughAPI(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	api := newInProc(s)
	approve := slack.NewButtonBlockElement("approve", "true", plain("Approve")).WithStyle(slack.StylePrimary)
	dialog := slack.NewConfirmationBlockObject(plain("Approve an irreversible action?"),
		plain("Approving lets the agent go ahead with drop_table. The agent says it cannot be undone."), plain("Approve"), plain("Cancel"))
	dialog.Style = slack.StyleDanger
	approve.Confirm = dialog
	when := slack.NewDateTimePickerBlockElement("date")
	when.InitialDateTime = 1772461800
	menu := slack.NewOverflowBlockElement("verbs",
		slack.NewOptionBlockObject("defer", plain("Defer with guidance…"), nil),
		slack.NewOptionBlockObject("change_plan", plain("Change the plan…"), nil),
		slack.NewOptionBlockObject("escalate", plain("Escalate to…"), nil),
		slack.NewOptionBlockObject("abort", plain("Abort the run…"), nil))
	blocks := []slack.Block{
		slack.NewActionBlock("ab/1/r1/d1", approve, when),
		slack.NewActionBlock("ab/1/r1/_request", menu),
	}
	_, ts, err := api.PostMessage(ChannelApprovals, slack.MsgOptionText("Decision needed", false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	if _, _, _, err := api.UpdateMessage(ChannelApprovals, ts, slack.MsgOptionBlocks(blocks...)); err != nil {
		t.Fatalf("update: %v", err)
	}
	m, ok := s.Message(ChannelApprovals, ts)
	if !ok {
		t.Fatal("message not stored")
	}
	for _, want := range []string{`"type":"overflow"`, `"style":"danger"`, `"initial_date_time":1772461800`} {
		if !strings.Contains(string(m.Blocks), want) {
			t.Errorf("stored blocks lack %s: %s", want, m.Blocks)
		}
	}
	if text := RenderText(m.Blocks); !strings.Contains(text, "[datetime: 2026-03-02 14:30 UTC]") || !strings.Contains(text, "[⋯]") {
		t.Errorf("rendered text:\n%s", text)
	}
	// Six verbs would be one too many for an overflow menu.
	menu.Options = append(menu.Options, slack.NewOptionBlockObject("a", plain("A"), nil), slack.NewOptionBlockObject("b", plain("B"), nil))
	_, _, err = api.PostMessage(ChannelApprovals, slack.MsgOptionText("x", false), slack.MsgOptionBlocks(blocks...))
	slackErr(t, err, "invalid_blocks")
}
