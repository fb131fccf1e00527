package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// runNoBroker runs bq with no broker in the environment.
func runNoBroker(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestSubcommandTyposSuggestAtEveryLevel: a mistyped subcommand is named,
// with suggestions, whatever flags follow it (cobra alone said
// "unknown shorthand flag: 'q'" for "bq dlq stat -q orders").
func TestSubcommandTyposSuggestAtEveryLevel(t *testing.T) {
	clearBrokerEnv(t)
	cases := []struct {
		args    []string
		unknown string
		suggest string
	}{
		{[]string{"dlq", "stat", "-q", "orders"}, `unknown command "stat" for "bq dlq"`, "stats"},
		{[]string{"dlq", "stat", "-t", "orders", "--json"}, `unknown command "stat" for "bq dlq"`, "stats"},
		{[]string{"dlq", "-b", "127.0.0.1:1", "peak", "-t", "orders"}, `unknown command "peak" for "bq dlq"`, "peek"},
		{[]string{"dlq", "purge", "-t", "orders"}, `unknown command "purge" for "bq dlq"`, "discard"},
		{[]string{"topics", "lst"}, `unknown command "lst" for "bq topics"`, "list"},
		{[]string{"topics", "create", "-t", "orders"}, `unknown command "create" for "bq topics"`, "ensure"},
		{[]string{"dev", "kafak"}, `unknown command "kafak" for "bq dev"`, "kafka"},
		{[]string{"tial", "-t", "orders"}, `unknown command "tial" for "bq"`, "tail"},
		{[]string{"consume", "-t", "orders"}, `unknown command "consume" for "bq"`, "tail"},
		{[]string{"redirve", "-q", "orders"}, `unknown command "redirve" for "bq"`, "redrive"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := runNoBroker(t, c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut, c.unknown) || !strings.Contains(errOut, "Did you mean this?\n\t"+c.suggest) {
				t.Errorf("stderr lacks %q and the suggestion %q:\n%s", c.unknown, c.suggest, errOut)
			}
			if strings.Contains(errOut, "shorthand") || strings.Contains(errOut, "unknown flag") {
				t.Errorf("stderr blames a flag:\n%s", errOut)
			}
		})
	}
	// Help of a group still works, before or after a flag.
	if code, out, _ := runNoBroker(t, "dlq", "--help"); code != exitOK || !strings.Contains(out, "stats") {
		t.Errorf("bq dlq --help: exit %d\n%s", code, out)
	}
}

// TestTopicFlagEverywhere: every command that names a topic takes
// -t/--topic, and -q/--queue as its alias; the root help says which
// commands take the work topic and which its DLQ.
func TestTopicFlagEverywhere(t *testing.T) {
	clearBrokerEnv(t)
	for _, path := range [][]string{
		{"tail"}, {"publish"}, {"redrive"}, {"dlq", "stats"}, {"dlq", "peek"}, {"dlq", "discard"},
		{"topics", "ensure"}, {"topics", "describe"}, {"lag"}, {"reinject"},
	} {
		c, _, err := root().Find(path)
		if err != nil {
			t.Fatal(path, err)
		}
		topic, queue := c.Flags().Lookup("topic"), c.Flags().Lookup("queue")
		if topic == nil || topic.Shorthand != "t" || queue == nil || queue.Shorthand != "q" {
			t.Errorf("bq %s: --topic/-t %v, --queue/-q %v", strings.Join(path, " "), topic, queue)
		}
	}
	_, out, _ := runNoBroker(t, "--help")
	for _, s := range []string{"-t/--topic", "the work topic:", "the DLQ of a topic:", "-t orders.dlq"} {
		if !strings.Contains(out, s) {
			t.Errorf("root help lacks %q", s)
		}
	}
	_, out, _ = runNoBroker(t, "dlq", "stats", "--help")
	if !strings.Contains(out, "or the DLQ itself") {
		t.Errorf("dlq stats help does not say -t takes the DLQ too:\n%s", out)
	}
}

func TestDLQName(t *testing.T) {
	for _, c := range []struct{ dlq, topic, want string }{
		{"", "orders", "orders.dlq"},
		{"", "orders.dlq", "orders.dlq"},
		{"other.dlq", "orders", "other.dlq"},
		{"", "", ""},
	} {
		if got := dlqName(c.dlq, c.topic); got != c.want {
			t.Errorf("dlqName(%q, %q) = %q, want %q", c.dlq, c.topic, got, c.want)
		}
	}
}

// TestEmbeddedTopicAndQueueFlags runs publish, tail and dlq stats on the
// embedded broker with -t, -q, --topic and the DLQ's own name.
func TestEmbeddedTopicAndQueueFlags(t *testing.T) {
	_, runBQ := embedded(t, 1, "payments", "payments.dlq")
	mustRun(t, runBQ, "publish", "-t", "payments", "-u", "urn:bq:pay", "-d", `{"n":1}`)
	mustRun(t, runBQ, "publish", "-q", "payments", "-u", "urn:bq:pay", "-d", `{"n":2}`)
	for _, flag := range []string{"-t", "-q", "--topic", "--queue"} {
		out := mustRun(t, runBQ, "tail", flag, "payments", "--from-start", "--no-follow", "--json")
		if n := strings.Count(out, `"urn":"urn:bq:pay"`); n != 2 {
			t.Errorf("tail %s payments: %d messages, want 2:\n%s", flag, n, out)
		}
	}
	for _, args := range [][]string{{"-t", "payments"}, {"-t", "payments.dlq"}, {"-q", "payments.dlq"}, {"--dlq", "payments.dlq"}} {
		out := mustRun(t, runBQ, append([]string{"dlq", "stats", "--json"}, args...)...)
		var st dlqStats
		if err := json.Unmarshal([]byte(out), &st); err != nil || st.Topic != "payments.dlq" {
			t.Errorf("dlq stats %v: %+v %v", args, st, err)
		}
	}
}
