package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
	"github.com/segmentio/kafka-go"
)

// TestRunFailsWhenNoTopicStoresTheRecord gives the processor a dead-letter
// topic the broker refuses to store records in: the malformed record can be
// neither retried nor dead-lettered, so run returns ErrNotSettled (the
// process exits 1) and the record is not committed.
func TestRunFailsWhenNoTopicStoresTheRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("uses the embedded broker")
	}
	b, err := devkafka.Start(devkafka.WithTopics(1, "orders.events", "orders.retry"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(b.Addrs()...), Topic: "orders.events", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("not an envelope")}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		orderstatus.EnvBrokers:         b.Addrs()[0],
		orderstatus.EnvStorePath:       filepath.Join(t.TempDir(), "o.db"),
		orderstatus.EnvDeadLetterTopic: "orders dlq!", // not a valid topic name
	}
	err = run(ctx, func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
	t.Logf("run: %v", err)
	if !errors.Is(err, orderstatus.ErrNotSettled) {
		t.Fatalf("run = %v, want ErrNotSettled", err)
	}
	client := &kafka.Client{Addr: kafka.TCP(b.Addrs()...), Timeout: 10 * time.Second}
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: orderstatus.DefaultGroupID,
		Topics: map[string][]int{"orders.events": {0}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics["orders.events"]; len(got) == 1 && got[0].CommittedOffset > 0 {
		t.Errorf("the unsettled record was committed (offset %d)", got[0].CommittedOffset)
	}
}
