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

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

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

// root returns the command tree. New commands are added here.
func root() *command {
	return &command{
		name:    "bq",
		summary: "BabelQueue for Go command line",
		subs: []*command{
			{
				name:    "dev",
				summary: "local development helpers",
				subs: []*command{
					{name: "kafka", summary: "run an embedded Kafka-protocol broker on 127.0.0.1", run: runDevKafka},
				},
			},
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
}
