package kafka

import (
	"context"
	"io"
	"log/slog"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

var _ conformance.PoisonShaper = conformanceBinding{}

// PoisonBody runs "babelqueue_go.poison_shape" through the transport: body
// is a record of the topic orders, consumed by a babelqueue.App
// (dead-lettering on, the clock at dl.FailedAt) over the in-memory writer
// and reader; the result is the value it wrote to orders.dlq with the
// App's own dead_letter block swapped for dl's (corebinding.SwapPoisonBlock).
// A failure fails the test and returns nil.
func (b conformanceBinding) PoisonBody(body []byte, dl conformance.DeadLetter) []byte {
	b.t.Helper()
	const topic = "orders"
	m, err := newMem(WithMaxWaitTime(20 * time.Millisecond))
	if err != nil {
		b.t.Fatal(err)
	}
	defer m.tr.Close()
	m.log.append(topic, 0, kafkago.Message{Key: []byte("k"), Value: body})
	app, err := babelqueue.NewApp(m.tr,
		babelqueue.WithDefaultQueue(topic),
		babelqueue.WithDeadLetter(true),
		babelqueue.WithPollTimeout(20*time.Millisecond),
		babelqueue.WithClock(bqtest.NewFakeClock(time.UnixMilli(dl.FailedAt))),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := app.Drain(ctx, topic); err != nil {
		b.t.Fatalf("drain: %v", err)
	}
	var dead [][]byte
	for _, w := range m.written() {
		if w.Topic == topic+".dlq" {
			dead = append(dead, w.Value)
		}
	}
	if len(dead) != 1 {
		b.t.Errorf("poison %q: %d dead letters written, want 1", body, len(dead))
		return nil
	}
	out, err := corebinding.SwapPoisonBlock(dead[0], topic, dl)
	if err != nil {
		b.t.Error(err)
	}
	return out
}
