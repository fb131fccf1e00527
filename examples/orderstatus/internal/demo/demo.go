package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
	"github.com/segmentio/kafka-go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Config configures Run.
type Config struct {
	// Brokers of a real cluster; empty runs the embedded broker. On a real
	// cluster the topics and the group get a unique suffix per run, and the
	// topics are deleted at the end.
	Brokers []string
	// Out receives the readable summary (default os.Stdout).
	Out io.Writer
	// Log receives the processor's and the broker's logs (default: errors
	// only, to os.Stderr).
	Log *slog.Logger
	// Timeout bounds the whole run (default 55s).
	Timeout time.Duration
	// OutageFor is how long the store is held down in the outage phase
	// (default 600ms; the backoffs add up to 1.5s before the last attempt).
	OutageFor time.Duration
}

// The retry settings of the demo: short, so that the run ends in seconds.
const (
	demoAttempts = 6
	demoMinDelay = 100 * time.Millisecond
	demoMaxDelay = 400 * time.Millisecond
)

// Report is what Run found.
type Report struct {
	Accounting
	// Orders is the projection at the end.
	Orders []orderstatus.Order
	// Retries and DeadLetterCounts are the OpenTelemetry counters by reason.
	Retries, DeadLetterCounts map[string]int64
	// Want is what the script predicted.
	Want expectation
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// Run runs the demo and prints its summary to cfg.Out. The error is non-nil
// when the run could not complete (a broker, the store, the processor failed,
// or the records did not settle before the timeout); a completed run with
// lost records returns the report and an error saying so.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 55 * time.Second
	}
	if cfg.OutageFor <= 0 {
		cfg.OutageFor = 600 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	out := cfg.Out

	dir, err := os.MkdirTemp("", "orderstatus-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	s := orderstatus.Settings{
		EventsTopic: orderstatus.DefaultEventsTopic, RetryTopic: orderstatus.DefaultRetryTopic,
		DeadLetterTopic: orderstatus.DefaultDeadLetterTopic, GroupID: orderstatus.DefaultGroupID,
		StorePath: filepath.Join(dir, "orderstatus.db"),
		Attempts:  demoAttempts, MinDelay: demoMinDelay, MaxDelay: demoMaxDelay,
	}
	parts := map[string]int{s.EventsTopic: 3, s.RetryTopic: 3, s.DeadLetterTopic: 1}
	if len(cfg.Brokers) == 0 {
		b, err := devkafka.Start(
			devkafka.WithTopics(3, s.EventsTopic, s.RetryTopic),
			devkafka.WithTopics(1, s.DeadLetterTopic),
			devkafka.WithLogger(cfg.Log))
		if err != nil {
			return nil, fmt.Errorf("starting the embedded broker: %w", err)
		}
		defer b.Close()
		s.Brokers = b.Addrs()
		fmt.Fprintf(out, "broker: embedded Kafka-protocol broker (kfake) on %s\n", s.Brokers[0])
	} else {
		suffix := "-" + runID()
		s.Brokers = cfg.Brokers
		s.EventsTopic += suffix
		s.RetryTopic += suffix
		s.DeadLetterTopic += suffix
		s.GroupID += suffix
		parts = map[string]int{s.EventsTopic: 3, s.RetryTopic: 3, s.DeadLetterTopic: 1}
		if err := createTopics(ctx, s.Brokers, parts); err != nil {
			return nil, err
		}
		defer deleteTopics(s.Brokers, parts)
		fmt.Fprintf(out, "broker: Kafka cluster at %v\n", s.Brokers)
	}
	fmt.Fprintf(out, "topics: %s (3 partitions), %s (3 partitions), %s (1 partition); group %s\n",
		s.EventsTopic, s.RetryTopic, s.DeadLetterTopic, s.GroupID)
	fmt.Fprintf(out, "retries: RETRY_ATTEMPTS=%d RETRY_MIN_DELAY=%v RETRY_MAX_DELAY=%v\n\n", s.Attempts, s.MinDelay, s.MaxDelay)

	sqlite, err := orderstatus.OpenSQLite(ctx, s.StorePath)
	if err != nil {
		return nil, err
	}
	defer sqlite.Close()
	store := &outageStore{Store: sqlite}

	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())

	producer := orderstatus.NewKafkaProducer(s.Brokers)
	defer producer.Close()
	p, err := orderstatus.NewProjector(s, store, producer,
		orderstatus.WithMeterProvider(meters), orderstatus.WithLogger(cfg.Log))
	if err != nil {
		return nil, err
	}

	// The processor, exactly as cmd/orderstatus runs it.
	procCtx, stopProc := context.WithCancel(ctx)
	consumer := orderstatus.NewReader(s)
	var (
		procWG  sync.WaitGroup
		procErr error
	)
	procWG.Add(1)
	go func() {
		defer procWG.Done()
		procErr = orderstatus.Run(procCtx, p, consumer)
		if procErr != nil {
			cancel() // nothing will settle any more
		}
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return procErr
		}
		stopped = true
		stopProc()
		procWG.Wait()
		consumer.Close()
		return procErr
	}
	defer stop()

	client := &kafka.Client{Addr: kafka.TCP(s.Brokers...), Timeout: 10 * time.Second}
	pub := &kafka.Writer{Addr: kafka.TCP(s.Brokers...), Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond}
	defer pub.Close()

	phases, want := script(s.RetryTopic)
	written := 0
	for i, ph := range phases {
		msgs := make([]kafka.Message, 0, len(ph.steps))
		for _, st := range ph.steps {
			topic := st.topic
			if topic == "" {
				topic = s.EventsTopic
			}
			msgs = append(msgs, kafka.Message{Topic: topic, Key: []byte(st.key), Value: st.value, Headers: st.headers})
		}
		if ph.outage {
			store.down.Store(true)
		}
		phaseStart := time.Now()
		if err := pub.WriteMessages(ctx, msgs...); err != nil {
			return nil, fmt.Errorf("publishing phase %d: %w", i+1, err)
		}
		written += len(msgs)
		fmt.Fprintf(out, "phase %d: published %d records: %s\n", i+1, len(msgs), ph.title)
		if ph.outage {
			// The outage lasts OutageFor, and at least until every record of
			// the phase has been refused once, however slow the machine.
			for time.Since(phaseStart) < cfg.OutageFor || store.refused.Load() < int64(len(msgs)) {
				select {
				case <-time.After(10 * time.Millisecond):
				case <-ctx.Done():
					return nil, fmt.Errorf("during the outage: %w", context.Cause(ctx))
				}
			}
			store.down.Store(false)
			fmt.Fprintf(out, "phase %d: the store is back after %v, having refused %d attempts\n",
				i+1, time.Since(phaseStart).Round(time.Millisecond), store.refused.Load())
		}
		if err := settle(ctx, client, s, parts, store); err != nil {
			if perr := stop(); perr != nil {
				return nil, fmt.Errorf("the processor stopped: %w", perr)
			}
			return nil, fmt.Errorf("phase %d did not settle: %w", i+1, err)
		}
		fmt.Fprintf(out, "phase %d: every record settled and committed after %v\n", i+1, time.Since(phaseStart).Round(time.Millisecond))
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("the processor failed: %w", err)
	}

	r := &Report{Want: want}
	if r.Accounting, err = account(ctx, client, s, parts, store); err != nil {
		return nil, err
	}
	if r.Orders, err = store.Orders(ctx); err != nil {
		return nil, err
	}
	if r.Retries, r.DeadLetterCounts, err = collectCounters(ctx, reader); err != nil {
		return nil, err
	}
	r.Elapsed = time.Since(start)
	printSummary(out, r, written)
	if r.Produced != written {
		return r, fmt.Errorf("the topics hold %d original records, the demo wrote %d", r.Produced, written)
	}
	if r.Lost != 0 || r.Both != 0 {
		return r, fmt.Errorf("%d records lost, %d both projected and dead-lettered", r.Lost, r.Both)
	}
	return r, nil
}

// settle waits until every original record is projected or dead-lettered
// and the group has committed everything on the events and retry topics.
func settle(ctx context.Context, c *kafka.Client, s orderstatus.Settings, parts map[string]int, store orderstatus.Store) error {
	work := map[string]int{s.EventsTopic: parts[s.EventsTopic], s.RetryTopic: parts[s.RetryTopic]}
	var last string
	for {
		a, err := account(ctx, c, s, parts, store)
		if err == nil {
			var behind int64
			behind, err = lag(ctx, c, s.GroupID, work)
			if err == nil && a.Lost == 0 && behind == 0 {
				return nil
			}
			last = fmt.Sprintf("%d records not settled, %d not committed", a.Lost, behind)
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", last, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func createTopics(ctx context.Context, brokers []string, parts map[string]int) error {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	req := &kafka.CreateTopicsRequest{}
	for topic, n := range parts {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: topic, NumPartitions: n, ReplicationFactor: 1})
	}
	resp, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("creating the topics: %w", err)
	}
	for topic, err := range resp.Errors {
		if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", topic, err)
		}
	}
	return nil
}

// deleteTopics removes the run's topics from a real cluster, best effort.
func deleteTopics(brokers []string, parts map[string]int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	req := &kafka.DeleteTopicsRequest{}
	for topic := range parts {
		req.Topics = append(req.Topics, topic)
	}
	client.DeleteTopics(ctx, req)
}

func runID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
