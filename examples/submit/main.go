// Command submit posts seed 000's example request to a running approvalbot,
// as the README's recipes do, with its dates moved relative to now so it is
// never refused for a deadline that has passed:
//
//	go run ./examples/submit -response-url http://localhost:8080/sandbox/inbox
//	go run ./examples/submit -id try-signoff -response-url http://localhost:8080/sandbox/inbox -signoff
//	go run ./examples/submit -id demo-1 -response-url http://localhost:9000/decisions
//
// It prints the bot's answer and exits non-zero unless the request was
// accepted (202) or was already there (200).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/approvalbot/approvalbot/examples"
)

func main() {
	opts, err := examples.ParseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "submit:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, body, err := examples.Submit(ctx, time.Now(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "submit:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s\n", resp.Proto, resp.Status)
	if loc := resp.Header.Get("Location"); loc != "" {
		fmt.Printf("Location: %s\n", loc)
	}
	fmt.Printf("\n%s\n", body)
	if resp.StatusCode == http.StatusConflict {
		// The examples' ids are fixed, and their dates move to now, so a
		// second run is a different request under a stored id.
		fmt.Fprintln(os.Stderr, "submit: a request with this id is stored already; send another with -id <a new id>")
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		os.Exit(1)
	}
}
