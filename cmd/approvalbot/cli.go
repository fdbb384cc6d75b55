package main

import (
	"context"
	"fmt"
	"io"
	"strings"

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
  approvalbot help            print this help (also -h, --help)

Configuration is environment variables only; there are no flags and no config
file.

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
)

// parseArgs reads the command line (without the program name). Asking for
// help anywhere wins, so "approvalbot audit verify --help" explains rather
// than runs.
func parseArgs(args []string) (command, error) {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return cmdHelp, nil
		}
	}
	switch {
	case len(args) == 0:
		return cmdRun, nil
	case len(args) == 1 && args[0] == "help":
		return cmdHelp, nil
	case len(args) == 1 && (args[0] == "version" || args[0] == "-version" || args[0] == "--version"):
		return cmdVersion, nil
	case len(args) == 2 && args[0] == "audit" && args[1] == "verify":
		return cmdAuditVerify, nil
	case strings.HasPrefix(args[0], "-"):
		return 0, usageError{fmt.Sprintf("unknown flag %q: approvalbot takes no flags, its configuration is environment variables", args[0])}
	default:
		return 0, usageError{fmt.Sprintf("unknown command %q", strings.Join(args, " "))}
	}
}

// runCLI runs the command line args and returns the process's exit code.
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "approvalbot: %v\n\n%s", err, usage)
		return exitUsage
	}
	switch cmd {
	case cmdHelp:
		fmt.Fprint(stdout, usage)
		return exitOK
	case cmdVersion:
		info := bot.ReadBuildInfo()
		fmt.Fprintf(stdout, "approvalbot %s\ncommit %s\ngo %s\n", info.Version, info.Commit, info.GoVersion)
		return exitOK
	case cmdAuditVerify:
		err = auditVerify(ctx, stdout)
	default:
		err = run(ctx)
	}
	if err != nil {
		fmt.Fprintln(stderr, "approvalbot:", err)
		return exitError
	}
	return exitOK
}
