package demo

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
	"github.com/segmentio/kafka-go"
)

// TestAccountFindsWhatBecameOfEachRecord checks the accounting on records
// placed by hand: one projected, one dead-lettered, one lost, one forged on
// the retry topic and one real retry that is not an original.
func TestAccountFindsWhatBecameOfEachRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("uses the embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := orderstatus.Settings{EventsTopic: "e", RetryTopic: "r", DeadLetterTopic: "d"}
	parts := map[string]int{"e": 1, "r": 1, "d": 1}
	b, err := devkafka.Start(devkafka.WithTopics(1, "e", "r", "d"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	store, err := orderstatus.OpenSQLite(ctx, filepath.Join(t.TempDir(), "o.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w := &kafka.Writer{Addr: kafka.TCP(b.Addrs()...), RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()

	projected, dead, lost := event("O-1", orderstatus.StatusCreated), event("O-2", orderstatus.StatusCreated), event("O-3", orderstatus.StatusCreated)
	e, _, _ := orderstatus.DecodeEvent(projected.value)
	if _, err := store.Apply(ctx, e); err != nil {
		t.Fatal(err)
	}
	retryOf := func(offset int) []kafka.Header {
		return []kafka.Header{{Key: orderstatus.HeaderAttempt, Value: []byte("1")},
			{Key: orderstatus.HeaderPartition, Value: []byte("0")}, {Key: orderstatus.HeaderOffset, Value: []byte(strconv.Itoa(offset))}}
	}
	dlqFor := func(topic string, offset int) []kafka.Header {
		return []kafka.Header{{Key: orderstatus.DLQHeaderTopic, Value: []byte(topic)},
			{Key: orderstatus.DLQHeaderPartition, Value: []byte("0")}, {Key: orderstatus.DLQHeaderOffset, Value: []byte(strconv.Itoa(offset))}}
	}
	err = w.WriteMessages(ctx,
		kafka.Message{Topic: "e", Value: projected.value},                                                                 // offset 0
		kafka.Message{Topic: "e", Value: dead.value},                                                                      // offset 1
		kafka.Message{Topic: "e", Value: lost.value},                                                                      // offset 2
		kafka.Message{Topic: "r", Value: lost.value, Headers: retryOf(2)},                                                 // a real retry: not an original
		kafka.Message{Topic: "r", Value: dead.value, Headers: []kafka.Header{{Key: "retry.attempt", Value: []byte("x")}}}, // forged, offset 1
		kafka.Message{Topic: "d", Value: dead.value, Headers: dlqFor("e", 1)},
		kafka.Message{Topic: "d", Value: dead.value, Headers: dlqFor("r", 1)},
	)
	if err != nil {
		t.Fatal(err)
	}
	c := &kafka.Client{Addr: kafka.TCP(b.Addrs()...), Timeout: 10 * time.Second}
	a, err := account(ctx, c, s, parts, store)
	if err != nil {
		t.Fatal(err)
	}
	if a.Produced != 4 || a.Projected != 1 || a.DeadLettered != 2 || a.Lost != 1 || a.Both != 0 || a.RetryRecords != 1 {
		t.Errorf("accounting = %+v, want produced 4, projected 1, dead-lettered 2, lost 1, 1 retry record", a)
	}
	if len(a.LostPlaces) != 1 || a.LostPlaces[0] != (orderstatus.Place{Topic: "e", Partition: 0, Offset: 2}) {
		t.Errorf("lost places = %v, want e/0@2", a.LostPlaces)
	}
}
