package blocks

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// Modal callback ids: a view_submission's callback_id says which modal it is.
const (
	ModalInput   = "ab_input"   // a text or number answer (and an optional comment)
	ModalComment = "ab_comment" // a comment on a decision
	ModalDetails = "ab_details" // read-only: the full decision
	ModalReject  = "ab_reject"  // a rejection with its required reason
	// The review extension's modals (ModalRef.Verb says which directive).
	ModalModify    = "ab_modify"    // approve with edited parameters
	ModalDirective = "ab_directive" // defer, change_plan or abort, with its text
	ModalEscalate  = "ab_escalate"  // hand the request to a person, group or channel
	ModalGrant     = "ab_grant"     // approve and grant a standing approval
	// ModalSubmit submits the request's decisions with the submitter's
	// optional overall comment (ActionSubmitComment).
	ModalSubmit = "ab_submit"
)

// Block and action ids of the modals' inputs; validation errors name BlockValue.
const (
	BlockValue   = "value"
	BlockComment = "comment"
	ActionValue  = "value"
	ActionText   = "text"
)

// maxModalTitle is Slack's limit for a modal's title and buttons.
const maxModalTitle = 24

// ModalRef is the private_metadata of every modal: which decision it is about.
type ModalRef struct {
	RequestID  string `json:"r"`
	DecisionID string `json:"d"`
	// Channel and TS locate the message the modal was opened from, so a
	// refusal can be shown next to it.
	Channel string `json:"c,omitempty"`
	// Verb is the directive a ModalDirective submits (aah.VerbDefer,
	// VerbChangePlan, VerbAbort).
	Verb string `json:"v,omitempty"`
}

// Encode is the private_metadata form (far below Slack's 3000 characters:
// ids are at most 128 + 64 characters).
func (m ModalRef) Encode() string { b, _ := json.Marshal(m); return string(b) }

// ParseModalRef reads a modal's private_metadata.
func ParseModalRef(s string) (ModalRef, bool) {
	var m ModalRef
	if json.Unmarshal([]byte(s), &m) != nil || m.RequestID == "" || m.DecisionID == "" {
		return ModalRef{}, false
	}
	return m, true
}

// InputModal asks for a text or number answer, honouring the decision's
// constraints in the input itself, with an optional comment.
func InputModal(req *aah.Request, d aah.Decision, current aah.Answer, comment string, ref ModalRef) slack.ModalViewRequest {
	var element slack.BlockElement
	initial := current.Value
	if initial == nil {
		initial = d.Default
	}
	c := d.Constraints
	switch d.Type {
	case aah.TypeNumber:
		in := slack.NewNumberInputBlockElement(plainText("A number"), ActionValue, true)
		if c.Min != nil {
			in.MinValue = strconv.FormatFloat(*c.Min, 'f', -1, 64)
		}
		if c.Max != nil {
			in.MaxValue = strconv.FormatFloat(*c.Max, 'f', -1, 64)
		}
		if f, ok := initial.(float64); ok {
			in.InitialValue = strconv.FormatFloat(f, 'f', -1, 64)
		}
		element = in
	default:
		in := slack.NewPlainTextInputBlockElement(plainText("Your answer"), ActionValue)
		in.Multiline = c.Max == nil || *c.Max > 150
		in.MaxLength = aah.MaxTextLength
		if c.Max != nil {
			in.MaxLength = int(*c.Max)
		}
		if c.Min != nil {
			in.MinLength = int(*c.Min)
		}
		if s, ok := initial.(string); ok && utf8.RuneCountInString(s) <= in.MaxLength {
			in.InitialValue = s
		}
		element = in
	}
	label := plain(d.Prompt, MaxPromptLength)
	input := slack.NewInputBlock(BlockValue, plainLabel(label), hintFor(d), element)
	blocks := []slack.Block{section(headerLine(req, d)), input, commentInput(comment, true)}
	return modal(ModalInput, "Your answer", "Submit", ref, blocks)
}

// CommentModal asks for a person's comment on a decision; comment is the
// one they left before, which saving replaces.
func CommentModal(req *aah.Request, d aah.Decision, comment string, ref ModalRef) slack.ModalViewRequest {
	blocks := []slack.Block{section(headerLine(req, d)), commentInput(comment, false)}
	return modal(ModalComment, "Comment", "Save", ref, blocks)
}

// SubmitModal submits every decision of the request, as "Submit
// decisions" does, with an optional overall comment: the submitter's own
// summary, sent to the agent next to the machine's (data.comment).
func SubmitModal(req *aah.Request, ref ModalRef) slack.ModalViewRequest {
	head := "_" + fitted(req.Artifact.Title, 300) + "_\n*Submit every answer to the agent.* " +
		"Defaults shown selected count as your answers; other unanswered optional decisions take their defaults."
	in := slack.NewPlainTextInputBlockElement(plainText("Your summary of the decision, for the agent and the audit trail"), ActionText)
	in.Multiline = true
	in.MaxLength = aah.MaxTextLength
	comment := slack.NewInputBlock(BlockComment, plainLabel("Overall comment"), nil, in)
	comment.Optional = true
	return modal(ModalSubmit, "Submit decisions", "Submit", ref, []slack.Block{section(head), comment})
}

// RejectModal asks why a person rejects one approval decision, or every
// approval decision of the request when ref.DecisionID is RequestScope; the
// request requires a reason for every rejection (require_reason).
func RejectModal(req *aah.Request, ref ModalRef) slack.ModalViewRequest {
	head := "_" + fitted(req.Artifact.Title, 300) + "_\n*Reject every approval decision of this request.*"
	if d, ok := req.Decision(ref.DecisionID); ok {
		head = headerLine(req, d)
	}
	in := slack.NewPlainTextInputBlockElement(plainText("The agent and the audit trail keep it"), ActionText)
	in.Multiline = true
	in.MaxLength = aah.MaxTextLength
	reason := slack.NewInputBlock(BlockComment, plainLabel("Why do you reject it?"), nil, in)
	out := []slack.Block{section(head)}
	if reasons := RejectReasons(req, ref.DecisionID); len(reasons) > 0 {
		// The agent's reasons (verbs_modal.go); either field explains it.
		reason.Label, reason.Optional = plainLabel("In your own words"), true
		out = append(out, rejectReasonInput(reasons))
	}
	return modal(ModalReject, "Reject", "Reject", ref, append(out, reason))
}

func fitted(s string, limit int) string { out, _ := fit(s, limit, "…"); return out }

// DetailsModal shows a decision in full: the text the message had to shorten.
func DetailsModal(req *aah.Request, d aah.Decision, ref ModalRef) slack.ModalViewRequest {
	blocks := []slack.Block{section(headerLine(req, d))}
	if req.Data.Context != "" {
		blocks = append(blocks, chunks("*Context*\n"+escape(req.Data.Context))...)
	}
	if d.Description != "" {
		blocks = append(blocks, chunks(escape(d.Description))...)
	}
	if len(d.Options) > 0 {
		var b strings.Builder
		b.WriteString("*Options*")
		for _, o := range d.Options {
			b.WriteString("\n• *" + escape(o.Label) + "*")
			if o.Description != "" {
				b.WriteString(" — " + escape(o.Description))
			}
		}
		blocks = append(blocks, chunks(b.String())...)
	}
	blocks = append(blocks, reviewDetails(d)...)
	if len(blocks) > maxModalBlocks {
		blocks = append(blocks[:maxModalBlocks-1], section("_…the rest is too long for Slack to show._"))
	}
	v := modal(ModalDetails, "Details", "", ref, blocks)
	v.Close = plainText("Close")
	return v
}

const maxModalBlocks = 100

// chunks splits long mrkdwn into sections of at most MaxSectionText, on
// safe boundaries (see splitText).
func chunks(s string) []slack.Block {
	var out []slack.Block
	for _, piece := range splitText(s, MaxSectionText) {
		out = append(out, section(piece))
	}
	return out
}

func headerLine(req *aah.Request, d aah.Decision) string {
	title, _ := fit(req.Artifact.Title, 300, "…")
	prompt, _ := fit(d.Prompt, MaxPromptLength, "…")
	return "_" + title + "_\n*" + prompt + "*"
}

func commentInput(current string, optional bool) *slack.InputBlock {
	in := slack.NewPlainTextInputBlockElement(plainText("Why? (kept in the audit trail)"), ActionText)
	in.Multiline = true
	in.MaxLength = aah.MaxTextLength
	in.InitialValue = current
	block := slack.NewInputBlock(BlockComment, plainLabel("Comment"), nil, in)
	block.Optional = optional
	return block
}

// hintFor spells out the constraints Slack's inputs do not enforce (a pattern).
func hintFor(d aah.Decision) *slack.TextBlockObject {
	if d.Constraints.Pattern == "" {
		return nil
	}
	return plainLabel(plain("Must match "+d.Constraints.Pattern, 2000))
}

func plainLabel(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

func modal(callbackID, title, submit string, ref ModalRef, blocks []slack.Block) slack.ModalViewRequest {
	v := slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      callbackID,
		Title:           slack.NewTextBlockObject(slack.PlainTextType, plain(title, maxModalTitle), false, false),
		Close:           slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks:          slack.Blocks{BlockSet: blocks},
		PrivateMetadata: ref.Encode(),
	}
	if submit != "" {
		v.Submit = slack.NewTextBlockObject(slack.PlainTextType, plain(submit, maxModalTitle), false, false)
	}
	return v
}
