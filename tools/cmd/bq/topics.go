package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
)

// parseTiers reads a comma-separated list of durations ("5s,30s,5m,30m");
// "none" means no retry tiers.
func parseTiers(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil
	}
	var tiers []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--tiers %q: %q is not a positive duration", s, f)
		}
		if n := len(tiers); n > 0 && d <= tiers[n-1] {
			return nil, fmt.Errorf("--tiers %q: tiers must ascend", s)
		}
		tiers = append(tiers, d)
	}
	return tiers, nil
}

// tiersString is the default --tiers value (the recommended tiers).
func tiersString(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// ensureResult is the --json output of topics ensure.
type ensureResult struct {
	Topic     string   `json:"topic"`
	Retry     []string `json:"retry_topics"`
	DLQ       string   `json:"dlq"`
	Partition int      `json:"partitions"`
}

const topicsEnsureHelp = `Creates, when missing, a Kafka work topic, one retry topic per tier
(<topic>.retry.<n>, message.timestamp.type=LogAppendTime) and the
dead-letter topic <topic>.dlq, the retry and dead-letter topics with the
partition count the work topic really has. Topics that exist are left as
they are, so it is safe to run again.

` + connEnvHelp

const topicsEnsureExamples = `  bq topics ensure --broker kafka://127.0.0.1:9092 --topic orders --partitions 6
  bq topics ensure --broker kafka://127.0.0.1:9092 --topic orders --tiers 1s,10s --json
  bq topics ensure --broker kafka://127.0.0.1:9092 --topic orders --tiers none`

func runTopicsEnsure(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := leafFlags("bq topics ensure", "bq topics ensure --broker URL --topic T [--partitions N] [--replication R] [--tiers 5s,30s,5m,30m] [--json]", topicsEnsureHelp, topicsEnsureExamples, errOut)
	var cf connFlags
	cf.register(fs)
	var topics multiString
	fs.Var(&topics, "topic", "work topic (repeatable)")
	partitions := fs.Int("partitions", 1, "partitions of a work topic that does not exist yet")
	replication := fs.Int("replication", 1, "replication factor")
	tiersFlag := fs.String("tiers", tiersString(bqkafka.DefaultRetryTiers), `retry tiers, ascending ("none" for no retry topics)`)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseLeaf(fs, args, errOut); err != nil {
		return err
	}
	if len(topics) == 0 {
		return usageErrorf(fs, errOut, "--topic is required")
	}
	if *partitions <= 0 || *replication <= 0 {
		return usageErrorf(fs, errOut, "--partitions and --replication must be positive")
	}
	tiers, err := parseTiers(*tiersFlag)
	if err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	u, err := cf.url()
	if err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	if err := cf.check(u); err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	k, err := cf.kafka(ctx, u)
	if err != nil {
		return err
	}
	defer k.close()
	opts := append(k.transportOptions(), bqkafka.WithLogger(discardLogger()))
	if len(tiers) > 0 {
		opts = append(opts, bqkafka.WithRetryTiers(tiers...))
	}
	t, err := bqkafka.New(opts...)
	if err != nil {
		return err
	}
	defer t.Close()
	var results []ensureResult
	for _, topic := range topics {
		if err := t.EnsureTopics(ctx, topic, *partitions, *replication); err != nil {
			return fmt.Errorf("ensure %q: %w", topic, err)
		}
		parts, err := k.partitions(ctx, topic)
		if err != nil {
			return err
		}
		r := ensureResult{Topic: topic, DLQ: topic + bqkafka.DeadLetterSuffix, Partition: len(parts), Retry: []string{}}
		for n := range tiers {
			r.Retry = append(r.Retry, bqkafka.RetryTopic(topic, n+1))
		}
		for _, name := range append(append([]string(nil), r.Retry...), r.DLQ) {
			if err := k.waitTopic(ctx, name, 30*time.Second); err != nil {
				return err
			}
		}
		results = append(results, r)
	}
	if *asJSON {
		return writeJSON(out, results)
	}
	for _, r := range results {
		fmt.Fprintf(out, "%s: %d partitions, retry topics [%s], dead-letter topic %s\n", r.Topic, r.Partition, strings.Join(r.Retry, ", "), r.DLQ)
	}
	return nil
}

// multiString collects a repeatable flag; each value may also be a
// comma-separated list.
type multiString []string

func (m *multiString) String() string { return strings.Join(*m, ",") }

func (m *multiString) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*m = append(*m, v)
		}
	}
	return nil
}
