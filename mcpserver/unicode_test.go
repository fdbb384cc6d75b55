package mcpserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// request_decision refuses what /v1 refuses: a string that is not
// well-formed Unicode (an invalid UTF-8 byte, a lone surrogate escape),
// which decoding turns into U+FFFD and the tool would have sent on to /v1
// as clean, other text, stored and shown to reviewers.
func TestRequestDecisionRefusesIllFormedUnicode(t *testing.T) {
	b := startBot(t)
	for name, title := range map[string]string{
		"lone surrogate escape": `Deploy \ud800 now`,
		"invalid UTF-8 byte":    "Deploy \xff now",
	} {
		id := "mcp-utf8-" + strings.ReplaceAll(name, " ", "-")
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"request_decision","arguments":{` +
			`"id":"` + id + `","title":"` + title + `","wait":false,` +
			`"decisions":[{"id":"ship","type":"approval","prompt":"Ship?","required":true}]}}}`
		req, _ := http.NewRequest(http.MethodPost, b.url+"/mcp", strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+agentToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if _, err := b.client().Get(testCtx(t), id); err == nil {
			t.Errorf("%s: the tool stored the request; /v1 refuses the same title", name)
		}
		if !strings.Contains(string(out), "arguments") || !strings.Contains(string(out), "title") {
			t.Errorf("%s: the answer does not name the field: %.300s", name, out)
		}
	}
}
