package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/examples"
	"github.com/approvalbot/approvalbot/internal/localmode"
	"github.com/approvalbot/approvalbot/store"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
)

// chromiumPath finds the Debian chromium the browser test drives (never a
// downloaded browser). CI must have it (.ci/run installs it); a developer
// without it is told how to get it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the browser test needs chromium at %s under CI (.ci/run installs it): %v", path, err)
		}
		t.Skipf("skipping the browser test: no chromium at %s (apt-get install -y chromium, or set CHROMIUM)", path)
	}
	return path
}

// localBot runs approvalbot as `go run ./cmd/approvalbot` does with no
// configuration (local mode, the sandbox mounted, the embedded store from
// localmode.OpenRedis), on a loopback listener. It returns the base URL.
func localBot(t *testing.T) (string, localmode.Slack, *store.Store) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "CALLBACK_SECRET", "INTAKE_TOKENS",
		"SANDBOX_WORKSPACE", "SLACK_DEFAULT_CHANNEL", "REDIS_URL", "REDIS_PREFIX", "AUDIT_KEY"} {
		t.Setenv(k, "") // restores the value after the test
		_ = os.Unsetenv(k)
	}
	t.Setenv("LISTEN_ADDR", ln.Addr().String())
	t.Setenv("JOB_POLL_INTERVAL", "20ms")
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	registry := prometheus.NewRegistry()
	metrics := bot.NewMetrics(registry)
	setup, err := localmode.NewSlack(cfg, metrics, log, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rdb, closeRedis, err := localmode.OpenRedis(t.Context(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeRedis) // after the service's cleanup below: cleanups run last first
	st, err := store.New(rdb, store.Options{Prefix: cfg.RedisPrefix, AuditKey: []byte(cfg.AuditKey), HomeJobs: true,
		OpenCounts: cfg.Limits().CapsOpen()})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := bot.NewService(bot.Deps{Config: cfg, Store: st, Slack: setup.Client, Metrics: metrics, Registry: registry,
		Logger: log, Sandbox: setup.Sandbox})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	jobs, stopJobs := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.RunJobs(jobs) }()
	t.Cleanup(func() {
		svc.Close()
		setup.Sandbox.Close()
		_ = srv.Close()
		stopJobs()
		<-done
	})
	return "http://" + ln.Addr().String(), setup, st
}

// postExample submits seed 000's example as the README's "Try it" says:
// its first `go run ./examples/submit` recipe, run through the same
// examples package, aimed at this bot instead of localhost:8080. It returns
// the request id.
func postExample(t *testing.T, base string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	recipes := examples.ReadmeRecipes(readme)
	if len(recipes) == 0 {
		t.Fatalf("the README has no %s recipe", examples.SubmitCommand)
	}
	args := strings.Fields(strings.ReplaceAll(strings.Join(recipes[0], " "), "http://localhost:8080", base))
	opts, err := examples.ParseArgs(append(args, "-bot", base), io.Discard)
	if err != nil {
		t.Fatalf("the README's recipe %q: %v", recipes[0], err)
	}
	if opts.ResponseURL != base+"/sandbox/inbox" {
		t.Fatalf("the README's first recipe sends the response to %q, not the sandbox's inbox", opts.ResponseURL)
	}
	resp, body, err := examples.Submit(t.Context(), time.Now(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/requests: %d %s", resp.StatusCode, body)
	}
	var accepted struct{ ID string }
	if err := json.Unmarshal(body, &accepted); err != nil || accepted.ID == "" {
		t.Fatalf("POST /v1/requests answered %s (%v)", body, err)
	}
	return accepted.ID
}

// TestBrowserRoundTrip is the sandbox's promise, in headless Chromium: post
// seed 000's example, answer every decision through the page as two
// members (buttons, a confirm dialog, a menu, comment modals with a field
// error), submit, and see the signed decision response in the inbox.
func TestBrowserRoundTrip(t *testing.T) {
	chromium := chromiumPath(t)
	base, setup, st := localBot(t)
	id := postExample(t, base)

	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.Env("TZ=UTC"), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1800))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	defer cancelBrowser()
	ctx := browser
	// The first run starts the browser, which lives as long as that run's
	// context: this one, not a step's.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// The page's script errors fail the test: they are the sandbox's bugs.
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			d, desc := e.ExceptionDetails, ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			t.Errorf("page script error at %s:%d: %s %s", d.URL, d.LineNumber+1, d.Text, desc)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	msg := `.msg[data-channel="C0APPROVALS"]`
	control := func(action, decision string) chromedp.CSS {
		return chromedp.CSS(fmt.Sprintf(`%s [data-action-id=%q][data-block-id$="/%s/%s"]`, msg, action, id, decision))
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		stepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(stepCtx, actions...); err != nil {
			dump, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			page, derr := chromedp.Run(dump, chromedp.Evaluate[string](`document.body.innerHTML`))
			t.Fatalf("%s: %v\npage (%v):\n%s", what, err, derr, page)
		}
	}
	// waitText waits until the element's text contains want.
	waitText := func(sel, want string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText.includes(%q)`, sel, want),
			chromedp.WithPollingTimeout(20*time.Second))
	}
	pick := func(sel, value string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q;
			s.dispatchEvent(new Event("change")); })()`, sel, value))
	}
	click := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }
	const textarea = `form.modal textarea[data-action-id="text"]`
	comment := func(decision, text string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{
			chromedp.Click(control("comment", decision)),
			chromedp.WaitVisible(chromedp.CSS(textarea)),
			chromedp.SendKeys(chromedp.CSS(textarea), text),
			click(`form.modal .modal-submit`),
			chromedp.WaitNotPresent(chromedp.CSS(`form.modal`)),
			waitText(msg, text),
		}
	}

	step("open the sandbox as Alice",
		chromedp.Navigate(base+"/sandbox/?user=U0ALICE#/c/C0APPROVALS"),
		chromedp.WaitVisible(control("approve", "d1")),
		waitText(msg, "Approve Marketing Strategy"))
	step("Alice: an empty comment is refused in the dialog",
		chromedp.Click(control("comment", "d1")),
		chromedp.WaitVisible(chromedp.CSS(textarea)),
		click(`form.modal .modal-submit`),
		waitText(`form.modal`, "Please complete this required field."),
		click(`form.modal .modal-close`),
		chromedp.WaitNotPresent(chromedp.CSS(`form.modal`)))
	step("Alice: comment on d1", comment("d1", "Good segmentation")...)
	step("Alice: Approve all 3, confirmed",
		click(msg+` [data-action-id="approve_all"]`),
		chromedp.WaitVisible(chromedp.CSS(`.confirm-yes`)),
		click(`.confirm-yes`),
		waitText(msg, "3 of 4 answered"))

	step("switch to Bob",
		pick("#user-switch", "U0BOB"),
		waitText("#me-detail", "@bob"),
		chromedp.WaitVisible(control("select", "d3")))
	sel := fmt.Sprintf(`%s select[data-block-id$="/%s/d3"]`, msg, id)
	step("Bob: pick the launch timing", pick(sel, "next_month"), waitText(msg, "Wait for Q2 by @bob"))
	step("Bob: comment on d4", comment("d4", "Require CC to reduce spam signups")...)
	step("Bob: reject d4",
		chromedp.Click(control("reject", "d4")),
		waitText(msg, "Reject by @bob"))
	step("Bob: submit",
		click(msg+` [data-action-id="submit"]`),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error { // a confirm dialog, if the message asks for one
			confirm, err := chromedp.Evaluate[bool](`!!document.querySelector(".confirm-yes")`)(ctx, tg)
			if err != nil || !confirm {
				return err
			}
			_, err = click(`.confirm-yes`)(ctx, tg)
			return err
		}),
		waitText(msg, "Resolved"))

	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(msg)))
	if err != nil {
		t.Fatalf("screenshot the resolved message: %v", err)
	}
	saveScreenshot(t, "sandbox-resolved-message.png", shot)

	step("the decision response arrives in the callback inbox",
		chromedp.Navigate(base+"/sandbox/?user=U0BOB#/inbox"),
		waitText(".inbox", "signature verified"))
	inbox, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".delivery")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"webhook-signature", `"request_id": "` + id + `"`, "Good segmentation", "Require CC to reduce spam signups", `"selected": "next_month"`} {
		if !strings.Contains(strings.ToLower(inbox), strings.ToLower(want)) {
			t.Errorf("the inbox entry lacks %q:\n%s", want, inbox)
		}
	}
	if page, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		saveScreenshot(t, "sandbox-inbox.png", page)
	}

	checkRenderer(t, ctx)

	got := setup.Sandbox.Inbox()
	if len(got) != 1 || !got[0].Verified {
		t.Fatalf("inbox = %+v, want one verified delivery", got)
	}
	rec, err := st.Get(t.Context(), id)
	if err != nil || rec.Status != "resolved" {
		t.Fatalf("request %s: status %v, %v", id, rec.Status, err)
	}
	for d, who := range map[string]string{"d1": "U0ALICE", "d2": "U0ALICE", "d3": "U0BOB", "d4": "U0BOB"} {
		if a := rec.Answers[d]; a.By.ID != who {
			t.Errorf("%s decided by %+v, want %s", d, a.By, who)
		}
	}
}

// saveScreenshot writes a screenshot where CI keeps its logs
// (SANDBOX_SCREENSHOT_DIR, set by .ci/run), else to the test's temp dir.
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := os.Getenv("SANDBOX_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("save screenshot: %v", err)
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("save screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// rendererCases render mrkdwn and the Block Kit elements the example does
// not use, in the page's own scripts; each result is a string to check.
const rendererCases = `(() => {
  const md = {users: {U0ALICE: {name: "alice"}}, channels: {C1: {name: "ops"}}, groups: {S1: {handle: "leads"}}, me: "U0ALICE"};
  const opt = (v) => ({text: {type: "plain_text", text: v.toUpperCase()}, value: v});
  const el = BK.render([
    {type: "header", block_id: "h", text: {type: "plain_text", text: "Title :tada:"}},
    {type: "section", block_id: "s", fields: [{type: "mrkdwn", text: "*F1*"}, {type: "plain_text", text: "F2"}],
     accessory: {type: "static_select", action_id: "acc", options: [opt("a"), opt("b")], initial_option: opt("b")}},
    {type: "context", block_id: "c", elements: [{type: "mrkdwn", text: "ctx _note_"}]},
    {type: "divider", block_id: "d"},
    {type: "actions", block_id: "x", elements: [
      {type: "multi_static_select", action_id: "m", options: [opt("a"), opt("b")], initial_options: [opt("a")]},
      {type: "datepicker", action_id: "dp", initial_date: "2027-03-04"},
      {type: "button", action_id: "del", style: "danger", text: {type: "plain_text", text: "Delete"},
       confirm: {title: {type: "plain_text", text: "Sure?"}, text: {type: "plain_text", text: "Really"},
                 confirm: {type: "plain_text", text: "Yes"}, deny: {type: "plain_text", text: "No"}}}]},
    {type: "input", block_id: "n", label: {type: "plain_text", text: "Amount"},
     element: {type: "number_input", action_id: "num", is_decimal_allowed: false, initial_value: "7"}},
    {type: "input", block_id: "t", optional: true, label: {type: "plain_text", text: "Why"},
     element: {type: "plain_text_input", action_id: "why", multiline: true}},
  ], {md, state: {}, errors: {n: "Too big."}, act() {}, confirm() {}});
  const q = (s) => el.querySelector(s);
  return {
    bold: MD.mrkdwn("*bold* _it_ ~st~ ` + "`co*de*`" + ` &lt;b&gt; &amp;", md),
    tokens: MD.mrkdwn("<@U0ALICE> <#C1> <!subteam^S1> <!here> <https://x.test/a|X> <mailto:a@b.test|a@b.test>", md),
    date: MD.mrkdwn("<!date^1771236000^{date_num} {date_long} {time}|fallback> <!date^1771236000^{date_short_pretty}|f>", md),
    quote: MD.mrkdwn("&gt; quoted\nplain", md),
    pre: MD.mrkdwn("` + "```*not bold*```" + `", md),
    unsafe: MD.mrkdwn("<javascript:alert(1)|click> <!date^1771236000^{date_num}^javascript:alert(2)|d> <b onmouseover=x>", md),
    header: q(".bk-header").textContent,
    fields: [...el.querySelectorAll(".bk-field")].map((f) => f.innerHTML).join("|"),
    accessory: q(".bk-accessory select").value,
    context: q(".bk-context").innerHTML,
    multi: q("details.bk-multi summary").textContent,
    date_input: q("input[type=date]").value,
    danger: q("button.bk-btn.danger").textContent,
    number: q("input[data-action-id=num]").value + " " + q("input[data-action-id=num]").getAttribute("inputmode"),
    error: q(".bk-input-block.has-error .bk-error").textContent,
    optional: q("[data-block-id=t] .bk-optional").textContent + " " + q("textarea[data-action-id=why]").tagName,
  };
})()`

// checkRenderer checks the page's mrkdwn and Block Kit rendering.
func checkRenderer(t *testing.T, ctx context.Context) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := chromedp.Run(c, chromedp.Evaluate[map[string]string](rendererCases))
	if err != nil {
		t.Fatalf("render in the page: %v", err)
	}
	// Messages must never carry script into the page: links with other
	// schemes than http(s) and mailto are shown as text.
	if u := got["unsafe"]; strings.Contains(u, "javascript:") || strings.Contains(u, "<a ") || strings.Contains(u, "<b on") {
		t.Errorf("unsafe links render as %q", got["unsafe"])
	}
	for key, want := range map[string][]string{
		"bold":       {"<b>bold</b>", "<i>it</i>", "<s>st</s>", "<code>co*de*</code>", "&lt;b&gt; &amp;"},
		"tokens":     {`class="mention me" data-user="U0ALICE">@alice<`, ">#ops<", ">@leads<", ">@here<", `href="https://x.test/a"`, ">a@b.test<"},
		"date":       {"2026-02-16 Monday, February 16th, 2026 10:00 AM", "Feb 16, 2026"},
		"quote":      {"<blockquote>quoted</blockquote>plain"},
		"pre":        {"<pre>*not bold*</pre>"},
		"unsafe":     {"click", "2026-02-16", "b onmouseover=x"},
		"header":     {"Title 🎉"},
		"fields":     {"<b>F1</b>|F2"},
		"accessory":  {"b"},
		"context":    {"ctx <i>note</i>"},
		"multi":      {"A"},
		"date_input": {"2027-03-04"},
		"danger":     {"Delete"},
		"number":     {"7 numeric"},
		"error":      {"Too big."},
		"optional":   {"(optional) TEXTAREA"},
	} {
		for _, w := range want {
			if !strings.Contains(got[key], w) {
				t.Errorf("%s renders as %q, lacking %q", key, got[key], w)
			}
		}
	}
}
