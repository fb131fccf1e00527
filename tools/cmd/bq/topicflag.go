package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// topicFlag registers -t/--topic on fs and its alias -q/--queue (the name
// earlier versions used): both set the returned string.
func topicFlag(fs *pflag.FlagSet, usage string) *string {
	v := new(string)
	fs.StringVarP(v, "topic", "t", "", usage+" (alias -q, --queue)")
	fs.StringVarP(v, "queue", "q", "", "alias of --topic")
	_ = fs.MarkHidden("queue")
	return v
}

// topicsFlag is topicFlag for commands that take several topics.
func topicsFlag(fs *pflag.FlagSet, usage string) *[]string {
	v := new([]string)
	fs.StringSliceVarP(v, "topic", "t", nil, usage+" (alias -q, --queue)")
	fs.StringSliceVarP(v, "queue", "q", nil, "alias of --topic")
	_ = fs.MarkHidden("queue")
	return v
}

// dlqTopicUsage is the -t help of the commands that read a DLQ.
const dlqTopicUsage = "work topic, whose DLQ is <topic>.dlq, or the DLQ itself (a name ending in .dlq)"

// topicsHelp says, in the root help, which topic each command takes.
const topicsHelp = `Topics: every command names its topic with -t/--topic (-q/--queue is the
same flag).
  the work topic:        publish, topics ensure, lag, reinject
  any topic:             tail, topics describe
  the DLQ of a topic:    dlq stats|peek|discard, redrive: -t orders reads
                         orders.dlq; -t orders.dlq or --dlq orders.dlq too`

// unknownCommand is the usage error for word, which names no subcommand
// of c, with cobra's suggestions (its SuggestFor lists and the names
// within SuggestionsMinimumDistance edits or with word as a prefix).
func unknownCommand(c *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, c.CommandPath())
	if s := c.SuggestionsFor(word); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return usagef("%s", msg)
}

// mistypedSubcommand finds a subcommand name that args mistype below the
// top level ("bq dlq stat -q orders"): cobra would report the flags that
// follow as unknown to the group ("unknown shorthand flag: 'q'") instead
// of the word. It returns the group and the error with suggestions, or
// nil when args name a command.
func mistypedSubcommand(r *cobra.Command, args []string) (*cobra.Command, error) {
	c, rest, err := r.Find(args)
	if err != nil || c == nil || c == r || !c.HasSubCommands() {
		return nil, nil
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			return nil, nil
		case a == "-h" || a == "--help":
			return nil, nil
		case strings.HasPrefix(a, "-"):
			if !strings.Contains(a, "=") {
				i++ // the flag's value
			}
		default:
			return c, unknownCommand(c, a)
		}
	}
	return nil, nil
}
