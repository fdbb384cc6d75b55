package blocks

import (
	"strconv"
	"strings"
)

// Action ids of the controls a request message carries. A click's block_id
// says which request and decision it belongs to (see ParseBlockID); its
// action_id says what the control does.
const (
	ActionApprove     = "approve"      // approval: button, value "true"
	ActionReject      = "reject"       // approval: button, value "false"
	ActionSelect      = "select"       // choice: static_select
	ActionMultiSelect = "multi_select" // multi_choice: multi_static_select
	ActionDate        = "date"         // date: datepicker
	ActionOpenInput   = "open_input"   // text, number: button that opens a modal
	ActionComment     = "comment"      // any decision: button that opens a comment modal
	ActionDetails     = "details"      // any decision: full description in a modal
	ActionApproveAll  = "approve_all"  // batch: approve every approval decision
	ActionRejectAll   = "reject_all"   // batch: reject every approval decision
	ActionSubmit      = "submit"       // multi-decision requests: resolve
	// ActionSubmitComment opens the submit modal: Submit with an overall
	// comment (data.comment); Submit itself stays one click.
	ActionSubmitComment = "submit_comment"
	// With require_reason, Reject buttons open a modal asking why instead.
	ActionRejectReason    = "reject_reason"     // approval: button that opens the reject modal
	ActionRejectAllReason = "reject_all_reason" // batch: the same for every approval decision
	// The review extension's verbs (aah.Review). ActionModify opens the
	// modify modal of one approval decision; ActionVerbs is the request's
	// overflow menu whose option values are the request-level aah.Verb
	// names (defer, change_plan, escalate, abort), each opening its modal;
	// ActionApproveSimilar opens the standing-approval modal of an
	// approval decision that has an action key.
	ActionModify         = "modify"
	ActionVerbs          = "verbs"
	ActionApproveSimilar = "approve_similar"
)

// RequestScope is the decision id used in block ids of request-wide controls
// (batch buttons, submit). Decision ids cannot start with "_", so it never
// collides with one.
const RequestScope = "_request"

const idPrefix = "ab"

// BlockID builds the block_id of a decision's blocks (or of the request-wide
// controls, with RequestScope): "ab/<version>/<request id>/<decision id>".
// Request and decision ids cannot contain "/", so the parts split cleanly.
// The version changes with every message update, so Slack never carries a
// stale select state from an earlier iteration of the message into a new one.
func BlockID(version int64, requestID, decisionID string) string {
	return idPrefix + "/" + strconv.FormatInt(version, 10) + "/" + requestID + "/" + decisionID
}

// ParseBlockID maps a block_id from an interaction payload back to its
// request and decision. ok is false for block ids approvalbot did not make.
func ParseBlockID(blockID string) (requestID, decisionID string, version int64, ok bool) {
	parts := strings.Split(blockID, "/")
	if len(parts) != 4 || parts[0] != idPrefix || parts[2] == "" || parts[3] == "" {
		return "", "", 0, false
	}
	v, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", "", 0, false
	}
	return parts[2], parts[3], v, true
}
