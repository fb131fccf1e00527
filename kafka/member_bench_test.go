package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// loopGroup is a group of one generation holding partitions 0-2 of one
// topic, whose readers return keyed copies of one record forever at
// rising offsets and whose commits are dropped: it measures the member
// reader's and the App's own cost per record, without kafka-go.
type loopGroup struct {
	topic string
	msg   kafkago.Message
	keys  [][]byte

	once   sync.Once
	closed chan struct{}
	gen    *loopGen
}

type loopGen struct {
	g      *loopGroup
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newLoopGroup(topic string, msg kafkago.Message, keys int) *loopGroup {
	g := &loopGroup{topic: topic, msg: msg, closed: make(chan struct{})}
	for i := range keys {
		g.keys = append(g.keys, []byte(fmt.Sprintf("key-%d", i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.gen = &loopGen{g: g, ctx: ctx, cancel: cancel}
	return g
}

func (g *loopGroup) Next(ctx context.Context) (groupGeneration, error) {
	select {
	case <-g.closed:
		return nil, kafkago.ErrGroupClosed
	default:
	}
	gen := g.gen
	if gen == nil {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-g.closed:
			return nil, kafkago.ErrGroupClosed
		}
	}
	g.gen = nil
	return gen, nil
}

func (g *loopGroup) Close() error {
	g.once.Do(func() { close(g.closed) })
	return nil
}

func (gen *loopGen) Assignments() map[string][]kafkago.PartitionAssignment {
	return map[string][]kafkago.PartitionAssignment{gen.g.topic: {{ID: 0}, {ID: 1}, {ID: 2}}}
}

func (gen *loopGen) Start(fn func(ctx context.Context)) {
	gen.wg.Add(1)
	go func() {
		defer gen.wg.Done()
		fn(gen.ctx)
	}()
	go func() {
		<-gen.g.closed
		gen.cancel()
	}()
}

func (gen *loopGen) CommitOffsets(map[string]map[int]int64) error { return nil }

func (gen *loopGen) OpenPartition(topic string, partition int, offset int64, _ int) partitionReader {
	return &loopPartition{g: gen.g, partition: partition, next: max(offset, 0)}
}

type loopPartition struct {
	g         *loopGroup
	partition int
	next      int64
}

func (p *loopPartition) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	if err := ctx.Err(); err != nil {
		return kafkago.Message{}, err
	}
	m := p.g.msg
	m.Partition, m.Offset = p.partition, p.next
	m.Key = p.g.keys[(int(p.next)%(len(p.g.keys)/3))*3+p.partition%3] // each partition its own keys
	p.next++
	return m, nil
}

func (p *loopPartition) Close() error { return nil }

// BenchmarkMemberAppConcurrent measures the member reader and an App with
// 64 handlers at once (OrderKey, 200 keys over 3 partitions) and a no-op
// handler, per record, without the broker client: msg/s, the process CPU
// time per record (cpu-ns/msg) and the allocations.
func BenchmarkMemberAppConcurrent(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) { benchMemberApp(b, n) })
	}
}

func benchMemberApp(b *testing.B, handlers int) {
	tr := loopTransport(b)
	// Stopping hands the waiting records back, which fails the Acks of
	// the same partitions still in flight: expected, and not logged here.
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(time.Second),
		babelqueue.WithConcurrency(handlers, babelqueue.OrderKey), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	total := int64(max(b.N, 1000))
	var n atomic.Int64
	finished := make(chan struct{})
	app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error {
		if n.Add(1) == total {
			close(finished)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := bqtest.ProcessCPU()
	start := time.Now()
	go func() { errc <- app.Consume(ctx, "orders") }()
	<-finished
	took, cpu := time.Since(start), bqtest.ProcessCPU()-cpu0
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total)/took.Seconds(), "msg/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(total), "cpu-ns/msg")
}

// loopTransport is a Transport in group "g" whose member reads a looping
// group of one envelope over 200 keys (newLoopGroup); it is closed with b.
func loopTransport(b *testing.B) *Transport {
	body := envelope(&testing.T{}, 0)
	hs, _ := projection(body, t0)
	msg := kafkago.Message{Topic: "orders", Value: []byte(body), Headers: toKafkaHeaders(hs)}
	group := newLoopGroup("orders", msg, 200)
	tr, err := New(WithWriter(&fakeWriter{log: newFakeLog()}), WithGroupID("g"),
		func(c *config) { c.memberFactory = func(string, []string) groupMember { return group } })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Close() })
	return tr
}

// BenchmarkMemberPopAck measures Pop and Ack of a group member, one
// record at a time, without the broker client: the transport's own cost
// per record (cpu-ns/msg) for a consumer that uses the transport directly.
func BenchmarkMemberPopAck(b *testing.B) {
	tr := loopTransport(b)
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := bqtest.ProcessCPU()
	for b.Loop() {
		m, err := tr.Pop(ctx, "orders", time.Second)
		if err != nil || m == nil {
			b.Fatal(m, err)
		}
		if err := tr.Ack(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((bqtest.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/msg")
}
