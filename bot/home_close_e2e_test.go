package bot_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/aah"

	"github.com/approvalbot/approvalbot/blocks"
)

// When a request closes, the Home tab of everyone who answered it is
// brought up to date, not only its reviewers': an admin who approved one
// decision (and reviews nothing) sees the request resolved by Alice among
// the requests they answered.
func TestHomeTabOfAnAnswererFollowsTheClose(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *configT, _ *depsT) { c.AdminUsers = []string{morgan.id} })
	h.startJobs()
	id := h.postAndWait(exampleWith(t, "home-answerer", nil))
	h.waitIdle()
	ok(t, h.click(morgan, id, "d1", button(blocks.ActionApprove, "true")))
	h.openHome(morgan, "Ev0HCLOSE1", nil)
	h.waitHome(morgan, "listed the answered request", func(ht homeTab) bool {
		return slices.Contains(ht.answered, id) && strings.Contains(string(ht.raw), "partial")
	})
	mark := h.publishMark()
	// Alice answers the rest, so Morgan's answer stays his.
	ok(t, h.click(alice, id, "d2", button(blocks.ActionApprove, "true")))
	ok(t, h.click(alice, id, "d3", staticSelect("immediate")))
	ok(t, h.click(alice, id, "d4", button(blocks.ActionApprove, "true")))
	ok(t, h.click(alice, id, blocks.RequestScope, button(blocks.ActionSubmit, blocks.RequestScope)))
	h.waitStatus(id, aah.StatusResolved)
	if by := h.record(id).Answers["d1"].By.ID; by != morgan.id {
		t.Fatalf("d1 was answered by %s, want Morgan", by)
	}
	h.waitPublished(morgan, mark, "showed the request resolved", func(ht homeTab) bool {
		return slices.Contains(ht.answered, id) && strings.Contains(string(ht.raw), ":white_check_mark: resolved")
	})
}
