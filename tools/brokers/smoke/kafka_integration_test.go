//go:build integration

package smoke

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

func kafkaClient(brokers []string) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 15 * time.Second}
}

func createTopic(ctx context.Context, t *testing.T, brokers []string, cfg kafka.TopicConfig) {
	t.Helper()
	resp, err := kafkaClient(brokers).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{cfg}})
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", cfg.Topic, err)
	}
	if err := resp.Errors[cfg.Topic]; err != nil {
		t.Fatalf("CreateTopics %s: %v", cfg.Topic, err)
	}
}

// TestKafkaPartitionsGroupCommit creates a 3-partition topic, produces to
// every partition, consumes everything through a consumer group, commits,
// reads the committed offsets back and checks a new group member resumes
// after them.
func TestKafkaPartitionsGroupCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := brokertest.KafkaBrokers(t)
	topic := brokertest.Topic(t, "smoke")
	group := topic + "-group"
	createTopic(ctx, t, brokers, kafka.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1})

	md, err := kafkaClient(brokers).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("metadata %+v, want one topic with 3 partitions", md.Topics)
	}

	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Topic:        topic,
		Balancer:     &kafka.RoundRobin{},
		BatchTimeout: 10 * time.Millisecond,
		RequiredAcks: kafka.RequireAll,
	}
	defer w.Close()
	const n = 30
	var msgs []kafka.Message
	for i := range n {
		msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(i)), Value: []byte("m" + strconv.Itoa(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}

	newReader := func() *kafka.Reader {
		return kafka.NewReader(kafka.ReaderConfig{
			Brokers:        brokers,
			GroupID:        group,
			Topic:          topic,
			MaxWait:        200 * time.Millisecond,
			CommitInterval: 0,
			StartOffset:    kafka.FirstOffset,
		})
	}
	r := newReader()
	seen := map[string]bool{}
	perPartition := map[int]int64{} // partition -> next offset
	var fetched []kafka.Message
	for len(fetched) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("FetchMessage after %d: %v", len(fetched), err)
		}
		if seen[string(m.Value)] {
			t.Fatalf("message %q delivered twice", m.Value)
		}
		seen[string(m.Value)] = true
		perPartition[m.Partition] = m.Offset + 1
		fetched = append(fetched, m)
	}
	if err := r.CommitMessages(ctx, fetched...); err != nil {
		t.Fatalf("CommitMessages: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("closing the reader: %v", err)
	}
	if len(perPartition) != 3 {
		t.Fatalf("messages came from partitions %v, want all 3", perPartition)
	}

	resp, err := kafkaClient(brokers).OffsetFetch(ctx, &kafka.OffsetFetchRequest{
		GroupID: group,
		Topics:  map[string][]int{topic: {0, 1, 2}},
	})
	if err != nil || resp.Error != nil {
		t.Fatalf("OffsetFetch: %v %v", err, resp.Error)
	}
	var total int64
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("partition %d: %v", p.Partition, p.Error)
		}
		if p.CommittedOffset != perPartition[p.Partition] {
			t.Errorf("partition %d committed at %d, want %d", p.Partition, p.CommittedOffset, perPartition[p.Partition])
		}
		total += p.CommittedOffset
	}
	if total != n {
		t.Fatalf("committed offsets add up to %d, want %d", total, n)
	}

	// A new member of the group starts after the commit: it sees only the
	// message produced now.
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("after-commit")}); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	r2 := newReader()
	defer r2.Close()
	m, err := r2.FetchMessage(ctx)
	if err != nil {
		t.Fatalf("FetchMessage on the new member: %v", err)
	}
	if string(m.Value) != "after-commit" {
		t.Fatalf("new member read %q at %d/%d, want after-commit", m.Value, m.Partition, m.Offset)
	}
}

// TestKafkaLogAppendTime checks that a topic created with
// message.timestamp.type=LogAppendTime stamps records with the broker's
// clock, while a CreateTime topic keeps the producer's timestamp.
func TestKafkaLogAppendTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := brokertest.KafkaBrokers(t)
	producerTime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

	for _, c := range []struct {
		typ        string
		wantBroker bool
	}{
		{"LogAppendTime", true},
		{"CreateTime", false},
	} {
		t.Run(c.typ, func(t *testing.T) {
			topic := brokertest.Topic(t, "smoke")
			createTopic(ctx, t, brokers, kafka.TopicConfig{
				Topic: topic, NumPartitions: 1, ReplicationFactor: 1,
				ConfigEntries: []kafka.ConfigEntry{{ConfigName: "message.timestamp.type", ConfigValue: c.typ}},
			})
			before := time.Now().Add(-time.Second)
			w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, BatchTimeout: 10 * time.Millisecond, RequiredAcks: kafka.RequireAll}
			defer w.Close()
			if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("stamped"), Time: producerTime}); err != nil {
				t.Fatalf("WriteMessages: %v", err)
			}
			after := time.Now().Add(time.Second)

			rec := fetchFirst(ctx, t, brokers, topic)
			if c.wantBroker {
				if rec.Attrs.TimestampType() != 1 {
					t.Errorf("timestamp type %d, want 1 (LogAppendTime)", rec.Attrs.TimestampType())
				}
				if rec.Timestamp.Before(before) || rec.Timestamp.After(after) {
					t.Fatalf("timestamp %s, want the broker's append time between %s and %s (producer sent %s)",
						rec.Timestamp.UTC(), before.UTC(), after.UTC(), producerTime)
				}
			} else {
				if rec.Attrs.TimestampType() != 0 {
					t.Errorf("timestamp type %d, want 0 (CreateTime)", rec.Attrs.TimestampType())
				}
				if !rec.Timestamp.Equal(producerTime) {
					t.Fatalf("timestamp %s, want the producer's %s", rec.Timestamp.UTC(), producerTime)
				}
			}
		})
	}
}

// fetchFirst reads the first record of partition 0 with franz-go, which
// honours the batch's timestamp type (kafka-go's reader does not, see
// TestKafkaGoReaderIgnoresLogAppendTime).
func fetchFirst(ctx context.Context, t *testing.T, brokers []string, topic string) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record in %s: %v", topic, err)
		}
		for _, fe := range fetches.Errors() {
			t.Fatalf("fetch %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
		}
		if recs := fetches.Records(); len(recs) > 0 {
			return recs[0]
		}
	}
}

// TestKafkaSCRAM checks both SCRAM mechanisms on the SASL listener: the
// right password is accepted (metadata and a produce succeed), a wrong one
// is refused.
func TestKafkaSCRAM(t *testing.T) {
	brokers, user, password := brokertest.KafkaSASL(t)
	topic := brokertest.Topic(t, "smoke")
	for _, algo := range []scram.Algorithm{scram.SHA256, scram.SHA512} {
		t.Run(algo.Name(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			good := saslTransport(t, algo, user, password)
			defer good.CloseIdleConnections()
			client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: good, Timeout: 15 * time.Second}
			if _, err := client.Metadata(ctx, &kafka.MetadataRequest{}); err != nil {
				t.Fatalf("metadata with the right password: %v", err)
			}
			cresp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{
				Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}},
			})
			if err != nil {
				t.Fatalf("create topic with the right password: %v", err)
			}
			if err := cresp.Errors[topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
				t.Fatalf("create topic with the right password: %v", err)
			}
			w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Transport: good, BatchTimeout: 10 * time.Millisecond}
			defer w.Close()
			if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(algo.Name())}); err != nil {
				t.Fatalf("produce with the right password: %v", err)
			}

			bad := saslTransport(t, algo, user, password+"-wrong")
			defer bad.CloseIdleConnections()
			client = &kafka.Client{Addr: kafka.TCP(brokers...), Transport: bad, Timeout: 15 * time.Second}
			_, err = client.Metadata(ctx, &kafka.MetadataRequest{})
			if err == nil {
				t.Fatal("metadata with a wrong password succeeded")
			}
			if !errors.Is(err, kafka.SASLAuthenticationFailed) {
				t.Fatalf("wrong password: error %v, want %v", err, kafka.SASLAuthenticationFailed)
			}
		})
	}
}

func saslTransport(t *testing.T, algo scram.Algorithm, user, password string) *kafka.Transport {
	t.Helper()
	mech, err := scram.Mechanism(algo, user, password)
	if err != nil {
		t.Fatalf("scram.Mechanism: %v", err)
	}
	return &kafka.Transport{
		Dial:        (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DialTimeout: 10 * time.Second,
		SASL:        mech,
		ClientID:    fmt.Sprintf("bq-smoke-%s", algo.Name()),
	}
}

// TestKafkaGoReaderIgnoresLogAppendTime pins down how kafka-go v0.4.51 sees
// a LogAppendTime topic, which the kafka binding's re-injector works
// around (it reads the batch headers itself, kafka/appendtime.go): its
// reader returns the record's own (producer) timestamp and ignores the
// batch's LogAppendTime flag, while the produce response carries the
// broker's append time. If a kafka-go upgrade changes this, this test says so.
func TestKafkaGoReaderIgnoresLogAppendTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := brokertest.KafkaBrokers(t)
	topic := brokertest.Topic(t, "smoke")
	createTopic(ctx, t, brokers, kafka.TopicConfig{
		Topic: topic, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "message.timestamp.type", ConfigValue: "LogAppendTime"}},
	})
	producerTime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	before := time.Now().Add(-time.Second)
	// A partition of a topic just created may refuse a write until its
	// leader is in place (NOT_LEADER_OR_FOLLOWER): such a refusal wrote
	// nothing, so the write is tried again until ctx ends.
	var resp *kafka.ProduceResponse
	var err error
	for {
		resp, err = kafkaClient(brokers).Produce(ctx, &kafka.ProduceRequest{
			Topic: topic, Partition: 0, RequiredAcks: kafka.RequireAll,
			Records: kafka.NewRecordReader(kafka.Record{Time: producerTime, Value: kafka.NewBytes([]byte("x"))}),
		})
		var ke kafka.Error
		if err != nil || !errors.As(resp.Error, &ke) || !ke.Temporary() || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || resp.Error != nil {
		t.Fatalf("Produce: %v %v", err, resp.Error)
	}
	after := time.Now().Add(time.Second)
	if resp.LogAppendTime.Before(before) || resp.LogAppendTime.After(after) {
		t.Errorf("produce response LogAppendTime %s, want the broker's clock", resp.LogAppendTime.UTC())
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatalf("ReadMessage: %v", err)
	}
	if !m.Time.Equal(producerTime) {
		t.Fatalf("kafka-go reader returned %s; it used to return the producer's %s (LogAppendTime ignored) — "+
			"update the kafka binding's notes on LogAppendTime", m.Time.UTC(), producerTime)
	}
}
