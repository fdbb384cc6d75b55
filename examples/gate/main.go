// Command gate puts a human in front of one tool call with the Go client's
// gate helper: it asks approvalbot whether the agent may scale a service
// (reviewers may also lower the replicas first), waits for the answer and
// prints the verdict. With the bot in local mode in another terminal
// (`go run ./cmd/approvalbot`, no token needed):
//
//	go run ./examples/gate
//
// then answer it in the sandbox (http://localhost:8080/sandbox/) as Alice
// or Bob: Approve, Reject, Modify, or "More" for defer, change the plan or
// abort. Nobody answering within five minutes rejects it, as seed 001's
// gates do. APPROVALBOT_URL and APPROVALBOT_TOKEN point it at another bot.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"

	"github.com/approvalbot/approvalbot/client"
)

func main() {
	bot := cmp.Or(os.Getenv("APPROVALBOT_URL"), "http://localhost:8080")
	c := client.New(bot, os.Getenv("APPROVALBOT_TOKEN"))
	fmt.Printf("asking %s whether to scale checkout-api to 12 replicas; answer it in Slack (locally: %s/sandbox/), "+
		"within 5 minutes or it is rejected...\n", bot, bot)
	v, err := client.RequireApproval(context.Background(), c, client.Action{Tool: "scale_service",
		Parameters: map[string]any{"service": "checkout-api", "replicas": 12},
		Editable:   map[string]client.Param{"replicas": {Type: "integer", Minimum: client.Float(2), Maximum: client.Float(16)}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Outcome, v.Parameters, v.Reason+v.Text)
}
