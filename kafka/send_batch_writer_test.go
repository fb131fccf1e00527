package kafka

import (
	"strconv"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

func recordsOf(n int, topic string, key func(i int) []byte) []kafkago.Message {
	msgs := make([]kafkago.Message, n)
	for i := range msgs {
		msgs[i] = kafkago.Message{Topic: topic, Key: key(i)}
	}
	return msgs
}

func TestPartitionShare(t *testing.T) {
	unkeyed := func(int) []byte { return nil }
	hot := func(int) []byte { return []byte("hot") }
	spread := func(i int) []byte { return []byte("key-" + strconv.Itoa(i)) }
	mixed := recordsOf(10, "orders", hot)
	mixed = append(mixed, recordsOf(12, "orders", unkeyed)...)
	for _, tc := range []struct {
		name       string
		msgs       []kafkago.Message
		partitions int
		want       int
	}{
		{"unkeyed spread evenly", recordsOf(100, "orders", unkeyed), 6, 17},
		{"one key, one partition", recordsOf(100, "orders", hot), 6, 100},
		{"hot key plus unkeyed share", mixed, 6, 12},
		{"partitions unknown", recordsOf(100, "orders", unkeyed), 0, 0},
		{"two topics", append(recordsOf(3, "orders", unkeyed), recordsOf(3, "payments", unkeyed)...), 6, 0},
		{"keyed over too many partitions", recordsOf(3, "orders", hot), maxSharePartitions + 1, 0},
	} {
		if got := partitionShare(tc.msgs, tc.partitions); got != tc.want {
			t.Errorf("%s: share %d; want %d", tc.name, got, tc.want)
		}
	}
	// Distinct keys: the share is the largest count murmur2 gives a partition.
	msgs := recordsOf(100, "orders", spread)
	counts := map[int]int{}
	most := 0
	for _, m := range msgs {
		p := PartitionForKey(m.Key, 6)
		counts[p]++
		most = max(most, counts[p])
	}
	if got := partitionShare(msgs, 6); got != most {
		t.Errorf("distinct keys: share %d; want %d", got, most)
	}
}

// A SendBatch goes through the capped writer when its share of a
// partition times the calls in flight fits fewBatchSize, else through the
// writer with the configured cap; partitions unknown keep the configured
// cap unless the whole call times the calls fits.
func TestBatchWriterChoice(t *testing.T) {
	tr, err := New(WithBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	unkeyed := recordsOf(100, "orders", func(int) []byte { return nil })
	hot := recordsOf(100, "orders", func(int) []byte { return []byte("hot") })
	pick := func(msgs []kafkago.Message, calls int) string {
		switch tr.batchWriter(msgs, calls) {
		case tr.fewWriter:
			return "few"
		case tr.ownWriter:
			return "own"
		}
		return "other"
	}
	if got := pick(unkeyed, 2); got != "few" {
		t.Errorf("200 records in flight: %s writer; want few", got)
	}
	if got := pick(unkeyed, 8); got != "own" {
		t.Errorf("partitions unknown, 800 records in flight: %s writer; want own", got)
	}
	next := &countingTripper{partitions: 6}
	tr.netMemo.next = next
	partitionsOf(t, tr.netMemo, "orders")
	for _, tc := range []struct {
		msgs  []kafkago.Message
		calls int
		want  string
	}{
		{unkeyed, 8, "few"},  // 17 per partition per call
		{unkeyed, 16, "own"}, // 17 × 16 = 272
		{hot, 2, "few"},      // 100 × 2
		{hot, 3, "own"},      // 100 × 3
	} {
		if got := pick(tc.msgs, tc.calls); got != tc.want {
			t.Errorf("share %d, %d calls: %s writer; want %s", partitionShare(tc.msgs, 6), tc.calls, got, tc.want)
		}
	}
}
