package orderstatus

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	"github.com/segmentio/kafka-go"
)

// switchStore refuses every Apply while down is set.
type switchStore struct {
	Store
	down    atomic.Bool
	refused atomic.Int64
}

func (s *switchStore) Apply(ctx context.Context, e Event) (Applied, error) {
	if s.down.Load() {
		s.refused.Add(1)
		return 0, errors.New("store down")
	}
	return s.Store.Apply(ctx, e)
}

// TestShutdownLeavesAWaitingRecordToTheNextOwner runs the processor on the
// embedded broker: a record fails, is retried with a long backoff, and the
// processor is shut down while it waits. A second processor in the same group
// must find the retry record uncommitted and project it.
func TestShutdownLeavesAWaitingRecordToTheNextOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("uses the embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := testSettings()
	b, err := devkafka.Start(devkafka.WithTopics(1, s.EventsTopic, s.RetryTopic, s.DeadLetterTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s.Brokers = b.Addrs()
	s.MinDelay, s.MaxDelay = time.Minute, time.Minute

	sqlite, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "o.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sqlite.Close()
	store := &switchStore{Store: sqlite}
	store.down.Store(true)
	producer := NewKafkaProducer(s.Brokers)
	defer producer.Close()
	quiet := WithLogger(slog.New(slog.DiscardHandler))

	value := envelope(t, URNCreated, map[string]any{"order_id": "X-1"})
	e, _, _ := DecodeEvent(value)
	if err := producer.Produce(ctx, Record{Topic: s.EventsTopic, Key: []byte("X-1"), Value: value}); err != nil {
		t.Fatal(err)
	}

	// First owner: the attempt fails, the retry waits a minute, then SIGTERM.
	p1, _ := NewProjector(s, store, producer, quiet)
	r1 := NewReader(s)
	ctx1, stop1 := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(ctx1, p1, r1) }()
	for store.refused.Load() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the first processor never tried the record")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second) // let it fetch the retry record and start waiting
	stop1()
	if err := <-done; err != nil {
		t.Fatalf("first Run after shutdown = %v, want nil", err)
	}
	r1.Close()
	if ok, _ := sqlite.HasEvent(ctx, e.ID); ok {
		t.Fatal("projected by the first owner although the store was down")
	}

	// Next owner: short backoff, store back.
	store.down.Store(false)
	s.MinDelay, s.MaxDelay = 10*time.Millisecond, 10*time.Millisecond
	p2, _ := NewProjector(s, store, producer, quiet)
	r2 := NewReader(s)
	defer r2.Close()
	ctx2, stop2 := context.WithCancel(ctx)
	defer stop2()
	go func() { done <- Run(ctx2, p2, r2) }()
	for {
		if ok, _ := sqlite.HasEvent(ctx, e.ID); ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the next owner never projected the waiting record")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop2()
	if err := <-done; err != nil {
		t.Fatalf("second Run = %v", err)
	}

	client := &kafka.Client{Addr: kafka.TCP(s.Brokers...), Timeout: 10 * time.Second}
	ends, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		s.RetryTopic: {kafka.LastOffsetOf(0)}, s.DeadLetterTopic: {kafka.LastOffsetOf(0)}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := ends.Topics[s.RetryTopic][0].LastOffset; n != 1 {
		t.Errorf("retry topic holds %d records, want the one retry", n)
	}
	if n := ends.Topics[s.DeadLetterTopic][0].LastOffset; n != 0 {
		t.Errorf("dead-letter topic holds %d records, want none", n)
	}
}
