package main

import (
	"fmt"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"io"
	"strconv"
	"strings"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
)

// dlqFlags are the flags of the commands that read a dead-letter topic:
// the connection flags, --topic (the work queue, or the DLQ itself) and
// --dlq.
type dlqFlags struct {
	connFlags
	queue, dlq *string
}

func (f *dlqFlags) register(fs *pflag.FlagSet) {
	f.connFlags.register(fs)
	f.queue = topicFlag(fs, dlqTopicUsage)
	f.dlq = fs.String("dlq", "", "dead-letter topic (overrides --topic)")
}

// topic returns the dead-letter topic the flags name (dlqName), or a usage
// error when neither --topic nor --dlq is given.
func (f *dlqFlags) topic() (string, error) {
	topic := dlqName(*f.dlq, *f.queue)
	if topic == "" {
		return "", usagef("--topic (-t) or --dlq is required")
	}
	return topic, nil
}

// dlqName resolves --dlq / --topic to the dead-letter topic: --dlq, else
// a --topic that already ends in ".dlq", else <topic>.dlq.
func dlqName(dlq, queue string) string {
	if dlq != "" {
		return dlq
	}
	if strings.HasSuffix(queue, bqkafka.DeadLetterSuffix) {
		return queue // the DLQ named with -t
	}
	if queue == "" {
		return ""
	}
	return queue + ".dlq"
}

// dlqRegion says which part of a Kafka DLQ the inspection commands read:
// by default its live region, from the redrive cursor to the end (records
// before the cursor were moved, or copied to the tail, by a redrive).
type dlqRegion struct {
	all   bool
	group string
}

func (d *dlqRegion) register(fs *pflag.FlagSet) {
	fs.BoolVar(&d.all, "all", false, "Kafka: read the whole DLQ topic, with the records a redrive already moved or copied to the tail")
	fs.StringVar(&d.group, "group", "", "Kafka: the redrive cursor the DLQ's live region starts at (default bq-redrive.<dlq>)")
}

// apply makes a Kafka scanner of topic start at the cursor.
func (d dlqRegion) apply(sc scanner, topic string) scanner {
	ks, ok := sc.(kafkaScanner)
	if !ok || d.all {
		return sc
	}
	ks.cursor = d.group
	if ks.cursor == "" {
		ks.cursor = bqkafka.RedriveCursor(topic)
	}
	return ks
}

const dlqRegionHelp = `On Kafka records are never deleted, so a redrive keeps its progress in a
cursor (the consumer group bq-redrive.<dlq>, see "bq redrive -h"): the
DLQ's content is its live region, from the cursor to the end. Records
before the cursor were moved, or copied to the tail because they stay.
This command reads the live region (all of the topic before any redrive);
--all reads the whole topic, --group another cursor.
`

// ageBucket names the age bucket of a dead letter of age d.
func ageBucket(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "<1m"
	case d < time.Hour:
		return "1m-1h"
	case d < 24*time.Hour:
		return "1h-1d"
	case d < 7*24*time.Hour:
		return "1d-7d"
	default:
		return ">=7d"
	}
}

// ageBuckets is the display order of the age buckets.
var ageBuckets = []string{"<1m", "1m-1h", "1h-1d", "1d-7d", ">=7d"}

// dlqStats are the counts of "bq dlq stats".
type dlqStats struct {
	Topic         string         `json:"topic"`
	Total         int            `json:"total"`
	ByReason      map[string]int `json:"by_reason"`
	ByURN         map[string]int `json:"by_urn"`
	ByOriginQueue map[string]int `json:"by_original_queue"`
	ByAge         map[string]int `json:"by_age"`
	Undecodable   int            `json:"undecodable"`
}

func newDLQStats(topic string) *dlqStats {
	return &dlqStats{Topic: topic, ByReason: map[string]int{}, ByURN: map[string]int{}, ByOriginQueue: map[string]int{}, ByAge: map[string]int{}}
}

// add counts one record. A record without a dead_letter block (a
// version-gated message, CONTRACT.md 4.3) counts under reason "(none)"; its age
// is taken from the record time. Undecodable bodies count under URN
// "(undecodable)".
func (s *dlqStats) add(r *record, now time.Time) {
	s.Total++
	failedAt := r.Time
	reason, origin := "(none)", "(unknown)"
	if dl, ok := wire.DeadLetterOf(r.Value); ok {
		reason = dl.Reason
		if dl.OriginalQueue != "" {
			origin = dl.OriginalQueue
		}
		if dl.FailedAt > 0 {
			failedAt = time.UnixMilli(dl.FailedAt)
		}
	}
	urn := "(undecodable)"
	if env, err := babelqueue.Decode(r.Value); err == nil {
		urn = env.URN()
		if origin == "(unknown)" && env.Meta.Queue != "" {
			origin = env.Meta.Queue
		}
	} else {
		s.Undecodable++
		if v, ok := r.header(wire.HeaderJob); ok && v != "" {
			urn = v + " (undecodable)"
		}
	}
	s.ByReason[reason]++
	s.ByURN[urn]++
	s.ByOriginQueue[origin]++
	s.ByAge[ageBucket(now.Sub(failedAt))]++
}

// write prints the stats as tables.
func (s *dlqStats) write(w io.Writer) error {
	fmt.Fprintf(w, "%s: %s (%d undecodable)\n", s.Topic, nOf(s.Total, "dead letter", ""), s.Undecodable)
	for _, sec := range []struct {
		title string
		m     map[string]int
	}{{"REASON", s.ByReason}, {"URN", s.ByURN}, {"ORIGINAL QUEUE", s.ByOriginQueue}} {
		fmt.Fprintln(w)
		var rows [][]string
		for _, r := range sortedCounts(sec.m) {
			rows = append(rows, []string{r.Key, strconv.Itoa(r.Count)})
		}
		if err := writeTable(w, []string{sec.title, "COUNT"}, rows); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	var rows [][]string
	for _, b := range ageBuckets {
		rows = append(rows, []string{b, strconv.Itoa(s.ByAge[b])})
	}
	return writeTable(w, []string{"AGE", "COUNT"}, rows)
}

const dlqStatsHelp = `Counts the dead letters of a dead-letter queue by reason, URN, original
queue and age (since dead_letter.failed_at, else the record time). Nothing
is consumed: Kafka partitions are read with plain partition readers up to
the high-water mark (nothing joined, nothing committed); Pulsar is read
with a Reader from the earliest message (no subscription).

` + dlqRegionHelp + `
` + connEnvHelp

const dlqStatsExamples = `  bq dlq stats --broker kafka://127.0.0.1:9092 --topic orders
  bq dlq stats --broker pulsar://127.0.0.1:6650 --dlq orders.dlq --json`

func newDLQStatsCmd() *cobra.Command {
	cmd := leaf("stats", "count dead letters by reason, URN, original queue and age", dlqStatsHelp, dlqStatsExamples)
	fs := cmd.Flags()
	var cf dlqFlags
	cf.register(fs)
	var region dlqRegion
	region.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		topic, err := cf.topic()
		if err != nil {
			return err
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		sc, err := cf.openScanner(ctx, u)
		if err != nil {
			return err
		}
		defer sc.Close()
		sc = region.apply(sc, topic)
		st := newDLQStats(topic)
		now := time.Now()
		if err := sc.scan(ctx, topic, func(r *record) error { st.add(r, now); return nil }); err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, st)
		}
		return st.write(out)
	}
	return cmd
}

const dlqPeekHelp = `Shows dead letters: where each record sits, its headers, its dead_letter
block and its envelope. Nothing is consumed (see "bq dlq stats -h").
Filters select what is shown; --limit bounds the output.

deliveries is how many times the message was delivered before it was
dead-lettered, the first delivery included: the dead_letter block's
"attempts" field, which --json prints under that wire name. A handler saw
the envelope's attempts go 0, 1, ... deliveries-1 (the retries before
each delivery); the envelope printed below carries the final count.

` + dlqRegionHelp + `
` + connEnvHelp

const dlqPeekExamples = `  bq dlq peek --broker kafka://127.0.0.1:9092 --topic orders --limit 5
  bq dlq peek --broker kafka://127.0.0.1:9092 --topic orders --reason poison --json
  bq dlq peek --broker pulsar://127.0.0.1:6650 --dlq orders.dlq --urn urn:bq:orders:created`

func newDLQPeekCmd() *cobra.Command {
	cmd := leaf("peek", "show dead letters: envelope, dead_letter block and headers", dlqPeekHelp, dlqPeekExamples)
	fs := cmd.Flags()
	var cf dlqFlags
	cf.register(fs)
	limit := fs.IntP("limit", "n", 20, "show at most this many dead letters (0: all)")
	var region dlqRegion
	region.register(fs)
	var sel selectorFlags
	sel.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per dead letter")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		topic, err := cf.topic()
		if err != nil {
			return err
		}
		if *limit < 0 {
			return usagef("--limit %d: must be >= 0", *limit)
		}
		selector, err := sel.build()
		if err != nil {
			return usagef("%v", err)
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		sc, err := cf.openScanner(ctx, u)
		if err != nil {
			return err
		}
		defer sc.Close()
		sc = region.apply(sc, topic)
		shown := 0
		err = sc.scan(ctx, topic, func(r *record) error {
			if !selector.matchRecord(r) {
				return nil
			}
			v := r.view()
			if *asJSON {
				if err := writeJSONLine(out, v); err != nil {
					return err
				}
			} else {
				writeRecordText(out, v)
			}
			shown++
			if *limit > 0 && shown >= *limit {
				return errStop
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(errOut, "%s shown\n", nOf(shown, "dead letter", ""))
		}
		return nil
	}
	return cmd
}

// writeRecordText prints one record for people.
func writeRecordText(w io.Writer, v recordView) {
	where := v.Topic
	if v.Partition != nil {
		where = fmt.Sprintf("%s/%d@%d", v.Topic, *v.Partition, *v.Offset)
	} else if v.MessageID != "" {
		where = fmt.Sprintf("%s@%s", v.Topic, v.MessageID)
	}
	fmt.Fprintf(w, "--- %s  %s\n", where, v.Time.Format(time.RFC3339Nano))
	if v.Key != "" {
		fmt.Fprintf(w, "key: %s\n", v.Key)
	}
	if v.URN != "" {
		fmt.Fprintf(w, "urn: %s  id: %s\n", v.URN, v.ID)
	}
	if v.DecodeError != "" {
		fmt.Fprintf(w, "decode error: %s\n", v.DecodeError)
	}
	if dl := v.DeadLetter; dl != nil {
		errText := "null"
		if dl.Error != nil {
			errText = strconv.Quote(*dl.Error)
		}
		fmt.Fprintf(w, "dead_letter: reason=%s original_queue=%s deliveries=%d failed_at=%s lang=%s error=%s\n",
			dl.Reason, dl.OriginalQueue, dl.Attempts, time.UnixMilli(dl.FailedAt).UTC().Format(time.RFC3339), dl.Lang, errText)
	}
	if len(v.Headers) > 0 {
		parts := make([]string, 0, len(v.Headers))
		for _, h := range v.Headers {
			parts = append(parts, h.Key+"="+h.Value)
		}
		fmt.Fprintf(w, "headers: %s\n", strings.Join(parts, " "))
	}
	switch {
	case v.Envelope != nil:
		fmt.Fprintf(w, "%s\n", v.Envelope)
	case v.Body != "":
		fmt.Fprintf(w, "body: %s\n", v.Body)
	default:
		fmt.Fprintf(w, "body (base64): %s\n", v.BodyBase64)
	}
}
