package kafkaread

import (
	"context"
	"strconv"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
)

// TestAllReadsEveryPartitionInOrder writes to two partitions of an embedded
// broker and checks All returns every record sorted by partition then
// offset, and returns short when fewer than want arrive.
func TestAllReadsEveryPartitionInOrder(t *testing.T) {
	b, err := devkafka.Start(devkafka.WithTopics(2, "t"))
	if err != nil {
		t.Fatalf("devkafka: %v", err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var msgs []kafkago.Message
	for i := range 6 {
		msgs = append(msgs, kafkago.Message{Partition: i % 2, Value: []byte(strconv.Itoa(i))})
	}
	w := &kafkago.Writer{Addr: kafkago.TCP(b.Addrs()...), Topic: "t", Balancer: balancerByPartition{}, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := All(t, b.Addrs(), "t", 6, 10*time.Second, 50*time.Millisecond)
	want := []string{"0", "2", "4", "1", "3", "5"}
	if len(got) != len(want) {
		t.Fatalf("All returned %d records, want %d", len(got), len(want))
	}
	for i, m := range got {
		if string(m.Value) != want[i] || m.Partition != i/3 || m.Offset != int64(i%3) {
			t.Errorf("record %d: partition %d offset %d value %q, want partition %d offset %d value %q", i, m.Partition, m.Offset, m.Value, i/3, i%3, want[i])
		}
	}
	if short := All(t, b.Addrs(), "t", 7, 500*time.Millisecond, 0); len(short) != 6 {
		t.Errorf("All with want beyond the topic returned %d records, want the 6 there are", len(short))
	}
}

// balancerByPartition sends each message to the partition it names.
type balancerByPartition struct{}

func (balancerByPartition) Balance(m kafkago.Message, _ ...int) int { return m.Partition }
