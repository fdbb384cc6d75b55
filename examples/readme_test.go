package examples_test

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/examples"
)

// The README's recipes submit the example through examples/submit, and
// every one of them builds a request the bot accepts now and in years to
// come. (They once piped the file, fixed dates and all, through jq and
// curl: from 2027-02-17 on every recipe would have been refused with 400.)
func TestReadmeRecipesWorkInAnyYear(t *testing.T) {
	t.Parallel()
	// Try it and its sign-off example in the README, then the round trip
	// without a browser in docs/sandbox.md.
	var readme []byte
	for _, path := range []string{"../README.md", "../docs/sandbox.md", "../docs/review.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		readme = append(readme, b...)
	}
	recipes := examples.ReadmeRecipes(readme)
	want := [][]string{
		strings.Fields("-response-url http://localhost:8080/sandbox/inbox"),
		strings.Fields("-id try-signoff -response-url http://localhost:8080/sandbox/inbox -signoff"),
		strings.Fields("-id try-withdraw"),
		strings.Fields("-id demo-1 -response-url http://localhost:9000/decisions"),
		strings.Fields("-example scale -id try-verbs -response-url http://localhost:8080/sandbox/inbox"),
	}
	if !slices.EqualFunc(recipes, want, slices.Equal) {
		t.Errorf("README's %s recipes = %q, want %q (the tests follow these: update both)", examples.SubmitCommand, recipes, want)
	}
	for _, args := range recipes {
		o, err := examples.ParseArgs(args, io.Discard)
		if err != nil {
			t.Errorf("%s %s: %v", examples.SubmitCommand, strings.Join(args, " "), err)
			continue
		}
		for _, now := range []time.Time{time.Now(), time.Now().AddDate(3, 0, 0), time.Date(2045, 2, 18, 0, 0, 0, 0, time.UTC)} {
			raw, err := examples.Request(now, o)
			if err == nil {
				_, err = aah.Parse(raw, aah.ParseOptions{Now: now, AllowInsecureCallbacks: true})
			}
			if err != nil {
				t.Errorf("%s %s at %s: %v", examples.SubmitCommand, strings.Join(args, " "), now.Format(time.DateOnly), err)
			}
		}
	}
	if strings.Contains(string(readme), "jq '") {
		t.Error("the README or docs/sandbox.md still has a jq recipe for the example")
	}
	// Why the recipes need the program: the file as it is, posted after its
	// deadline, is refused.
	after := time.Date(2027, 2, 18, 0, 0, 0, 0, time.UTC)
	if _, err := aah.Parse(examples.MarketingStrategy, aah.ParseOptions{Now: after}); err == nil ||
		!strings.Contains(err.Error(), "deadline") {
		t.Errorf("the file as is, after its deadline: %v; want refused for the deadline", err)
	}
}
