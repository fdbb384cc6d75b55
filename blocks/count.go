package blocks

import (
	"slices"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// This file counts the blocks Render would produce without building them:
// intake checks every request against Slack's block limit, and rendering
// (with its text formatting and Block Kit objects) just to take len() of the
// result was a large share of intake's CPU and garbage. countBlocks mirrors
// renderer.blocks and reviewBlocks branch for branch; TestCountMatchesRender
// compares the two over every request the tests know, so a change to Render
// that forgets this file fails there.

// largestState is the state a request's message is largest in, the one
// intake checks: open, reviewers mentioned, and when it may have them, a
// follow-up line and an escalation by hand with its banner.
func largestState(req *aah.Request) State {
	st := State{Status: aah.StatusPending, Version: 1, ReceivedAt: time.Unix(0, 0), Mentions: []string{"x"}}
	if len(req.Handoff.ParentArtifactIDs) > 0 {
		st.FollowUpOf = &FollowUp{ID: "x"}
	}
	if slices.Contains(requestVerbs(req), aah.VerbEscalate) {
		// Escalated by hand: the banner and the escalation lines.
		st.Status = aah.StatusEscalated
		st.Reassignments = []aah.Reassignment{{To: "x"}}
	}
	return st
}

// countBlocks is len(Render(req, st).Blocks), computed from the same
// conditions renderer.blocks tests, in the same order.
func countBlocks(req *aah.Request, st State) int {
	r := renderer{req: req, st: st}
	n := 2 // header, source line
	if st.FollowUpOf != nil {
		n++
	}
	if r.statusBanner() != "" {
		n++
	}
	if len(st.Reassignments) > 0 {
		n++
	}
	if req.Data.Context != "" {
		n++
	}
	if len(st.Mentions) > 0 && r.open() {
		n++
	}
	if len(req.Data.Blocking) > 0 {
		n++
	}
	// timingLine: a due date or an escalation step, each a non-empty part.
	if !req.EffectiveDeadline().IsZero() || len(req.Data.Escalation) > 0 {
		n++
	}
	n += 2 // the dividers around the decisions
	for _, d := range req.Data.Decisions {
		n += 1 + reviewBlockCount(d) // question section, review
		if r.open() {
			n++ // controls
		}
	}
	if r.open() && hasRequestActions(req) {
		n++
	}
	return n + 1 // progress line
}

// reviewBlockCount is len(reviewBlocks(d)): the proposal section when there
// is an action, the risk context when riskText has anything to say.
func reviewBlockCount(d aah.Decision) int {
	rv := d.Review
	if rv == nil {
		return 0
	}
	n := 0
	if rv.Action != nil {
		n++
	}
	if hasRiskText(d) {
		n++
	}
	return n
}

// hasRiskText reports whether riskText(d) is non-empty: every part and line
// it can write is non-empty text, so it is empty only when it has nothing
// to write.
func hasRiskText(d aah.Decision) bool {
	rk := d.Review.Risk
	if d.Irreversible() && d.Review.Action == nil {
		return true
	}
	if rk == nil {
		return false
	}
	switch rk.Reversibility {
	case aah.ReversibleFully, aah.ReversiblePartially, aah.Irreversible:
		return true
	}
	return rk.Level != "" || rk.Confidence != nil || len(rk.Factors) > 0 || len(rk.Consequences) > 0
}

// hasRequestActions reports whether requestActions returns a block: batch
// buttons, Submit, or the request-level verbs menu. Batch buttons need two
// approval decisions, and any two decisions bring Submit, so they add no
// case of their own.
func hasRequestActions(req *aah.Request) bool {
	return len(req.Data.Decisions) > 1 || len(requestVerbs(req)) > 0
}
