package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/babelqueue/babelqueue-go/core/redrive"
)

const dlqDiscardHelp = `Discards dead letters that should never be redriven: each selected dead
letter is settled in the DLQ (Kafka: the redrive cursor passes it;
Pulsar: the redrive subscription acknowledges it) and written nowhere.
Each one is written, body, key and headers included, to the record file
(--record, JSON lines), so nothing leaves the operator's view. Dead
letters not selected stay, as they do with redrive.

Selectors: the redrive ones (--urn, --reason, --since, --until, or --all
for every envelope), and two for the dead letters no redrive can ever
move, which those selectors never see: --poison (the body is not an
envelope) and --unsupported-version (the bq-schema-version header or
meta.schema_version is not 1). Given alone, they discard only those.

It runs on the redrive machinery: the same cursor (Kafka: the consumer
group bq-redrive.<dlq>, so "dlq peek" and "redrive" no longer see what
was discarded; Pulsar: the subscription), the same one-run-at-a-time lock
and the same resumability: interrupted (exit code 130), run it again.
--dry-run reports what it would discard and writes and settles nothing
(no record file either).

` + connEnvHelp

const dlqDiscardExamples = `  bq dlq discard -b 127.0.0.1:9092 -t orders --urn urn:bq:orders:legacy --dry-run
  bq dlq discard -b 127.0.0.1:9092 -t orders --poison --unsupported-version --record unreadable.jsonl
  bq dlq discard -b 127.0.0.1:9092 -t orders --reason unknown_urn --until 720h --record discarded.jsonl`

func newDLQDiscardCmd() *cobra.Command {
	cmd := leaf("discard", "discard selected dead letters for good (with a record file and a dry run)", dlqDiscardHelp, dlqDiscardExamples)
	fs := cmd.Flags()
	var cf dlqFlags
	cf.register(fs)
	var sel selectorFlags
	sel.register(fs)
	all := fs.Bool("all", false, "select every dead letter that is an envelope (required when no selector is given)")
	poison := fs.Bool("poison", false, "also select the dead letters whose body is not an envelope")
	unsupported := fs.Bool("unsupported-version", false, "also select the dead letters with a schema version other than 1")
	maxN := fs.Int("max", 0, "discard at most this many (0: no limit)")
	dry := fs.Bool("dry-run", false, "report what would be discarded; write and settle nothing")
	record := fs.String("record", "", "record file of the discarded dead letters (default discarded-<dlq>-<time>.jsonl)")
	group := fs.String("group", "", "Kafka consumer group holding the cursor (default bq-redrive.<dlq>)")
	sub := fs.String("subscription", "bq-redrive", "Pulsar subscription on the DLQ")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		topic, err := cf.topic()
		if err != nil {
			return err
		}
		envelopes := sel != (selectorFlags{}) || *all
		if !envelopes && !*poison && !*unsupported {
			return usagef("give a selector (--urn, --reason, --since, --until, --poison, --unsupported-version) or --all")
		}
		if *maxN < 0 {
			return usagef("--max must be >= 0")
		}
		selector, err := sel.build()
		if err != nil {
			return usagef("%v", err)
		}
		selector.none = !envelopes
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		t, cursor, closeT, err := openRedrive(ctx, &cf.connFlags, u, topic, *group, *sub)
		if err != nil {
			return err
		}
		defer closeT()
		opts := redriveOptions{selector: selector, max: *maxN, dryRun: *dry, discard: true, undecodable: *poison, unsupported: *unsupported}
		opts.cursor = *group
		if u.Kind == kindPulsar {
			opts.cursor = *sub
		}
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
			rec := bufio.NewWriter(f)
			enc := json.NewEncoder(rec)
			enc.SetEscapeHTML(false)
			var werr error
			opts.onEach = func(v redriveItem, it redrive.Item) {
				if it.Outcome == redrive.Discarded && werr == nil {
					werr = enc.Encode(newDiscardRecord(v, it, topic, time.Now().UTC()))
				}
			}
			defer func() {
				if err := rec.Flush(); err != nil {
					fmt.Fprintf(errOut, "bq dlq discard: writing %s: %v\n", path, err)
				}
				_ = f.Sync()
				if werr != nil {
					fmt.Fprintf(errOut, "bq dlq discard: writing %s: %v\n", path, werr)
				}
			}()
		}
		report, runErr := redriveWith(ctx, t, topic, cursor, opts)
		report.verb = "discarded"
		if runErr != nil && ctx.Err() != nil {
			report.Interrupted, report.Failed = true, ""
		}
		if runErr != nil && !report.Interrupted && report.Examined == 0 && !*asJSON {
			return runErr // nothing examined: the error alone, no table of zeros
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

// discardRecord is one line of the record file: what the report says of
// the dead letter, and the dead letter itself. Body holds the body when
// it is valid UTF-8, BodyBase64 otherwise; Key is base64 (JSON's []byte).
type discardRecord struct {
	redriveItem
	DLQ        string            `json:"dlq"`
	At         time.Time         `json:"discarded_at"`
	Body       *string           `json:"body,omitempty"`
	BodyBase64 []byte            `json:"body_base64,omitempty"`
	Key        []byte            `json:"key,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
}

func newDiscardRecord(v redriveItem, it redrive.Item, dlq string, at time.Time) discardRecord {
	r := discardRecord{redriveItem: v, DLQ: dlq, At: at, Key: it.Key, Headers: it.Headers}
	if utf8.ValidString(it.Body) {
		body := it.Body
		r.Body = &body
	} else {
		r.BodyBase64 = []byte(it.Body)
	}
	return r
}
