// Command receiver is an agent's callback endpoint for trying approvalbot
// locally: it prints every decision response (and progress event, see
// extensions.events) it receives and whether its Standard Webhooks signature
// verifies.
//
//	go run ./examples/receiver            # listens on :9000
//
// Point a request's handoff.response_url at http://localhost:9000/decisions,
// and its extensions.events.url at http://localhost:9000/events.
// It verifies with CALLBACK_SECRET, or local mode's public default.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/approvalbot/approvalbot/bot"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	addr := flag.String("addr", ":9000", "listen address")
	flag.Parse()
	wh, err := standardwebhooks.NewWebhook(cmp.Or(os.Getenv("CALLBACK_SECRET"), bot.LocalCallbackSecret))
	if err != nil {
		log.Fatalf("receiver: bad CALLBACK_SECRET: %v", err)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		verdict := "signature VERIFIED"
		if err := wh.Verify(body, r.Header); err != nil {
			verdict = "signature INVALID: " + err.Error()
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, body, "", "  ") != nil {
			pretty.Write(body)
		}
		fmt.Printf("── %s %s · webhook-id %s · %s\n%s\n\n", r.Method, r.URL.Path, r.Header.Get("webhook-id"), verdict, pretty.String())
		if verdict != "signature VERIFIED" {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	log.Printf("receiver: waiting for decision responses on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
