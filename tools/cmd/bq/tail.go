package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	kafkago "github.com/segmentio/kafka-go"
)

const tailHelp = `Prints the messages of a queue as they arrive: where each sits, its
headers and its decoded envelope. Nothing is consumed: Kafka partitions are
read with plain partition readers (no consumer group, no commit), Pulsar
with a Reader (no subscription). By default it starts at the end; --from-start
prints what is there first. --follow=false stops at the end.

` + connEnvHelp

const tailExamples = `  bq tail --broker kafka://127.0.0.1:9092 --queue orders
  bq tail --broker kafka://127.0.0.1:9092 --queue orders.dlq --from-start --follow=false --json
  bq tail --broker pulsar://127.0.0.1:6650 --queue orders --from-start`

func runTail(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := leafFlags("bq tail", "bq tail --broker URL --queue Q [--from-start] [--follow=false] [--limit N] [--json]", tailHelp, tailExamples, errOut)
	var cf connFlags
	cf.register(fs)
	queue := fs.String("queue", "", "queue (topic) to print")
	fromStart := fs.Bool("from-start", false, "start at the oldest message instead of the end")
	follow := fs.Bool("follow", true, "keep printing new messages until interrupted")
	limit := fs.Int("limit", 0, "stop after this many messages (0: no limit)")
	asJSON := fs.Bool("json", false, "print one JSON object per message")
	if err := parseLeaf(fs, args, errOut); err != nil {
		return err
	}
	if *queue == "" {
		return usageErrorf(fs, errOut, "--queue is required")
	}
	if *limit < 0 {
		return usageErrorf(fs, errOut, "--limit must be >= 0")
	}
	if !*follow && !*fromStart {
		return usageErrorf(fs, errOut, "--follow=false needs --from-start (there is nothing before the end)")
	}
	u, err := cf.url()
	if err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	if err := cf.check(u); err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	n := 0
	emit := func(r *record) error {
		if *asJSON {
			if err := writeJSONLine(out, r.view()); err != nil {
				return err
			}
		} else {
			writeRecordText(out, r.view())
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
		err = tailKafka(ctx, k, *queue, *fromStart, *follow, emit)
	} else {
		p, perr := cf.pulsar(ctx, u)
		if perr != nil {
			return perr
		}
		defer p.client.Close()
		err = tailPulsar(ctx, p, *queue, *fromStart, *follow, emit)
	}
	if errors.Is(err, errStop) || (err != nil && ctx.Err() != nil) {
		return nil
	}
	return err
}

// tailKafka reads every partition concurrently; one goroutine per
// partition feeds a bounded channel that the caller's goroutine prints.
func tailKafka(ctx context.Context, k *kafkaConn, topic string, fromStart, follow bool, emit func(*record) error) error {
	parts, err := k.partitions(ctx, topic)
	if err != nil {
		return err
	}
	first, next, err := k.bounds(ctx, topic, parts)
	if err != nil {
		return err
	}
	if !follow {
		for _, p := range parts {
			if err := k.readRange(ctx, topic, p, first[p], next[p], func(m kafkago.Message) error { return emit(kafkaRecord(m)) }); err != nil {
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
		start := next[p]
		if fromStart {
			start = first[p]
		}
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
		}(p, start)
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

// tailPulsar reads with a Reader: from the earliest message or the end.
func tailPulsar(ctx context.Context, p *pulsarConn, topic string, fromStart, follow bool, emit func(*record) error) error {
	start := pulsar.LatestMessageID()
	if fromStart {
		start = pulsar.EarliestMessageID()
	}
	rd, err := p.client.CreateReader(pulsar.ReaderOptions{Topic: p.topic(topic), StartMessageID: start})
	if err != nil {
		return fmt.Errorf("pulsar reader on %q: %w", topic, err)
	}
	defer rd.Close()
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
