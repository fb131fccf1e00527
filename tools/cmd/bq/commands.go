package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes of every command (also listed in "bq --help").
const (
	// exitOK: the command did what was asked.
	exitOK = 0
	// exitError: the command failed (unreachable broker, broker error).
	exitError = 1
	// exitUsage: unknown command, bad flag, bad value or missing argument.
	exitUsage = 2
	// exitPartial: a redrive finished but the replay-count guard held
	// records back.
	exitPartial = 3
	// exitInterrupted: SIGINT or SIGTERM stopped a command before it
	// finished (128+SIGINT, as shells report it). A redrive so stopped is
	// resumable: running it again continues where it stopped.
	exitInterrupted = 130
)

// exitCodesHelp documents the exit codes in the root help.
const exitCodesHelp = `Exit codes:
  0    success (also: tail, reinject and dev kafka stopped by Ctrl-C/SIGTERM)
  1    failure (unreachable broker, rejected TLS/SASL settings, broker or I/O error)
  2    usage error (unknown command or flag, bad value, bad broker URL, missing flag)
  3    partial: a redrive finished, but the replay-count guard held records back
  130  interrupted by SIGINT or SIGTERM before finishing; an interrupted redrive
       or dlq discard is resumable: run the same command again`

// errPartial marks a run that finished with records held back; the
// command has already reported them.
var errPartial = errors.New("partial")

// errInterrupted marks a command stopped by a signal; the command has
// already said what the user can do about it.
var errInterrupted = errors.New("interrupted")

// usageError is a usage problem found while parsing or validating flags.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error (exit code 2).
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// root returns the command tree. New commands are added here.
func root() *cobra.Command {
	r := &cobra.Command{
		Use:   "bq",
		Short: "BabelQueue for Go operator command line",
		Long: `bq operates BabelQueue queues on Apache Kafka and Apache Pulsar: topics,
lag, dead letters, redrive, publish and tail.

` + topicsHelp + `

` + connEnvHelp + `

` + exitCodesHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       versionString(),
	}
	r.SetVersionTemplate("{{.Version}}\n")
	group(r, &cobra.Command{Use: "dev", Short: "local development helpers"}, newDevKafkaCmd())
	group(r, &cobra.Command{Use: "topics", Short: "list, describe and provision topics"},
		newTopicsEnsureCmd(), newTopicsListCmd(), newTopicsDescribeCmd())
	group(r, &cobra.Command{Use: "dlq", Short: "inspect and discard dead letters"},
		newDLQStatsCmd(), newDLQPeekCmd(), newDLQDiscardCmd())
	group(r, &cobra.Command{Use: "outbox", Short: "inspect a transactional outbox table"}, newOutboxStatsCmd())
	r.AddCommand(newReinjectCmd(), newRedriveCmd(), newPublishCmd(), newTailCmd(), newLagCmd(), newVersionCmd())
	r.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	suggestAt(r)
	return r
}

// suggestFor are the words of other tools (kcat, kafka-console-*,
// pulsar-admin) for which a command is suggested, besides the names
// within two edits that cobra suggests at every level.
var suggestFor = map[string][]string{
	"bq tail":          {"consume", "cat", "read", "follow"},
	"bq publish":       {"produce", "send", "pub"},
	"bq redrive":       {"replay", "requeue"},
	"bq lag":           {"offsets", "consumers"},
	"bq topics ensure": {"create"},
	"bq topics list":   {"ls"},
	"bq dlq stats":     {"count", "summary"},
	"bq dlq peek":      {"show", "inspect", "browse"},
	"bq dlq discard":   {"purge", "delete", "drop"},
}

// suggestAt sets the suggestions of c and of every command below it.
func suggestAt(c *cobra.Command) {
	c.SuggestionsMinimumDistance = 2
	c.SuggestFor = suggestFor[c.CommandPath()]
	for _, s := range c.Commands() {
		suggestAt(s)
	}
}

// group adds a command that only holds subcommands: run without one, it
// prints its help and exits 2; with an unknown one, it says so.
func group(parent, g *cobra.Command, subs ...*cobra.Command) {
	g.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return unknownCommand(c, args[0])
		}
		return nil
	}
	g.RunE = func(c *cobra.Command, _ []string) error {
		c.SetOut(c.ErrOrStderr())
		_ = c.Help()
		return usagef("a subcommand is required")
	}
	g.AddCommand(subs...)
	parent.AddCommand(g)
}

// noArgs rejects positional arguments with a hint for the usual mistake
// of giving a boolean flag its value after a blank.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	for _, a := range args {
		if a == "true" || a == "false" {
			return usagef("unexpected argument %q: a boolean flag takes its value after '=' (--follow=false)", a)
		}
	}
	return usagef("unexpected arguments %q (this command takes flags only)", args)
}

// run executes args and returns the exit code.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	r := root()
	r.SetArgs(longFlagsWithOneDash(r, args))
	r.SetOut(out)
	r.SetErr(errOut)
	r.SetIn(stdin)
	if len(args) == 0 {
		r.InitDefaultHelpCmd()
		r.InitDefaultCompletionCmd()
		r.SetOut(errOut)
		_ = r.Help()
		return exitUsage
	}
	cmd, err := mistypedSubcommand(r, args)
	if err == nil {
		cmd, err = r.ExecuteContextC(ctx)
	}
	path := "bq"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") ||
		strings.HasPrefix(err.Error(), "unknown flag") || strings.HasPrefix(err.Error(), "unknown shorthand"):
		fmt.Fprintf(errOut, "%s: %v\nRun '%s --help' for usage.\n", path, err, path)
		return exitUsage
	case errors.Is(err, errPartial):
		return exitPartial
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case ctx.Err() != nil:
		fmt.Fprintf(errOut, "%s: interrupted: %v\n", path, err)
		return exitInterrupted
	default:
		fmt.Fprintf(errOut, "%s: %v\n", path, err)
		return exitError
	}
}

// longFlagsWithOneDash rewrites "-name" and "-name=v" to "--name..." when
// name is a long flag of the command args select, so the single-dash form
// of the standard flag package, used by earlier versions of bq and in
// scripts, keeps working. Short flags (-q) and their clusters are left.
func longFlagsWithOneDash(r *cobra.Command, args []string) []string {
	c, _, err := r.Find(args)
	if err != nil || c == nil {
		return args
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && lookupFlag(c, name) != nil {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

func lookupFlag(c *cobra.Command, name string) *pflag.Flag {
	if f := c.Flags().Lookup(name); f != nil {
		return f
	}
	return c.InheritedFlags().Lookup(name)
}

// leaf makes a command that takes flags only.
func leaf(use, short, long, example string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: strings.TrimSpace(long), Example: strings.TrimRight(example, "\n"), Args: noArgs}
}
