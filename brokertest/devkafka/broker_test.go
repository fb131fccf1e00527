package devkafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func start(t *testing.T, opts ...Option) *Broker {
	t.Helper()
	b, err := Start(opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// TestKafkaGoProduceConsumeGroupCommit proves segmentio/kafka-go can use
// the embedded broker end to end: produce, consume through a consumer group,
// commit, read the committed offset back, and resume from it.
func TestKafkaGoProduceConsumeGroupCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	b := start(t)
	const topic, group = "orders", "workers"

	w := &kafka.Writer{
		Addr:                   kafka.TCP(b.Addrs()...),
		Topic:                  topic,
		AllowAutoTopicCreation: true,
		BatchTimeout:           10 * time.Millisecond,
		RequiredAcks:           kafka.RequireAll,
	}
	defer w.Close()
	var msgs []kafka.Message
	for i := range 5 {
		msgs = append(msgs, kafka.Message{Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}

	read := func(n int) []kafka.Message {
		t.Helper()
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:        b.Addrs(),
			GroupID:        group,
			Topic:          topic,
			MaxWait:        100 * time.Millisecond,
			CommitInterval: 0, // commit synchronously
			StartOffset:    kafka.FirstOffset,
		})
		defer r.Close()
		var got []kafka.Message
		for range n {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("FetchMessage after %d messages: %v", len(got), err)
			}
			got = append(got, m)
		}
		if err := r.CommitMessages(ctx, got...); err != nil {
			t.Fatalf("CommitMessages: %v", err)
		}
		return got
	}

	got := read(5)
	for i, m := range got {
		if string(m.Value) != "v"+strconv.Itoa(i) || m.Offset != int64(i) {
			t.Fatalf("message %d = offset %d value %q", i, m.Offset, m.Value)
		}
	}

	client := &kafka.Client{Addr: kafka.TCP(b.Addrs()...), Timeout: 10 * time.Second}
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{
		GroupID: group,
		Topics:  map[string][]int{topic: {0}},
	})
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	if err := resp.Error; err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	parts := resp.Topics[topic]
	if len(parts) != 1 || parts[0].CommittedOffset != 5 || parts[0].Error != nil {
		t.Fatalf("committed offsets = %+v, want partition 0 at 5", parts)
	}

	// A new member of the same group resumes after the commit.
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("v5")}); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	again := read(1)
	if again[0].Offset != 5 || string(again[0].Value) != "v5" {
		t.Fatalf("resumed at offset %d value %q, want offset 5 value v5", again[0].Offset, again[0].Value)
	}
}

func TestSeededTopicsAndDefaultPartitions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := start(t, WithTopics(3, "three"), WithDefaultPartitions(2))
	client := &kafka.Client{Addr: kafka.TCP(b.Addrs()...), Timeout: 10 * time.Second}

	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"three"}})
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("topic three: %+v, want 3 partitions", md.Topics)
	}

	w := &kafka.Writer{Addr: kafka.TCP(b.Addrs()...), Topic: "auto", AllowAutoTopicCreation: true, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("x")}); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	md, err = client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"auto"}})
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 2 {
		t.Fatalf("auto-created topic: %+v, want 2 partitions", md.Topics)
	}
}

func TestListensOnLoopbackAndGivenPort(t *testing.T) {
	port := freePort(t)
	b := start(t, WithPort(port))
	want := fmt.Sprintf("127.0.0.1:%d", port)
	if got := b.Addrs(); len(got) != 1 || got[0] != want {
		t.Fatalf("Addrs = %q, want [%s]", got, want)
	}

	// The port is now taken: a second broker on it must fail to start.
	if b2, err := Start(WithPort(port)); err == nil {
		b2.Close()
		t.Fatal("second Start on a busy port succeeded")
	}

	b.Close()
	b.Close() // idempotent
	if c, err := net.DialTimeout("tcp", want, time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting connections after Close")
	}
}

func TestEphemeralPortsDiffer(t *testing.T) {
	a, b := start(t), start(t)
	if a.Addrs()[0] == b.Addrs()[0] {
		t.Fatalf("two brokers share %s", a.Addrs()[0])
	}
	host, _, err := net.SplitHostPort(a.Addrs()[0])
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("address %q is not on 127.0.0.1", a.Addrs()[0])
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, opt := range map[string]Option{
		"negative port":    WithPort(-1),
		"port too big":     WithPort(70000),
		"zero partitions":  WithDefaultPartitions(0),
		"topic partitions": WithTopics(0, "a"),
		"empty topic":      WithTopics(1, ""),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Start(opt)
			if err == nil {
				b.Close()
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("error %v does not wrap ErrInvalidOption", err)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
