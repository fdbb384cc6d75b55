// Command click acts in a local approvalbot as a Slack user would, from a
// terminal or a script (the browser sandbox at /sandbox/ does the same by
// hand): it sends Slack-shaped interaction payloads, signed with the v0
// scheme, to the bot's /slack/interactions.
//
//	go run ./examples/click -request aah_decision_abc123 -user U0ALICE approve d1
//	go run ./examples/click -request aah_decision_abc123 -user U0BOB select d3 next_week
//	go run ./examples/click -request aah_decision_abc123 -user U0BOB comment d4 "Require CC"
//	go run ./examples/click -request aah_decision_abc123 -user U0BOB reject d4
//	go run ./examples/click -request aah_decision_abc123 -user U0BOB submit
//
// Other verbs: approve-all, reject-all, date <decision> 2026-03-01,
// text <decision> "answer", number <decision> 42, and the reviewer verbs of
// requests using extensions.decisions (docs/review.md), which answer the
// dialogs their buttons open:
//
//	go run ./examples/click -request try-verbs -user U0ALICE modify scale replicas=8 region=eu-central-1
//	go run ./examples/click -request try-verbs -user U0ALICE reject-reason migrate "Take a backup first" "no backup since Monday"
//	go run ./examples/click -request try-verbs -user U0ALICE datetime window 2026-12-01T22:00:00Z
//	go run ./examples/click -request try-verbs -user U0ALICE defer "Wait for the traffic forecast"
//	go run ./examples/click -request try-verbs -user U0ALICE change-plan "Use a read replica"
//	go run ./examples/click -request try-verbs -user U0ALICE abort "Launch postponed"
//	go run ./examples/click -request try-verbs -user U0ALICE escalate U0MANAGER "Needs a director"
//	go run ./examples/click -request try-verbs -user U0ALICE similar scale 1h
package main

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

func main() {
	botURL := flag.String("bot", "http://localhost:8080", "the bot's base URL")
	request := flag.String("request", "", "request id (required)")
	user := flag.String("user", "U0ALICE", "the Slack user acting")
	channel := flag.String("channel", "C0APPROVALS", "the channel the message is in")
	secret := flag.String("secret", cmp.Or(os.Getenv("SLACK_SIGNING_SECRET"), bot.LocalSigningSecret), "Slack signing secret")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if *request == "" || len(args) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	payload, err := build(args, *request, *user, *channel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "click:", err)
		os.Exit(2)
	}
	seen, sandbox := ephemerals(*botURL, *user)
	status, body, err := send(*botURL, *secret, payload)
	if err != nil {
		fmt.Fprintln(os.Stderr, "click:", err)
		os.Exit(1)
	}
	fmt.Printf("%s → HTTP %d %s\n", strings.Join(args, " "), status, body)
	if status != http.StatusOK || strings.Contains(body, "errors") {
		os.Exit(1)
	}
	if sandbox {
		// A refusal is acked 200, as Slack acks it, and told to the user
		// in an ephemeral message: a local bot's sandbox shows it.
		for _, text := range newEphemerals(*botURL, *user, seen) {
			fmt.Printf("  the bot told %s (only they see it): %s\n", *user, text)
		}
	}
}

// ephemerals reads the ids of the messages only user sees, from a local
// bot's sandbox (false when the bot has none: not in local mode).
func ephemerals(botURL, user string) (map[string]string, bool) {
	resp, err := http.Get(strings.TrimRight(botURL, "/") + "/sandbox/api/state?user=" + url.QueryEscape(user))
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var st struct {
		Ephemerals []struct{ ID, Text string } `json:"ephemerals"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil, false
	}
	out := map[string]string{}
	for _, e := range st.Ephemerals {
		out[e.ID] = e.Text
	}
	return out, true
}

// newEphemerals waits a moment for what the bot tells user after the click
// (it answers Slack first, then posts the ephemeral) and returns it.
func newEphemerals(botURL, user string, seen map[string]string) []string {
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		now, ok := ephemerals(botURL, user)
		if !ok {
			return nil
		}
		var fresh []string
		for id, text := range now {
			if _, old := seen[id]; !old {
				fresh = append(fresh, text)
			}
		}
		if len(fresh) > 0 {
			return fresh
		}
	}
	return nil
}

// build makes the payload Slack would send for a verb.
func build(args []string, request, user, channel string) (map[string]any, error) {
	verb := args[0]
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	who := map[string]any{"id": user, "name": strings.ToLower(user)}
	for _, u := range slackemu.DefaultWorkspace().Users { // the local emulator's members
		if u.ID == user {
			who["name"], who["real_name"] = u.Name, u.RealName
		}
	}
	click := func(decision string, action map[string]any) map[string]any {
		action["block_id"] = blocks.BlockID(0, request, decision)
		return map[string]any{"type": "block_actions", "user": who, "trigger_id": "local." + strconv.FormatInt(time.Now().UnixNano(), 10),
			"channel": map[string]any{"id": channel}, "container": map[string]any{"type": "message", "channel_id": channel},
			"actions": []any{action}}
	}
	modal := func(callback, decision string, values map[string]any) map[string]any {
		ref := blocks.ModalRef{RequestID: request, DecisionID: decision, Channel: channel}
		return map[string]any{"type": "view_submission", "user": who, "view": map[string]any{"type": "modal",
			"callback_id": callback, "private_metadata": ref.Encode(), "state": map[string]any{"values": values}}}
	}
	input := func(v string) map[string]any { return map[string]any{"type": "plain_text_input", "value": v} }
	selected := func(v string) map[string]any {
		return map[string]any{"type": "static_select", "selected_option": map[string]any{"value": v}}
	}
	directive := func(v aah.Verb) map[string]any {
		ref := blocks.ModalRef{RequestID: request, DecisionID: blocks.RequestScope, Channel: channel, Verb: string(v)}
		return map[string]any{"type": "view_submission", "user": who, "view": map[string]any{"type": "modal",
			"callback_id": blocks.ModalDirective, "private_metadata": ref.Encode(),
			"state": map[string]any{"values": map[string]any{blocks.BlockDirective: map[string]any{blocks.ActionText: input(arg(1))}}}}}
	}
	switch verb {
	case "approve", "reject":
		return click(arg(1), map[string]any{"action_id": verb, "type": "button", "value": strconv.FormatBool(verb == "approve")}), nil
	case "approve-all", "reject-all":
		return click(blocks.RequestScope, map[string]any{"action_id": strings.ReplaceAll(verb, "-", "_"), "type": "button"}), nil
	case "submit":
		return click(blocks.RequestScope, map[string]any{"action_id": blocks.ActionSubmit, "type": "button"}), nil
	case "select":
		return click(arg(1), map[string]any{"action_id": blocks.ActionSelect, "type": "static_select",
			"selected_option": map[string]any{"value": arg(2)}}), nil
	case "date":
		return click(arg(1), map[string]any{"action_id": blocks.ActionDate, "type": "datepicker", "selected_date": arg(2)}), nil
	case "comment":
		return modal(blocks.ModalComment, arg(1), map[string]any{blocks.BlockComment: map[string]any{blocks.ActionText: input(arg(2))}}), nil
	case "text", "number":
		return modal(blocks.ModalInput, arg(1), map[string]any{blocks.BlockValue: map[string]any{blocks.ActionValue: input(arg(2))}}), nil
	case "datetime":
		at, err := time.Parse(time.RFC3339, arg(2))
		if err != nil {
			return nil, fmt.Errorf("datetime wants an RFC 3339 time, e.g. 2026-12-01T22:00:00Z: %w", err)
		}
		return click(arg(1), map[string]any{"action_id": blocks.ActionDate, "type": "datetimepicker", "selected_date_time": at.Unix()}), nil
	case "modify":
		// name=value for each parameter to edit; the others keep the
		// proposed value. A menu (enum) or yes/no parameter is a selection.
		values := map[string]any{}
		for _, kv := range args[2:] {
			name, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("modify wants name=value, got %q", kv)
			}
			in := input(v)
			in["selected_option"] = map[string]any{"value": v}
			values[blocks.ParamBlock(name)] = map[string]any{blocks.ActionValue: in}
		}
		return modal(blocks.ModalModify, arg(1), values), nil
	case "reject-reason":
		return modal(blocks.ModalReject, arg(1), map[string]any{
			blocks.BlockRejectReason: map[string]any{blocks.ActionValue: selected(arg(2))},
			blocks.BlockComment:      map[string]any{blocks.ActionText: input(arg(3))}}), nil
	case "defer":
		return directive(aah.VerbDefer), nil
	case "change-plan":
		return directive(aah.VerbChangePlan), nil
	case "abort":
		return directive(aah.VerbAbort), nil
	case "escalate":
		to := map[string]any{blocks.BlockNote: map[string]any{blocks.ActionText: input(arg(2))}}
		if aah.IsSlackUserID(arg(1)) {
			to[blocks.BlockEscalateUser] = map[string]any{blocks.ActionUser: map[string]any{"type": "users_select", "selected_user": arg(1)}}
		} else {
			to[blocks.BlockEscalateTo] = map[string]any{blocks.ActionText: input(arg(1))}
		}
		return modal(blocks.ModalEscalate, blocks.RequestScope, to), nil
	case "similar":
		return modal(blocks.ModalGrant, arg(1), map[string]any{blocks.BlockDuration: map[string]any{blocks.ActionDuration: selected(arg(2))}}), nil
	}
	return nil, fmt.Errorf("unknown verb %q", verb)
}

const usage = `usage: click -request ID [-user U…] VERB [DECISION] [VALUE…]

Verbs: approve D, reject D, approve-all, reject-all, select D VALUE, date D 2026-03-01,
datetime D 2026-03-01T10:00:00Z, text D "answer", number D 42, comment D "text", submit;
and the reviewer verbs (docs/review.md): modify D key=value…, reject-reason D "reason" "comment",
defer "guidance", change-plan "guidance", abort "reason", escalate U… "note", similar D 1h.

A click the bot refuses (not a reviewer, a reason needed, a value out of range) is still
acknowledged with HTTP 200, as Slack's are: the bot tells the user in an ephemeral message,
which click prints from a local bot's sandbox. Under require_reason use reject-reason.

`

// send posts the payload form-encoded and signed, as Slack does.
func send(botURL, secret string, payload map[string]any) (int, string, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return 0, "", err
	}
	body := "payload=" + url.QueryEscape(string(raw))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(botURL, "/")+"/slack/interactions", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
