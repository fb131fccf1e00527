package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes of every command (also listed in "bq help").
const (
	// exitOK: the command did what was asked.
	exitOK = 0
	// exitError: the command failed (unreachable broker, broker error).
	exitError = 1
	// exitUsage: unknown command, bad flag or missing argument.
	exitUsage = 2
	// exitPartial: a redrive finished but the replay-count guard held
	// records back.
	exitPartial = 3
)

// exitCodesHelp documents the exit codes in the root help.
const exitCodesHelp = `Exit codes:
  0  success
  1  failure (unreachable broker, broker or I/O error)
  2  usage error (unknown command, bad flag, bad broker URL, missing argument)
  3  partial: a redrive finished, but the replay-count guard held records
     back; they are listed in the summary`

// command is one node of the command tree: either a group holding
// subcommands or a leaf that runs.
type command struct {
	name    string
	summary string
	subs    []*command
	// run executes a leaf with the arguments after its name.
	run func(ctx context.Context, args []string, out, errOut io.Writer) error
}

// errUsage marks an error already explained to the user (usage printed).
var errUsage = errors.New("usage")

// errPartial marks a run that finished with records held back; the
// command has already reported them.
var errPartial = errors.New("partial")

// root returns the command tree. New commands are added here.
func root() *command {
	return &command{
		name:    "bq",
		summary: "BabelQueue for Go operator command line",
		subs: []*command{
			{
				name:    "dev",
				summary: "local development helpers",
				subs: []*command{
					{name: "kafka", summary: "run an embedded Kafka-protocol broker on 127.0.0.1", run: runDevKafka},
				},
			},
			{
				name:    "topics",
				summary: "Kafka topic provisioning",
				subs: []*command{
					{name: "ensure", summary: "create a work topic, its retry tiers and its DLQ (idempotent)", run: runTopicsEnsure},
				},
			},
			{name: "reinject", summary: "run the Kafka re-injector for retry tiers until stopped", run: runReinject},
			{
				name:    "dlq",
				summary: "inspect a dead-letter queue without consuming it",
				subs: []*command{
					{name: "stats", summary: "count dead letters by reason, URN, original queue and age", run: runDLQStats},
					{name: "peek", summary: "show dead letters: envelope, dead_letter block and headers", run: runDLQPeek},
				},
			},
			{name: "redrive", summary: "move dead letters back to their queue (resumable)", run: runRedrive},
			{name: "publish", summary: "publish an envelope built from a URN and JSON data", run: runPublish},
			{name: "tail", summary: "print decoded envelopes and headers of a queue, following", run: runTail},
		},
	}
}

// run dispatches args through the command tree and returns the exit code.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	c := root()
	path := []string{c.name}
	for c.run == nil {
		if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			printGroupUsage(errOut, path, c)
			if len(args) == 0 {
				return exitUsage
			}
			return exitOK
		}
		next := c.find(args[0])
		if next == nil {
			fmt.Fprintf(errOut, "%s: unknown command %q\n\n", strings.Join(path, " "), args[0])
			printGroupUsage(errOut, path, c)
			return exitUsage
		}
		c, args = next, args[1:]
		path = append(path, c.name)
	}
	err := c.run(ctx, args, out, errOut)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errPartial):
		return exitPartial
	default:
		fmt.Fprintf(errOut, "%s: %v\n", strings.Join(path, " "), err)
		return exitError
	}
}

func (c *command) find(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func printGroupUsage(w io.Writer, path []string, c *command) {
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s <command> [flags]\n\nCommands:\n", strings.Join(path, " "), c.summary, strings.Join(path, " "))
	subs := append([]*command(nil), c.subs...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
	for _, s := range subs {
		fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
	}
	if len(path) == 1 {
		fmt.Fprintf(w, "\nRun \"bq <command> -h\" for flags and examples.\n\n%s\n", exitCodesHelp)
	}
}

// leafFlags builds the flag set of a leaf command with a usage text made of
// a description, the flags and examples.
func leafFlags(name, usage, description, examples string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintf(errOut, "Usage: %s\n\n%s\n\nFlags:\n", usage, strings.TrimSpace(description))
		fs.PrintDefaults()
		if examples != "" {
			fmt.Fprintf(errOut, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs
}

// parseLeaf parses args; it returns flag.ErrHelp for -h, errUsage (usage
// printed) for a bad flag or unexpected positional arguments.
func parseLeaf(fs *flag.FlagSet, args []string, errOut io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		fs.Usage()
		return errUsage
	}
	return nil
}

// usageErrorf reports a usage problem found after parsing and returns
// errUsage.
func usageErrorf(fs *flag.FlagSet, errOut io.Writer, format string, args ...any) error {
	fmt.Fprintf(errOut, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fmt.Fprintf(errOut, "Run \"%s -h\" for help.\n", fs.Name())
	return errUsage
}
