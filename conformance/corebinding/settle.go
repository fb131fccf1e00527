package corebinding

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/babelqueue/babelqueue-go/conformance"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

var _ conformance.VersionGateSettler = Binding{}

// settlePollTimeout bounds how long Drain waits on an empty queue.
const settlePollTimeout = 20 * time.Millisecond

// SettleVersionGated delivers in through a babelqueue.App over an
// InMemoryTransport (the core runtime's reference transport) and reports
// what the runtime did. A redelivery count is built by popping and
// negatively acknowledging the message that many times first.
func (Binding) SettleVersionGated(ctx context.Context, in conformance.GatedDelivery) (conformance.GatedOutcome, error) {
	var out conformance.GatedOutcome
	t := bqtest.NewInMemoryTransport(bqtest.WithMemoryFeatures(driver.Features{
		Keys: true, Headers: true, Delay: true, HandBack: driver.HandBackNack}))
	defer t.Close()

	headers := make(map[string]string, len(in.Headers))
	for _, h := range in.Headers {
		headers[h.Key] = h.Value
	}
	// A forward writes the headers exactly as given, as a foreign
	// producer's record carries them (a publish would project
	// bq-schema-version from the body and win the collision).
	if _, err := t.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: in.Queue, Body: string(in.Body), Headers: headers}); err != nil {
		return out, fmt.Errorf("corebinding: publish: %w", err)
	}
	for range in.RedeliveryCount {
		msg, err := t.Pop(ctx, in.Queue, time.Second)
		if err != nil || msg == nil {
			return out, fmt.Errorf("corebinding: pop for redelivery: %v", err)
		}
		if err := t.HandBack(ctx, msg); err != nil {
			return out, fmt.Errorf("corebinding: nack: %w", err)
		}
	}

	hookCalls := 0
	opts := []babelqueue.Option{
		babelqueue.WithDefaultQueue(in.Queue),
		babelqueue.WithDeadLetter(in.DeadLetter),
		babelqueue.WithPollTimeout(settlePollTimeout),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		babelqueue.WithOnSchemaVersionRejected(func(version, _ string) {
			hookCalls++
			out.HookVersion = version
		}),
	}
	if in.MaxAttempts > 0 {
		opts = append(opts, babelqueue.WithMaxAttempts(in.MaxAttempts))
	}
	if in.UnknownURNStrategy != "" {
		opts = append(opts, babelqueue.WithUnknownURNStrategy(babelqueue.UnknownURNStrategy(in.UnknownURNStrategy)))
	}
	// A consumer accepts any job that is not blank, so the handler of a
	// fixture's job is registered whatever its shape.
	app, err := babelqueue.NewApp(t, append(opts, babelqueue.WithLegacyURNs())...)
	if err != nil {
		return out, err
	}
	handler := func(context.Context, *babelqueue.Envelope) error {
		out.HandlerCalled = true
		return fmt.Errorf("the handler of a version-gated message ran")
	}
	if p := wire.ProjectBody(in.Body); !wire.IsBlank(p.Job) {
		app.Handle(p.Job, handler)
	}

	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := app.Drain(ctx, in.Queue); err != nil {
		return out, fmt.Errorf("corebinding: drain: %w", err)
	}
	out.Acked = t.Acked(in.Queue) > 0
	out.Retried = hookCalls > 1 || t.Len(in.Queue) > 0 || t.InFlight(in.Queue) > 0
	for _, q := range t.Queues() {
		if q == in.Queue {
			continue
		}
		for _, m := range t.Messages(q) {
			rec := conformance.KafkaRecord{Topic: q, Key: m.Key, Value: []byte(m.Body)}
			keys := make([]string, 0, len(m.Headers))
			for k := range m.Headers {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				rec.Headers = append(rec.Headers, conformance.Header{Key: k, Value: m.Headers[k]})
			}
			out.Written = append(out.Written, rec)
		}
	}
	return out, nil
}
