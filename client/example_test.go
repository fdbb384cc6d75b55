package client_test

import (
	"context"
	"net/http"
	"os"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/client"
)

// The README's snippets ("Agents in Go and Python"), compiled here;
// TestReadmeSnippetsCompile checks the README still shows these lines.

func scale(map[string]any) {}

func record(aah.ResponseData) error { return nil }

func ExampleRequireApproval() {
	ctx := context.Background()
	c := client.New("http://localhost:8080", "") // local mode: no token; else one of INTAKE_TOKENS
	v, err := client.RequireApproval(ctx, c, client.Action{Tool: "scale_service",
		Parameters: map[string]any{"service": "checkout-api", "replicas": 12},
		Editable:   map[string]client.Param{"replicas": {Type: "integer", Minimum: client.Float(2), Maximum: client.Float(16)}}}, nil)
	if err == nil && v.Allowed() {
		scale(v.Parameters) // as proposed, or as the reviewer modified them
	}
}

func ExampleClient_Submit() {
	ctx := context.Background()
	c := client.New("http://localhost:8080", "")
	sub, err := c.Submit(ctx, &client.Request{Title: "Deploy v2", ResponseURL: "https://agent.example.com/decisions",
		Decisions: []client.Decision{{ID: "go", Type: "approval", Prompt: "Deploy v2 to production?", Required: true}}})
	view, err := c.Wait(ctx, sub.ID) // view.Response is the decision response
	http.Handle("/decisions", client.CallbackHandler(os.Getenv("CALLBACK_SECRET"),
		func(ctx context.Context, r *aah.Response) error { return record(r.Content.Body.Data) }))
	_, _ = view, err
}
