package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

func TestHelpExplainsCommandsAndWhereConfigurationLives(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}, {"audit", "verify", "--help"}, {"audit", "export", "--help"}} {
		var out, errOut bytes.Buffer
		if code := runCLI(context.Background(), args, &out, &errOut); code != 0 || errOut.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
		for _, want := range []string{"approvalbot version", "approvalbot audit verify", "approvalbot audit export", "--file", "environment variables",
			"deploy/approvalbot.env.example", "docs/configuration.md", buildHelp} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, out.String())
			}
		}
	}
}

func TestVersionPrintsTheBuild(t *testing.T) {
	t.Parallel()
	info := bot.ReadBuildInfo()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if code := runCLI(context.Background(), args, &out, &errOut); code != 0 || errOut.Len() != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
		want := "approvalbot " + info.Version + "\ncommit " + info.Commit + "\ngo " + info.GoVersion + "\n"
		if out.String() != want {
			t.Errorf("%v printed %q, want %q", args, out.String(), want)
		}
	}
}

// A command line approvalbot does not understand exits 2 with the problem
// and the usage on stderr, and runs nothing (no configuration is read: these
// would otherwise start a local-mode bot or fail on REDIS_URL).
func TestUnknownCommandsAndFlagsExitTwo(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"serve":                          `unknown command "serve"`,
		"audit":                          `unknown command "audit"`,
		"audit verify now":               `unknown command "audit verify now"`,
		"--port 8080":                    `unknown flag "--port": approvalbot takes no flags`,
		"-v":                             `unknown flag "-v"`,
		"version --json":                 `unknown command "version --json"`,
		"--listen-addr=:80 ":             `unknown flag "--listen-addr=:80"`,
		"audit export --since yesterday": `--since "yesterday" is not an RFC 3339 time`,
		"audit export --since 2026-01-02T00:00:00Z --until 2026-01-01T00:00:00Z": `--until is before --since`,
		"audit export --file x": `flag provided but not defined: -file`,
		"audit verify --file":   `flag needs an argument: -file`,
		"audit export now":      `unknown command "audit export now"`,
	} {
		var out, errOut bytes.Buffer
		code := runCLI(context.Background(), strings.Fields(args), &out, &errOut)
		if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), "Usage:") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}
