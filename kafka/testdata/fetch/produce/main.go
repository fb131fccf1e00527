// Command produce writes the kafka-go and franz-go record batches of the
// fetch fixtures (see ../README.md): on topic, one batch of three records
// stamped at -ts (Unix ms, +1 ms each), uncompressed, then one batch of two
// records compressed with lz4, each flushed on its own.
package main

import (
	"context"
	"flag"
	"log"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	broker := flag.String("broker", "127.0.0.1:9092", "bootstrap broker")
	topic := flag.String("topic", "", "topic")
	client := flag.String("client", "kafkago", "kafkago or franzgo")
	tsMs := flag.Int64("ts", 0, "timestamp of the first record, Unix ms")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := time.UnixMilli(*tsMs)
	batches := [][]string{{"a0", "a1", "a2"}, {"b0", "b1"}}
	switch *client {
	case "kafkago":
		for i, vals := range batches {
			w := &kafkago.Writer{Addr: kafkago.TCP(*broker), Topic: *topic, BatchSize: len(vals), BatchTimeout: time.Second, RequiredAcks: kafkago.RequireAll}
			if i == 1 {
				w.Compression = compress.Lz4
			}
			var msgs []kafkago.Message
			for j, v := range vals {
				msgs = append(msgs, kafkago.Message{Key: []byte("k"), Value: []byte(v), Time: ts.Add(time.Duration(i*10+j) * time.Millisecond),
					Headers: []kafkago.Header{{Key: "h", Value: []byte(v)}}})
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				log.Fatal(err)
			}
			_ = w.Close()
		}
	case "franzgo":
		for i, vals := range batches {
			codec := kgo.NoCompression()
			if i == 1 {
				codec = kgo.Lz4Compression()
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(*broker), kgo.DefaultProduceTopic(*topic), kgo.ProducerBatchCompression(codec),
				kgo.ProducerLinger(time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				log.Fatal(err)
			}
			var recs []*kgo.Record
			for j, v := range vals {
				recs = append(recs, &kgo.Record{Key: []byte("k"), Value: []byte(v), Partition: 0, Timestamp: ts.Add(time.Duration(i*10+j) * time.Millisecond),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(v)}}})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				log.Fatal(err)
			}
			cl.Close()
		}
	default:
		log.Fatalf("unknown client %q", *client)
	}
}
