// Package examples builds seed 000's example decision request
// (marketing-strategy.json) as the README's recipes submit it: the file's
// fixed dates would pass, and a request whose deadline has passed is
// refused, so Request moves them relative to now, keeping the seed's
// offsets. `go run ./examples/submit` and the tests that follow the README
// both use it, so the recipe and its test cannot drift apart.
package examples

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// MarketingStrategy is examples/marketing-strategy.json, verbatim.
//
//go:embed marketing-strategy.json
var MarketingStrategy []byte

// ScaleService is examples/scale-service.json, verbatim: a request using
// the review extension (extensions.decisions: proposed actions, risk, the
// responses a reviewer may give, editable parameters).
//
//go:embed scale-service.json
var ScaleService []byte

// The examples Options.Example names.
const (
	ExampleMarketing = "marketing"
	ExampleScale     = "scale"
)

// Options are what a recipe changes in the example besides its dates.
type Options struct {
	// BotURL is where the bot listens (default http://localhost:8080).
	BotURL string
	// ID replaces artifact.id when set.
	ID string
	// ResponseURL sets handoff.response_url when set: where the decision
	// response is POSTed.
	ResponseURL string
	// SignOff adds the README's sign-off rules (extensions.slack): Bob and
	// Morgan as reviewers, two approvals, a reason for every rejection,
	// legal sign-off by Alice, and Riley as the requester.
	SignOff bool
	// EventsURL subscribes the request's progress events
	// (extensions.events.url) when set.
	EventsURL string
	// Token is the intake bearer token (INTAKE_TOKENS); local mode needs none.
	Token string
	// Example picks the request: ExampleMarketing (seed 000's, the
	// default) or ExampleScale (examples/scale-service.json).
	Example string
}

// ParseArgs reads `go run ./examples/submit`'s command line.
func ParseArgs(args []string, errOut io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: go run ./examples/submit [-example NAME] [-id ID] [-response-url URL] [-events-url URL] [-signoff] [-bot URL] [-token T]\n\n"+
			"Submits seed 000's example request (examples/marketing-strategy.json) to a running approvalbot,\n"+
			"with created_at moved to now and its deadlines kept 31h after it, as in the seed.")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.BotURL, "bot", "http://localhost:8080", "the bot's base URL")
	fs.StringVar(&o.ID, "id", "", "artifact.id (default: the file's, aah_decision_abc123)")
	fs.StringVar(&o.ResponseURL, "response-url", "", "handoff.response_url: where the decision response goes (default: none, poll for it)")
	fs.StringVar(&o.EventsURL, "events-url", "", "extensions.events.url: where the request's progress events are POSTed (default: none)")
	fs.BoolVar(&o.SignOff, "signoff", false, "add the README's sign-off rules (extensions.slack)")
	fs.StringVar(&o.Token, "token", "", "intake bearer token (not needed in local mode)")
	fs.StringVar(&o.Example, "example", ExampleMarketing, "which request: marketing (seed 000's) or scale (examples/scale-service.json: proposed actions, risk, modify/defer/escalate/abort)")
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.Example != ExampleMarketing && o.Example != ExampleScale {
		return Options{}, fmt.Errorf("-example must be %s or %s, got %q", ExampleMarketing, ExampleScale, o.Example)
	}
	return o, nil
}

// Request returns the example as o asks, with its dates moved so that
// artifact.created_at is now (to the second) and data.deadline,
// handoff.response_deadline and date bounds keep their offsets from it.
func Request(now time.Time, o Options) ([]byte, error) {
	src := MarketingStrategy
	if o.Example == ExampleScale {
		src = ScaleService
	}
	var doc map[string]any
	if err := json.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("examples: decode the example: %w", err)
	}
	artifact, _ := doc["artifact"].(map[string]any)
	handoff, _ := doc["handoff"].(map[string]any)
	content, _ := doc["content"].(map[string]any)
	body, _ := content["body"].(map[string]any)
	data, _ := body["data"].(map[string]any)
	if artifact == nil || handoff == nil || data == nil {
		return nil, errors.New("examples: the example lacks artifact, handoff or content.body.data")
	}
	created, err := time.Parse(time.RFC3339, fmt.Sprint(artifact["created_at"]))
	if err != nil {
		return nil, fmt.Errorf("examples: artifact.created_at: %w", err)
	}
	shift := now.UTC().Truncate(time.Second).Sub(created)
	fields := []struct {
		obj  map[string]any
		name string
	}{{artifact, "created_at"}, {data, "deadline"}, {handoff, "response_deadline"}}
	decisions, _ := data["decisions"].([]any)
	for _, d := range decisions {
		dec, _ := d.(map[string]any)
		if c, ok := dec["constraints"].(map[string]any); ok && dec["type"] == "date" {
			for _, bound := range []string{"min", "max"} {
				if _, isString := c[bound].(string); isString {
					fields = append(fields, struct {
						obj  map[string]any
						name string
					}{c, bound})
				}
			}
		}
	}
	for _, field := range fields {
		t, err := time.Parse(time.RFC3339, fmt.Sprint(field.obj[field.name]))
		if err != nil {
			return nil, fmt.Errorf("examples: %s: %w", field.name, err)
		}
		field.obj[field.name] = t.Add(shift).UTC().Format(time.RFC3339)
	}
	if o.ID != "" {
		artifact["id"] = o.ID
	}
	if o.ResponseURL != "" {
		handoff["response_url"] = o.ResponseURL
	}
	if o.SignOff {
		doc["extensions"] = map[string]any{"slack": map[string]any{
			"reviewers":      []string{"U0BOB", "manager@example.com"},
			"quorum":         2,
			"require_reason": true,
			"required_roles": []any{map[string]any{"role": "legal", "members": []string{"alice@example.com"}}},
			"requested_by":   "requester@example.com",
		}}
	}
	if o.EventsURL != "" {
		ext, _ := doc["extensions"].(map[string]any)
		if ext == nil {
			ext = map[string]any{}
			doc["extensions"] = ext
		}
		ext["events"] = map[string]any{"url": o.EventsURL}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("examples: encode the request: %w", err)
	}
	return out, nil
}

// Submit POSTs the example as o asks to the bot's /v1/requests and returns
// the HTTP answer, whatever its status.
func Submit(ctx context.Context, now time.Time, o Options) (*http.Response, []byte, error) {
	doc, err := Request(now, o)
	if err != nil {
		return nil, nil, err
	}
	botURL := strings.TrimSuffix(o.BotURL, "/")
	if botURL == "" {
		botURL = "http://localhost:8080"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, botURL+"/v1/requests", bytes.NewReader(doc))
	if err != nil {
		return nil, nil, fmt.Errorf("examples: build the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+o.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("examples: POST %s/v1/requests: %w", botURL, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, nil, fmt.Errorf("examples: read the answer: %w", err)
	}
	return resp, answer, nil
}

// SubmitCommand is how the README runs this package's program.
const SubmitCommand = "go run ./examples/submit"

// ReadmeRecipes returns the arguments of every SubmitCommand line in the
// README (a trailing "# comment" left out), in order, so tests can run the
// recipes exactly as written.
func ReadmeRecipes(readme []byte) [][]string {
	var out [][]string
	for _, line := range strings.Split(string(readme), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), SubmitCommand)
		if !ok || (rest != "" && rest[0] != ' ') {
			continue
		}
		rest, _, _ = strings.Cut(rest, "#")
		out = append(out, strings.Fields(rest))
	}
	return out
}
