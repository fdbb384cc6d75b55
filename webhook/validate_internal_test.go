package webhook

import (
	"testing"

	"github.com/approvalbot/approvalbot/examples"
)

// BenchmarkValidate measures intake's validation alone (decode, Unicode
// check, parse, Slack limits, compaction, hash) on seed 000's example
// (examples/marketing-strategy.json), the body BenchmarkIntake posts.
func BenchmarkValidate(b *testing.B) {
	body, err := examples.Request(fuzzNow, examples.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a := newFuzzAPI(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, _, probs := a.validate(body, AnonymousAgent); len(probs) > 0 {
			b.Fatalf("the example is refused: %v", probs)
		}
	}
}
