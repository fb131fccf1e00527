//go:build integration

package kafka

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// TestIntegrationAppPublishBatch writes one App.PublishBatch of keyed
// messages to a 3-partition topic and reads it back: every record stored
// once, its key kept and placed by murmur2, the contract headers projected
// (bq-message-id the returned id), extra headers beside them, and each
// key's records in batch order.
func TestIntegrationAppPublishBatch(t *testing.T) {
	const n, keys, partitions = 60, 6, 3
	tr := itTransport(t)
	topic := uniq("batch-app")
	app := itApp(t, tr, topic, partitions)
	msgs := make([]babelqueue.BatchMessage, n)
	for i := range msgs {
		msgs[i] = babelqueue.BatchMessage{URN: "urn:babel:orders:created", Data: map[string]int{"seq": i},
			Headers: map[string]string{"x-seq": strconv.Itoa(i)},
			Options: []babelqueue.PublishOption{babelqueue.WithKey([]byte("key-" + strconv.Itoa(i%keys)))}}
	}
	ids, err := app.PublishBatch(bgCtx(t, time.Minute), msgs)
	if err != nil {
		t.Fatal(err)
	}
	got := readTopic(t, topic, n, 30*time.Second, time.Second)
	if len(got) != n {
		t.Fatalf("read %d records; want %d", len(got), n)
	}
	last := map[string]int{}
	for _, m := range got {
		hs := map[string]string{}
		for _, h := range m.Headers {
			hs[h.Key] = string(h.Value)
		}
		seq, err := strconv.Atoi(hs["x-seq"])
		if err != nil {
			t.Fatalf("record without x-seq: %v", hs)
		}
		if want := "key-" + strconv.Itoa(seq%keys); string(m.Key) != want {
			t.Errorf("seq %d: key %q; want %q", seq, m.Key, want)
		}
		if p := PartitionForKey(m.Key, partitions); m.Partition != p {
			t.Errorf("seq %d: partition %d; murmur2 says %d", seq, m.Partition, p)
		}
		if hs[wire.HeaderMessageID] != ids[seq] || hs[wire.HeaderJob] != "urn:babel:orders:created" {
			t.Errorf("seq %d: headers %v; want bq-message-id %s and bq-job", seq, hs, ids[seq])
		}
		if prev, ok := last[string(m.Key)]; ok && seq < prev {
			t.Errorf("key %s: seq %d stored after %d", m.Key, seq, prev)
		}
		last[string(m.Key)] = seq
	}
}

// benchPayload is the data of the batch bench's envelopes, padded so that
// an encoded envelope is about 300 bytes.
type benchPayload struct {
	OrderID string `json:"order_id"`
	Note    string `json:"note"`
}

// TestBenchKafkaPublishBatch compares 8 goroutines each calling
// App.PublishBatch with 100 envelopes of about 300 bytes (made and encoded
// on every call) with 8 goroutines each handing 100 ready records to a raw
// kafka-go Writer.WriteMessages, same settings, same broker, in alternating
// rounds, and prints
// "bench: kafka-publish-batch-throughput ours=<msg/s> raw=<msg/s> ratio=<ours/raw>"
// with the best round of each side. The transport's settings are the
// defaults the raw Writer is given; how it drives kafka-go with them is its
// own (send_batch.go: its SendBatch writer caps partition batches of such
// calls at fewBatchSize; metadatamemo.go). Each round also prints the
// produce requests of each side (kafka-go WriterStats), and each side's
// goroutines carry the pprof label side=ours|raw (go tool pprof -tagfocus).
func TestBenchKafkaPublishBatch(t *testing.T) {
	benchOnly(t)
	const (
		workers, batch, rounds = 8, 100, 3
		batches                = 1500 // per round and side: 150,000 messages
		limit                  = 20 * time.Second
	)
	tr := itTransport(t)
	topic := uniq("bench-batch")
	ensure(t, tr, topic, 6)
	ctx := bgCtx(t, 5*time.Minute)
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	data := benchPayload{OrderID: "ord-0000001", Note: strings.Repeat("x", 60)}
	msgs := make([]babelqueue.BatchMessage, batch)
	for i := range msgs {
		msgs[i] = babelqueue.BatchMessage{URN: "urn:babel:orders:created", Data: data}
	}
	// The raw side writes ready records: an envelope encoded once, its
	// projection, as our path produces them.
	env, err := babelqueue.Make("urn:babel:orders:created", data, babelqueue.WithQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	body, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	hs, ts := projection(string(body), time.Now())
	ready := make([]kafkago.Message, batch)
	for i := range ready {
		ready[i] = kafkago.Message{Topic: topic, Value: body, Headers: toKafkaHeaders(hs), Time: ts}
	}
	raw := &kafkago.Writer{Addr: kafkago.TCP(brokerList(t)...), Balancer: &Murmur2Balancer{}, BatchTimeout: DefaultLinger,
		BatchSize: DefaultBatchSize, BatchBytes: DefaultBatchBytes, RequiredAcks: kafkago.RequireAll, Transport: &kafkago.Transport{}}
	defer raw.Close()
	// Warm the metadata and connections of both sides.
	pprof.Do(ctx, pprof.Labels("side", "ours"), func(ctx context.Context) {
		if _, err := app.PublishBatch(ctx, msgs); err != nil {
			t.Fatal(err)
		}
	})
	pprof.Do(ctx, pprof.Labels("side", "raw"), func(ctx context.Context) {
		if err := raw.WriteMessages(ctx, ready...); err != nil {
			t.Fatal(err)
		}
	})
	fmt.Printf("bench-info: kafka-publish-batch envelope=%dB batch=%d workers=%d\n", len(body), batch, workers)
	ourSide := func() float64 {
		return batch * concurrently(t, workers, batches, limit, func(int) error {
			_, err := app.PublishBatch(ctx, msgs)
			return err
		})
	}
	rawSide := func() float64 {
		return batch * concurrently(t, workers, batches, limit, func(int) error {
			// kafka-go takes the slice's records by value; each call gets its own slice header.
			return raw.WriteMessages(ctx, ready...)
		})
	}
	writers := [2]*kafkago.Writer{tr.ownWriter, raw}
	if batch <= fewBatchSize {
		writers[0] = tr.fewWriter // the writer SendBatch uses for a call of this size
	}
	var ours, rawRate float64
	var cpus [2][]float64
	for round := range rounds {
		sides := []func() float64{ourSide, rawSide}
		var r, cpu [2]float64
		var heap [2]heapPerMessage
		var reqs [2]kafkago.WriterStats
		for i := range sides {
			j := (round + i) % 2
			runtime.GC()
			writers[j].Stats() // reset the counters
			pprof.Do(ctx, pprof.Labels("side", []string{"ours", "raw"}[j]), func(context.Context) {
				r[j], cpu[j], heap[j] = cpuPerMessage(sides[j])
			})
			cpus[j] = append(cpus[j], cpu[j])
			reqs[j] = writers[j].Stats()
		}
		fmt.Printf("bench-round: kafka-publish-batch-throughput round=%d ours=%.0f raw=%.0f ratio=%.2f cpu-us-per-record ours=%.2f raw=%.2f"+
			" allocs-per-record ours=%.2f raw=%.2f bytes-per-record ours=%.0f raw=%.0f gc-cycles ours=%d raw=%d\n",
			round+1, r[0], r[1], r[0]/r[1], cpu[0], cpu[1], heap[0].allocs, heap[1].allocs, heap[0].bytes, heap[1].bytes, heap[0].gcs, heap[1].gcs)
		fmt.Printf("bench-info: kafka-publish-batch round=%d produce-requests ours=%d raw=%d records-per-request ours=%.1f raw=%.1f bytes-per-request ours=%d raw=%d\n",
			round+1, reqs[0].Writes, reqs[1].Writes, perRequest(reqs[0].Messages, reqs[0].Writes), perRequest(reqs[1].Messages, reqs[1].Writes),
			reqs[0].BatchBytes.Avg, reqs[1].BatchBytes.Avg)
		ours, rawRate = max(ours, r[0]), max(rawRate, r[1])
	}
	benchLine("kafka-publish-batch-throughput", ours, rawRate)
	fmt.Printf("bench: kafka-publish-batch-cpu-us-per-record ours=%.2f raw=%.2f ratio=%.2f\n",
		brokertest.Median(cpus[0]), brokertest.Median(cpus[1]), brokertest.Median(cpus[0])/brokertest.Median(cpus[1]))
}

// perRequest is records per produce request, 0 when none was sent.
func perRequest(records, requests int64) float64 {
	if requests == 0 {
		return 0
	}
	return float64(records) / float64(requests)
}

// heapPerMessage is what the process allocated per message written by
// one side of a bench (load-independent, unlike the rates), and the
// collections that took.
type heapPerMessage struct {
	allocs, bytes float64
	gcs           uint32
}

// cpuPerMessage runs side, which returns messages per second, and returns
// that rate, the process CPU time (this client only, not the broker) per
// message written, in microseconds, and the heap allocated per message.
func cpuPerMessage(side func() float64) (rate, cpuMicros float64, heap heapPerMessage) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start, began := processCPU(), time.Now()
	rate = side()
	sent := rate * time.Since(began).Seconds()
	cpuMicros = float64((processCPU() - start).Microseconds()) / sent
	runtime.ReadMemStats(&after)
	heap = heapPerMessage{allocs: float64(after.Mallocs-before.Mallocs) / sent,
		bytes: float64(after.TotalAlloc-before.TotalAlloc) / sent, gcs: after.NumGC - before.NumGC}
	return rate, cpuMicros, heap
}
