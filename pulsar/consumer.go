package pulsar

import (
	"context"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Consumer consumes one queue of a Transport with a handler per URN. It is
// the Go counterpart of the Node adapter's consumer, built on
// babelqueue.App: routing on the bq-job property (falling back to the
// body's URN), the routing-mismatch and schema-version hooks, poison and
// version-gate handling, retries (a republish or a negative
// acknowledgement, see Transport.Retry) and dead letters to "<queue>.dlq"
// all behave as the App documents.
type Consumer struct {
	app   *babelqueue.App
	queue string
	err   error // the rejected options, returned by Run
}

// NewConsumer returns a Consumer of queue. The App under it gets, before
// opts, the max attempts the Transport was built with (WithMaxAttempts; so
// the construction check of New and the App's retry decision agree) and
// the Transport's max wait as its poll timeout. opts may set any other App
// option, such as babelqueue.WithOnRoutingMismatch,
// babelqueue.WithOnSchemaVersionRejected, babelqueue.WithOnError or
// babelqueue.WithDeadLetter. Option errors, and a handler URN that
// App.Handle rejects, surface from Run.
func NewConsumer(tr *Transport, queue string, handlers map[string]babelqueue.Handler, opts ...babelqueue.Option) *Consumer {
	var base []babelqueue.Option
	if tr != nil {
		base = []babelqueue.Option{
			babelqueue.WithMaxAttempts(tr.cfg.maxAttempts),
			babelqueue.WithPollTimeout(tr.cfg.maxWait),
			babelqueue.WithDefaultQueue(queue),
		}
	}
	var t babelqueue.Transport
	if tr != nil {
		t = tr
	}
	app, err := babelqueue.NewApp(t, append(base, opts...)...)
	if err != nil {
		return &Consumer{queue: queue, err: err}
	}
	for urn, h := range handlers {
		app.Handle(urn, h)
	}
	return &Consumer{app: app, queue: queue}
}

// Run consumes the queue until ctx ends or the Transport fails in a way a
// retry cannot mend; a bad message never stops it. It returns nil when ctx
// ended, else the Transport's error.
//
// A ctx cancelled or past its deadline is a normal stop (the stop rule of
// package babelqueue).
func (c *Consumer) Run(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	return c.app.Consume(ctx, c.queue)
}

// App returns the App under the Consumer, for publishing or for handlers
// added later; nil when its options were rejected (Run returns why).
func (c *Consumer) App() *babelqueue.App { return c.app }
