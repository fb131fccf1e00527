package pulsar

import (
	"time"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

var _ conformance.PoisonShaper = conformanceBinding{}

// PoisonBody runs "babelqueue_go.poison_shape" through the binding: body
// is delivered to a Consumer of orders (dead-lettering on, the clock at
// dl.FailedAt); the result is the payload it sent to orders.dlq with the
// App's own dead_letter block swapped for dl's
// (corebinding.SwapPoisonBlock). A failure fails the test and returns nil.
func (b conformanceBinding) PoisonBody(body []byte, dl conformance.DeadLetter) []byte {
	b.t.Helper()
	d := b.drainOne(&fakeMessage{payload: body, props: map[string]string{}, key: "k"}, nil, nil,
		babelqueue.WithDeadLetter(true), babelqueue.WithClock(bqtest.NewFakeClock(time.UnixMilli(dl.FailedAt))))
	sent := d.s.fc.producer("orders.dlq").messages()
	if len(sent) != 1 {
		b.t.Errorf("poison %q: %d dead letters sent, want 1", body, len(sent))
		return nil
	}
	out, err := corebinding.SwapPoisonBlock(sent[0].Payload, "orders", dl)
	if err != nil {
		b.t.Error(err)
	}
	return out
}
