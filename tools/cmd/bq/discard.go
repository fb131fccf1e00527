package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
)

// discardSuffix names the topic discarded dead letters are moved to:
// "<dlq>.discarded". They leave the DLQ's live region for good, and
// stay on the broker for as long as its retention keeps them.
const discardSuffix = ".discarded"

const dlqDiscardHelp = `Discards dead letters that should never be redriven: each selected dead
letter leaves the DLQ for the topic <dlq>.discarded (its dead_letter
block removed, as a redrive does) and a line is written to the record
file (--record, JSON lines: position, id, URN, reason). Dead letters not
selected stay, as they do with redrive.

It runs on the redrive machinery: the same selectors (--urn, --reason,
--since, --until), the same cursor (Kafka: the consumer group
bq-redrive.<dlq>, so "dlq peek" and "redrive" no longer see what was
discarded; Pulsar: the subscription, on which the dead letter is
acknowledged), the same one-run-at-a-time lock, and the same resumability:
interrupted (exit code 130), run it again. --dry-run reports what would
be discarded and writes nothing (no record file either).

A dead letter whose body is not an envelope (undecodable) or has an
unsupported schema version cannot be selected and stays.

` + connEnvHelp

const dlqDiscardExamples = `  bq dlq discard -b 127.0.0.1:9092 -q orders --urn urn:bq:orders:legacy --dry-run
  bq dlq discard -b 127.0.0.1:9092 -q orders --reason unknown_urn --until 720h --record discarded.jsonl`

func newDLQDiscardCmd() *cobra.Command {
	cmd := leaf("discard", "discard selected dead letters for good (with a record file and a dry run)", dlqDiscardHelp, dlqDiscardExamples)
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	queue := fs.StringP("queue", "q", "", "work queue; its DLQ is <queue>.dlq")
	dlq := fs.String("dlq", "", "dead-letter topic (overrides --queue)")
	var sel selectorFlags
	sel.register(fs)
	all := fs.Bool("all", false, "select every dead letter (required when no selector is given)")
	maxN := fs.Int("max", 0, "discard at most this many (0: no limit)")
	dry := fs.Bool("dry-run", false, "report what would be discarded; write and commit nothing")
	record := fs.String("record", "", "record file of the discarded dead letters (default discarded-<dlq>-<time>.jsonl)")
	group := fs.String("group", "", "Kafka consumer group holding the cursor (default bq-redrive.<dlq>)")
	sub := fs.String("subscription", "bq-redrive", "Pulsar subscription on the DLQ")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		topic := dlqName(*dlq, *queue)
		if topic == "" {
			return usagef("--queue or --dlq is required")
		}
		if sel == (selectorFlags{}) && !*all {
			return usagef("give a selector (--urn, --reason, --since, --until) or --all")
		}
		if *maxN < 0 {
			return usagef("--max must be >= 0")
		}
		selector, err := sel.build()
		if err != nil {
			return usagef("%v", err)
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		t, cursor, closeT, err := openRedrive(ctx, &cf, u, topic, *group, *sub)
		if err != nil {
			return err
		}
		defer closeT()
		grave := topic + discardSuffix
		if u.Kind == kindKafka && !*dry {
			if err := ensureLike(ctx, &cf, u, topic, grave); err != nil {
				return err
			}
		}
		opts := redriveOptions{selector: selector, target: grave, max: *maxN, dryRun: *dry}
		opts.cursor = *group
		if u.Kind == kindPulsar {
			opts.cursor = *sub
		}
		var rec *bufio.Writer
		path := *record
		if !*dry {
			if path == "" {
				path = fmt.Sprintf("discarded-%s-%s.jsonl", strings.NewReplacer("/", "_", ":", "_").Replace(topic), time.Now().UTC().Format("20060102T150405Z"))
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return fmt.Errorf("--record: %w", err)
			}
			defer f.Close()
			rec = bufio.NewWriter(f)
			enc := json.NewEncoder(rec)
			enc.SetEscapeHTML(false)
			var werr error
			opts.onEach = func(it redriveItem) {
				if it.Outcome == outcomeMoved && werr == nil {
					werr = enc.Encode(discardRecord{redriveItem: it, DLQ: topic, At: time.Now().UTC()})
				}
			}
			defer func() {
				if err := rec.Flush(); err != nil {
					fmt.Fprintf(errOut, "bq dlq discard: writing %s: %v\n", path, err)
				}
				_ = f.Sync()
			}()
		}
		report, runErr := redriveWith(ctx, t, topic, cursor, opts)
		report.verb = "discarded"
		if runErr != nil && ctx.Err() != nil {
			report.Interrupted, report.Failed = true, ""
		}
		if *asJSON {
			if err := writeJSON(out, report); err != nil {
				return err
			}
		} else if err := report.write(out); err != nil {
			return err
		}
		if path != "" && !*dry {
			fmt.Fprintf(errOut, "bq dlq discard: record of the discarded dead letters: %s\n", path)
		}
		if report.Interrupted {
			fmt.Fprintf(errOut, "bq dlq discard: interrupted; the run is resumable: run the same command again (cursor %q)\n", cursor)
			return errInterrupted
		}
		return runErr
	}
	return cmd
}

// discardRecord is one line of the record file.
type discardRecord struct {
	redriveItem
	DLQ string    `json:"dlq"`
	At  time.Time `json:"discarded_at"`
}

// ensureLike creates topic name, when missing, with the partition count
// of like.
func ensureLike(ctx context.Context, cf *connFlags, u brokerURL, like, name string) error {
	k, err := cf.kafka(ctx, u)
	if err != nil {
		return err
	}
	defer k.close()
	parts, err := k.partitions(ctx, like)
	if err != nil {
		return err
	}
	res, err := k.client.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{Topic: name, NumPartitions: len(parts), ReplicationFactor: -1}}})
	if err != nil {
		return fmt.Errorf("create %q: %w", name, err)
	}
	if e := res.Errors[name]; e != nil && !strings.Contains(e.Error(), "already exists") {
		return fmt.Errorf("create %q: %w", name, e)
	}
	return k.waitTopic(ctx, name, cf.timeout)
}
