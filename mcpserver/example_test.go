package mcpserver_test

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The README's Go snippet ("MCP"), compiled here; TestReadmeMCPSnippets
// checks the README still shows these lines. It starts approvalbot mcp (on
// PATH) as the client's subprocess, which calls a bot in local mode.
func Example() {
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "my-agent"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command("approvalbot", "mcp")}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_decision", Arguments: map[string]any{
		"title": "Deploy v2", "decisions": []map[string]any{{"id": "go", "type": "approval", "prompt": "Deploy v2 now?", "required": true}}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.StructuredContent) // {"id": …, "status": "resolved", "overall_status": "all_approved", "answers": […]}
}
