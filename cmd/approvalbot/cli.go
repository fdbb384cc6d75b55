package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/bot"
)

// Exit codes: 2 is the convention for a command line that cannot be
// understood (as Go's flag package and most Unix tools use).
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const usage = `approvalbot puts humans in the loop of AI agents through Slack.

Usage:
  approvalbot                 run the bot: HTTP server (intake, Slack endpoints,
                              /healthz, /readyz, /metrics) and the job runner
  approvalbot version         print the version, VCS commit and Go version
  approvalbot audit verify    recompute every audit hash chain in REDIS_URL
  approvalbot audit export [--since RFC3339] [--until RFC3339] [--out FILE]
                           [--mark | --mark=false]
                              write the audit chains (all, or the entries within
                              the range) as NDJSON to stdout or FILE (written,
                              fsync'd, then renamed into place), to verify
                              offline; once complete, record per shard how far
                              exports cover the audit (RETENTION deletes only
                              what they cover) when written to FILE or stdout
                              redirected to a file, not to a pipe unless
                              --mark; --mark=false records nothing
  approvalbot audit verify --file EXPORT
                              verify an export (- reads stdin) with AUDIT_KEY
                              alone, without Redis
  approvalbot healthcheck [--url URL] [--timeout 2s]
                              GET URL (default http://127.0.0.1:<LISTEN_ADDR's
                              port>/healthz): exit 0 on a 2xx answer, else 1;
                              for container health checks without a shell
  approvalbot sleep DURATION  wait DURATION (5s, 1m) and exit 0: a preStop hook
                              for images without a shell (docs/deploy.md)
  approvalbot mcp             serve the MCP tools (request_decision, get_decision,
                              withdraw_decision) over stdin/stdout for an MCP
                              client, calling the bot at APPROVALBOT_URL
                              (default http://localhost:8080) with the intake
                              token APPROVALBOT_TOKEN (none in local mode)
  approvalbot help            print this help (also -h, --help)

Configuration is environment variables only; there are no flags (beyond the
audit commands' above) and no config file.

` + buildHelp + `

For production start from deploy/approvalbot.env.example (SLACK_BOT_TOKEN,
SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, INTAKE_TOKENS, CALLBACK_SECRET, AUDIT_KEY,
REDIS_URL). Every variable, its default and meaning is in docs/configuration.md.
`

// usageError is a command line approvalbot does not understand.
type usageError struct{ problem string }

func (e usageError) Error() string { return e.problem }

// command is what a command line asks for.
type command int

const (
	cmdRun command = iota
	cmdHelp
	cmdVersion
	cmdAuditVerify
	cmdAuditExport
	cmdHealthcheck
	cmdSleep
	cmdMCP
)

// invocation is a parsed command line.
type invocation struct {
	cmd          command
	since, until time.Time     // audit export's range (zero: unbounded)
	file         string        // audit verify --file ("-": stdin; "": verify Redis)
	out          string        // audit export --out ("": stdout)
	mark         bool          // audit export --mark: record the export marks
	markSet      bool          // --mark was given (else stdout that is not a file marks nothing)
	url          string        // healthcheck --url
	timeout      time.Duration // healthcheck --timeout
	sleep        time.Duration // sleep's duration
}

// parseArgs reads the command line (without the program name). Asking for
// help anywhere wins, so "approvalbot audit verify --help" explains rather
// than runs.
func parseArgs(args []string) (invocation, error) {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return invocation{cmd: cmdHelp}, nil
		}
	}
	switch {
	case len(args) == 0:
		return invocation{cmd: cmdRun}, nil
	case len(args) == 1 && args[0] == "help":
		return invocation{cmd: cmdHelp}, nil
	case len(args) == 1 && (args[0] == "version" || args[0] == "-version" || args[0] == "--version"):
		return invocation{cmd: cmdVersion}, nil
	case len(args) >= 2 && args[0] == "audit" && (args[1] == "verify" || args[1] == "export"):
		return parseAudit(args)
	case len(args) == 1 && args[0] == "mcp":
		return invocation{cmd: cmdMCP}, nil
	case args[0] == "healthcheck":
		return parseHealthcheck(args[1:])
	case args[0] == "sleep":
		return parseSleep(args[1:])
	case strings.HasPrefix(args[0], "-"):
		return invocation{}, usageError{fmt.Sprintf("unknown flag %q: approvalbot takes no flags, its configuration is environment variables", args[0])}
	default:
		return invocation{}, usageError{fmt.Sprintf("unknown command %q", strings.Join(args, " "))}
	}
}

// parseAudit reads "audit verify [--file F]" and "audit export [--since T]
// [--until T]": each takes only its own flags.
func parseAudit(args []string) (invocation, error) {
	fs := flag.NewFlagSet("approvalbot "+args[0]+" "+args[1], flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the usage error below says what was wrong, then the usage
	var inv invocation
	var since, until string
	if args[1] == "verify" {
		inv.cmd = cmdAuditVerify
		fs.StringVar(&inv.file, "file", "", "")
	} else {
		inv.cmd = cmdAuditExport
		fs.StringVar(&since, "since", "", "")
		fs.StringVar(&until, "until", "", "")
		fs.StringVar(&inv.out, "out", "", "")
		fs.BoolVar(&inv.mark, "mark", true, "")
	}
	if err := fs.Parse(args[2:]); err != nil {
		return invocation{}, usageError{fmt.Sprintf("%s: %v", strings.TrimPrefix(fs.Name(), "approvalbot "), err)}
	}
	fs.Visit(func(f *flag.Flag) { inv.markSet = inv.markSet || f.Name == "mark" })
	if fs.NArg() > 0 {
		return invocation{}, usageError{fmt.Sprintf("unknown command %q", strings.Join(args, " "))}
	}
	for _, t := range []struct {
		flag, value string
		to          *time.Time
	}{{"since", since, &inv.since}, {"until", until, &inv.until}} {
		if t.value == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339, t.value)
		if err != nil {
			return invocation{}, usageError{fmt.Sprintf("%s: --%s %q is not an RFC 3339 time (2006-01-02T15:04:05Z)", strings.TrimPrefix(fs.Name(), "approvalbot "), t.flag, t.value)}
		}
		*t.to = v
	}
	if !inv.since.IsZero() && !inv.until.IsZero() && inv.until.Before(inv.since) {
		return invocation{}, usageError{strings.TrimPrefix(fs.Name(), "approvalbot ") + ": --until is before --since"}
	}
	return inv, nil
}

// runCLI runs the command line args and returns the process's exit code.
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	inv, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "approvalbot: %v\n\n%s", err, usage)
		return exitUsage
	}
	switch inv.cmd {
	case cmdHelp:
		fmt.Fprint(stdout, usage)
		return exitOK
	case cmdVersion:
		info := bot.ReadBuildInfo()
		fmt.Fprintf(stdout, "approvalbot %s\ncommit %s\ngo %s\n", info.Version, info.Commit, info.GoVersion)
		return exitOK
	case cmdAuditVerify:
		if inv.file != "" {
			err = auditVerifyFile(inv.file, os.Stdin, stdout)
		} else {
			err = auditVerify(ctx, stdout)
		}
	case cmdAuditExport:
		err = auditExport(ctx, stdout, stderr, inv)
	case cmdHealthcheck:
		err = healthcheck(ctx, inv.url, inv.timeout)
	case cmdSleep:
		sleep(ctx, inv.sleep)
	case cmdMCP:
		err = runMCP(ctx, os.Getenv, os.Stdin, os.Stdout)
	default:
		err = run(ctx)
	}
	if err != nil {
		fmt.Fprintln(stderr, "approvalbot:", err)
		return exitError
	}
	return exitOK
}
