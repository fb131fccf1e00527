package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
)

const tailHelp = `Prints the messages of a queue as they arrive: where each sits, its
headers and its decoded envelope. Nothing is consumed: Kafka partitions are
read with plain partition readers (no consumer group, no commit), Pulsar
with a Reader (no subscription).

Where to start: the end (default), --from-start, --since (a time or a
duration ago: the first record at or after it), or, on Kafka, --offset N
(in --partition P, or in every partition). --partition reads one Kafka
partition only. --no-follow (or --follow=false) stops at the end.

An --offset past the end of every partition read (beyond the offset the
next record will get) is an error, exit code 1; past the end of some of
them, a note on stderr names those, which are read from their end.

--format prints each message with a Go template over the fields Topic,
Partition, Offset, MessageID, Time, Key, URN, ID, Headers, Envelope,
Body, DeadLetter (e.g. '{{.Offset}} {{.URN}}'), or with the placeholders
{topic} {partition} {offset} {time} {key} {urn} {id} {value} {headers}.

` + connEnvHelp

const tailExamples = `  bq tail -b 127.0.0.1:9092 -t orders
  bq tail -b 127.0.0.1:9092 -t orders --partition 2 --offset 1500 --no-follow
  bq tail -b 127.0.0.1:9092 -t orders --since 15m --format '{partition}/{offset} {urn} {key}'
  bq tail -b 127.0.0.1:9092 -t orders.dlq --from-start --no-follow --json
  bq tail -b pulsar://127.0.0.1:6650 -t orders --since 2026-01-02T15:04:05Z`

// tailStart says where a tail starts.
type tailStart struct {
	fromStart bool
	since     time.Time
	offset    int64 // -1: not given
	partition int   // -1: every partition
}

func newTailCmd() *cobra.Command {
	cmd := leaf("tail", "print decoded envelopes and headers of a queue, following", tailHelp, tailExamples)
	fs := cmd.Flags()
	var cf connFlags
	cf.register(fs)
	queue := topicFlag(fs, "topic to print: a work topic, a retry tier or a DLQ")
	fromStart := fs.Bool("from-start", false, "start at the oldest message instead of the end")
	since := fs.String("since", "", "start at the first message at or after this time (RFC 3339, or a duration ago such as 15m)")
	offset := fs.Int64("offset", -1, "Kafka: start at this offset")
	partition := fs.IntP("partition", "P", -1, "Kafka: read this partition only")
	follow := fs.BoolP("follow", "f", true, "keep printing new messages until interrupted")
	noFollow := fs.Bool("no-follow", false, "stop at the end (same as --follow=false)")
	limit := fs.IntP("limit", "n", 0, "stop after this many messages (0: no limit)")
	format := fs.String("format", "", "Go template or {placeholders} for each message")
	asJSON := fs.Bool("json", false, "print one JSON object per message")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		if *queue == "" {
			return usagef("--topic (-t) is required")
		}
		if *limit < 0 {
			return usagef("--limit must be >= 0")
		}
		if *noFollow {
			*follow = false
		}
		start := tailStart{fromStart: *fromStart, offset: *offset, partition: *partition}
		starts := 0
		for _, set := range []bool{*fromStart, *since != "", *offset >= 0} {
			if set {
				starts++
			}
		}
		if starts > 1 {
			return usagef("--from-start, --since and --offset are exclusive")
		}
		if *since != "" {
			t, err := parseWhen(*since, time.Now())
			if err != nil {
				return usagef("--since %v", err)
			}
			start.since = t
		}
		if !*follow && starts == 0 {
			typed := "--follow=false"
			if *noFollow {
				typed = "--no-follow"
			}
			return usagef("%s needs a start: tail starts at the end, so there would be nothing to print; add --from-start, --since or --offset", typed)
		}
		if *asJSON && *format != "" {
			return usagef("--json and --format are exclusive")
		}
		var printRec func(recordView) error
		switch {
		case *asJSON:
			printRec = func(v recordView) error { return writeJSONLine(out, v) }
		case *format != "":
			f, err := parseRecordFormat(*format)
			if err != nil {
				return usagef("--format: %v", err)
			}
			printRec = func(v recordView) error { return f(out, v) }
		default:
			printRec = func(v recordView) error { writeRecordText(out, v); return nil }
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		if u.Kind == kindPulsar && (*offset >= 0 || *partition >= 0) {
			return usagef("--offset and --partition apply to Kafka only")
		}
		n := 0
		emit := func(r *record) error {
			if err := printRec(r.view()); err != nil {
				return err
			}
			n++
			if *limit > 0 && n >= *limit {
				return errStop
			}
			return nil
		}
		if u.Kind == kindKafka {
			k, kerr := cf.kafka(ctx, u)
			if kerr != nil {
				return kerr
			}
			defer k.close()
			err = tailKafka(ctx, k, *queue, start, *follow, errOut, emit)
		} else {
			p, perr := cf.pulsar(ctx, u)
			if perr != nil {
				return perr
			}
			defer p.client.Close()
			err = tailPulsar(ctx, p, *queue, start, *follow, emit)
		}
		if errors.Is(err, errStop) || (err != nil && ctx.Err() != nil) {
			return nil // a limit reached, or Ctrl-C: the normal ends of a tail
		}
		return err
	}
	return cmd
}

// parseRecordFormat compiles --format: a Go template when it holds "{{",
// else {placeholders}. A newline ends each message unless the format ends
// with one.
func parseRecordFormat(f string) (func(io.Writer, recordView) error, error) {
	if !strings.HasSuffix(f, "\n") {
		f += "\n"
	}
	if strings.Contains(f, "{{") {
		t, err := template.New("format").Option("missingkey=error").Parse(f)
		if err != nil {
			return nil, err
		}
		return func(w io.Writer, v recordView) error { return t.Execute(w, templateView(v)) }, nil
	}
	known := map[string]bool{"topic": true, "partition": true, "offset": true, "time": true, "key": true, "urn": true, "id": true, "value": true, "headers": true, "message_id": true}
	for rest := f; ; {
		i := strings.Index(rest, "{")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "}")
		if j < 0 {
			break
		}
		if name := rest[i+1 : i+j]; !known[name] {
			return nil, fmt.Errorf("unknown placeholder {%s} (want topic, partition, offset, time, key, urn, id, value, headers, message_id)", name)
		}
		rest = rest[i+j+1:]
	}
	return func(w io.Writer, v recordView) error {
		tv := templateView(v)
		hs := make([]string, 0, len(v.Headers))
		for _, h := range v.Headers {
			hs = append(hs, h.Key+"="+h.Value)
		}
		r := strings.NewReplacer("{topic}", v.Topic, "{partition}", tv.PartitionText, "{offset}", tv.OffsetText,
			"{time}", v.Time.Format(time.RFC3339Nano), "{key}", v.Key, "{urn}", v.URN, "{id}", v.ID, "{value}", tv.Value,
			"{headers}", strings.Join(hs, " "), "{message_id}", v.MessageID)
		_, err := io.WriteString(w, r.Replace(f))
		return err
	}, nil
}

// formatView is what a --format template sees.
type formatView struct {
	recordView
	Partition     int
	Offset        int64
	PartitionText string
	OffsetText    string
	Value         string
	Envelope      string
}

func templateView(v recordView) formatView {
	f := formatView{recordView: v, Partition: -1, Offset: -1}
	if v.Partition != nil {
		f.Partition, f.Offset = *v.Partition, *v.Offset
		f.PartitionText, f.OffsetText = strconv.Itoa(*v.Partition), strconv.FormatInt(*v.Offset, 10)
	}
	switch {
	case v.Envelope != nil:
		f.Value, f.Envelope = string(v.Envelope), string(v.Envelope)
	case v.Body != "":
		f.Value = v.Body
	default:
		f.Value = "base64:" + v.BodyBase64
	}
	return f
}

// tailKafka reads the partitions concurrently; one goroutine per
// partition feeds a bounded channel that the caller's goroutine prints.
//
// An --offset beyond a partition's end (its next offset) is an error
// when it is beyond the end of every partition read; otherwise a note on
// warn names the partitions it is beyond, which start at their end.
func tailKafka(ctx context.Context, k *kafkaConn, topic string, st tailStart, follow bool, warn io.Writer, emit func(*record) error) error {
	parts, err := k.partitions(ctx, topic)
	if err != nil {
		return err
	}
	if st.partition >= 0 {
		found := false
		for _, p := range parts {
			found = found || p == st.partition
		}
		if !found {
			return usagef("--partition %d: %q has partitions 0-%d", st.partition, topic, len(parts)-1)
		}
		parts = []int{st.partition}
	}
	first, next, err := k.bounds(ctx, topic, parts)
	if err != nil {
		return err
	}
	if st.offset >= 0 {
		var past []string
		for _, p := range parts {
			if st.offset > next[p] {
				past = append(past, fmt.Sprintf("partition %d ends at %d", p, next[p]))
			}
		}
		switch {
		case len(past) == len(parts):
			return fmt.Errorf("--offset %d is past the end of %q (%s): no record has that offset yet", st.offset, topic, strings.Join(past, ", "))
		case len(past) > 0:
			fmt.Fprintf(warn, "bq tail: --offset %d is past the end of %s of %q; %s from its end\n", st.offset, strings.Join(past, ", "), topic, map[bool]string{true: "it reads", false: "they read"}[len(past) == 1])
		}
	}
	starts := make(map[int]int64, len(parts))
	for _, p := range parts {
		switch {
		case st.fromStart:
			starts[p] = first[p]
		case st.offset >= 0:
			starts[p] = min(max(st.offset, first[p]), next[p])
		default:
			starts[p] = next[p]
		}
	}
	if !st.since.IsZero() {
		if starts, err = k.offsetsAt(ctx, topic, parts, st.since, next); err != nil {
			return err
		}
	}
	if !follow {
		for _, p := range parts {
			if err := k.readRange(ctx, topic, p, starts[p], next[p], func(m kafkago.Message) error { return emit(kafkaRecord(m)) }); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recs := make(chan *record, 64)
	errs := make(chan error, len(parts))
	for _, p := range parts {
		go func(p int, start int64) {
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: k.brokers, Topic: topic, Partition: p, Dialer: k.dialer(), MinBytes: 1, MaxBytes: 4 << 20, MaxWait: 500 * time.Millisecond})
			defer r.Close()
			if err := r.SetOffset(start); err != nil {
				errs <- err
				return
			}
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					errs <- fmt.Errorf("read %s/%d: %w", topic, p, err)
					return
				}
				select {
				case recs <- kafkaRecord(m):
				case <-ctx.Done():
					errs <- ctx.Err()
					return
				}
			}
		}(p, starts[p])
	}
	var runErr error
	stopped := 0
	for runErr == nil {
		select {
		case r := <-recs:
			runErr = emit(r)
		case err := <-errs:
			stopped++
			runErr = err
		}
	}
	cancel()
	// Wait for every partition goroutine to stop.
	for ; stopped < len(parts); stopped++ {
		<-errs
	}
	return runErr
}

// offsetsAt returns, per partition, the first offset whose timestamp is
// at or after t (the end when none is).
func (k *kafkaConn) offsetsAt(ctx context.Context, topic string, parts []int, t time.Time, next map[int]int64) (map[int]int64, error) {
	reqs := make([]kafkago.OffsetRequest, 0, len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafkago.TimeOffsetOf(p, t))
	}
	res, err := k.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("offsets of %q at %s: %w", topic, t.Format(time.RFC3339), err)
	}
	out := make(map[int]int64, len(parts))
	for _, p := range parts {
		out[p] = next[p]
	}
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("offset of %s/%d at %s: %w", topic, po.Partition, t.Format(time.RFC3339), po.Error)
		}
		for off := range po.Offsets { // offset -> timestamp; -1 when none is at or after t
			if off >= 0 {
				out[po.Partition] = off
			}
		}
	}
	return out, nil
}

// tailPulsar reads with a Reader: from the earliest message, a time, or
// the end.
func tailPulsar(ctx context.Context, p *pulsarConn, topic string, st tailStart, follow bool, emit func(*record) error) error {
	start := pulsar.LatestMessageID()
	if st.fromStart || !st.since.IsZero() {
		start = pulsar.EarliestMessageID()
	}
	rd, err := p.client.CreateReader(pulsar.ReaderOptions{Topic: p.topic(topic), StartMessageID: start})
	if err != nil {
		return fmt.Errorf("pulsar reader on %q: %w", topic, err)
	}
	defer rd.Close()
	if !st.since.IsZero() {
		if err := rd.SeekByTime(st.since); err != nil {
			return fmt.Errorf("seek %q to %s: %w", topic, st.since.Format(time.RFC3339), err)
		}
	}
	for {
		if !follow && !rd.HasNext() {
			return nil
		}
		m, err := rd.Next(ctx)
		if err != nil {
			return err
		}
		if err := emit(pulsarRecord(m)); err != nil {
			return err
		}
	}
}
