// Package kafkaread reads a Kafka topic back in tests, without a consumer
// group, so a test can check exactly what a producer wrote.
package kafkaread

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// All returns every record of topic read from the start of each partition,
// sorted by partition then offset, once want arrived plus settle, or at within.
//
// It reads each partition with its own reader and no group, so nothing is
// committed. After want records arrived it waits settle more so that
// unexpected extras show up; when within elapses first it returns what it
// has, which may be fewer than want: the caller asserts the count. A
// metadata failure fails the test.
func All(t testing.TB, brokers []string, topic string, want int, within, settle time.Duration) []kafkago.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	client := &kafkago.Client{Addr: kafkago.TCP(brokers...), Transport: tr}
	meta, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(meta.Topics) != 1 || meta.Topics[0].Error != nil {
		t.Fatalf("kafkaread: metadata of %s: %v %+v", topic, err, meta)
	}
	var (
		mu   sync.Mutex
		got  []kafkago.Message
		full = make(chan struct{})
		once sync.Once
		wg   sync.WaitGroup
	)
	rctx, rcancel := context.WithCancel(ctx)
	for _, p := range meta.Topics[0].Partitions {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			for {
				m, err := r.ReadMessage(rctx)
				if err != nil {
					return
				}
				mu.Lock()
				got = append(got, m)
				if len(got) >= want {
					once.Do(func() { close(full) })
				}
				mu.Unlock()
			}
		}(p.ID)
	}
	select {
	case <-full:
		time.Sleep(settle)
	case <-ctx.Done():
	}
	rcancel()
	wg.Wait()
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
}
