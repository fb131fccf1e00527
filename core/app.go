package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
	"unsafe"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// App publishes envelopes through a Transport and consumes them, routing
// each message to the Handler of its URN. It settles every message by the
// contract's retry, dead-letter and version rules. An App is safe for
// concurrent use.
type App struct {
	t        Transport
	features driver.Features // t.Features(), read once
	cfg      config

	mu       sync.RWMutex
	handlers map[string]Handler
	rejected []error // Handle calls refused for their URN; Consume and Drain report them

	ackCtxs sync.Pool // of detached *driver.CallContext, see ackWithin
}

// NewApp returns an App over t configured by opts (see options.go for every
// option and its default). It reports every configuration problem at once,
// joined, each wrapping ErrInvalidOption: a nil t, a rejected option value,
// options that contradict each other. A nil Option is ignored.
func NewApp(t Transport, opts ...Option) (*App, error) {
	a := &App{t: t, cfg: defaultConfig(), handlers: make(map[string]Handler)}
	if t == nil {
		a.cfg.fail("transport is nil")
	}
	for _, o := range opts {
		if o != nil {
			o(&a.cfg)
		}
	}
	a.cfg.check()
	if err := errors.Join(a.cfg.errs...); err != nil {
		return nil, err
	}
	a.cfg.errs = nil
	a.features = t.Features()
	return a, nil
}

// Transport returns the transport the App was built on.
func (a *App) Transport() Transport { return a.t }

// PublishOption configures one Publish or PublishWithHeaders call.
type PublishOption func(*publishConfig)

type publishConfig struct {
	queue    string
	delay    time.Duration
	key      []byte
	envelope []MakeOption
}

// ToQueue publishes to queue instead of the App's default queue; it is
// also the envelope's meta.queue.
func ToQueue(queue string) PublishOption {
	return func(p *publishConfig) { p.queue = queue }
}

// WithDelay asks for the message to be delivered no sooner than d from
// now. A transport without the Delay feature, or one that cannot honour d,
// makes the publish fail with an error matching ErrDelayUnsupported,
// having written nothing. d <= 0 means no delay.
func WithDelay(d time.Duration) PublishOption {
	return func(p *publishConfig) { p.delay = d }
}

// WithKey sets the message key, written byte for byte and kept on every
// retry, dead letter and redrive. It is the Kafka record key, the Pulsar
// key and ordering key. A nil key means none; an empty one is kept apart
// from none. A transport without the Keys feature makes the publish fail
// with an error matching errors.ErrUnsupported, having written nothing.
func WithKey(key []byte) PublishOption {
	return func(p *publishConfig) {
		if key == nil {
			p.key = nil
			return
		}
		p.key = append([]byte{}, key...)
	}
}

// WithEnvelopeOptions passes codec options to Make (a trace id, an id, a
// creation time). The queue is always the publish queue, whatever they say.
func WithEnvelopeOptions(opts ...MakeOption) PublishOption {
	return func(p *publishConfig) { p.envelope = append(p.envelope, opts...) }
}

// Publish makes an envelope of urn and data (see Make) and writes it to the
// default queue, or to the queue of a ToQueue option. It returns meta.id,
// the message's idempotency key, once the transport acknowledged the write.
//
// An error matching ErrPublishUnknown (an *UnknownPublishError) means the
// outcome is unknown: the envelope may be stored. Pass that error to
// Republish to write the same envelope, under the same meta.id, again;
// any other error means nothing was written.
func (a *App) Publish(ctx context.Context, urn string, data any, opts ...PublishOption) (string, error) {
	return a.PublishWithHeaders(ctx, urn, data, nil, opts...)
}

// PublishWithHeaders is Publish with out-of-band headers written beside the
// contract projection (a contract bq- header wins a key collision; blank
// keys and values are skipped). An empty headers map behaves exactly like
// Publish. A transport without the Headers feature makes a call with
// headers fail with an error matching errors.ErrUnsupported, having
// written nothing. Its errors are those of Publish: one matching
// ErrPublishUnknown leaves the outcome unknown (see Republish).
func (a *App) PublishWithHeaders(ctx context.Context, urn string, data any, headers map[string]string, opts ...PublishOption) (string, error) {
	var p publishConfig
	for _, o := range opts {
		if o != nil {
			o(&p)
		}
	}
	queue := a.cfg.defaultQueue
	if p.queue != "" {
		queue = p.queue
	}
	if wire.IsBlank(queue) {
		return "", invalid("publish queue is blank")
	}
	if err := wire.ValidURN(urn); err != nil {
		return "", within("publish to "+queue, err) // an argument, not an option
	}
	switch {
	case p.delay > 0 && !a.features.Delay:
		return "", fmt.Errorf("babelqueue: publish %s to %s: transport %T has no delayed publish: %w", urn, queue, a.t, ErrDelayUnsupported)
	case len(headers) > 0 && !a.features.Headers:
		return "", fmt.Errorf("babelqueue: publish %s to %s: transport %T writes no headers: %w", urn, queue, a.t, errors.ErrUnsupported)
	case p.key != nil && !a.features.Keys:
		return "", fmt.Errorf("babelqueue: publish %s to %s: transport %T writes no keys: %w", urn, queue, a.t, errors.ErrUnsupported)
	}
	env, err := makeFor(queue, urn, data, p.envelope)
	if err != nil {
		return "", within("publish to "+queue, err) // Make names the URN
	}
	if err := a.validatePayload(urn, env); err != nil {
		return "", within("publish "+urn+" to "+queue, err)
	}
	if env, err = a.protectOutgoing(urn, env); err != nil {
		return "", fmt.Errorf("babelqueue: publish %s to %s: %w", urn, queue, err)
	}
	raw, err := env.Encode()
	if err != nil {
		return "", within("publish "+urn+" to "+queue, err)
	}
	// raw is not written again: the body views it without a copy.
	out := &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: unsafe.String(unsafe.SliceData(raw), len(raw)), Key: p.key, Headers: headers, Delay: p.delay}
	if proj, ok := wire.ProjectFresh(env); ok {
		driver.SetProjection(out, proj) // the binding need not parse the body again
	}
	if len(a.cfg.hooks.publish) > 0 {
		// The hooks may add headers; the caller's map stays untouched.
		out.Headers = maps.Clone(headers)
	}
	if _, err := a.send(ctx, out); err != nil {
		if errors.Is(err, ErrPublishUnknown) {
			return "", newUnknownPublishError(out, env.Meta.ID, err)
		}
		return "", within("publish "+urn+" to "+queue, err)
	}
	return env.Meta.ID, nil
}

// makeFor is Make of urn and data with opts and then WithQueue(queue);
// without opts it allocates no option slice.
func makeFor(queue, urn string, data any, opts []MakeOption) (*Envelope, error) {
	if len(opts) == 0 {
		return Make(urn, data, WithQueue(queue))
	}
	return Make(urn, data, append(opts[:len(opts):len(opts)], WithQueue(queue))...)
}

// send makes one write through the transport, between the publish hooks.
func (a *App) send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	if len(a.cfg.hooks.publish) == 0 && len(a.cfg.hooks.published) == 0 {
		return a.t.Send(ctx, out)
	}
	ctx = a.cfg.hooks.onPublish(ctx, out)
	r, err := a.t.Send(ctx, out)
	a.cfg.hooks.onPublished(ctx, out, r, err)
	return r, err
}

// deadLetterQueue returns the dead-letter queue of queue.
func (a *App) deadLetterQueue(queue string) string {
	if a.cfg.deadLetterQueue != "" {
		return a.cfg.deadLetterQueue
	}
	return queue + a.cfg.deadLetterSuffix
}

// Redrive runs Redrive on the App's transport, reporting every examined
// message to the App's RedriveHooks as well as to opts.
func (a *App) Redrive(ctx context.Context, dlq string, opts ...redrive.Option) (*redrive.Result, error) {
	if len(a.cfg.hooks.redrive) > 0 {
		hooks := make([]Hook, len(a.cfg.hooks.redrive))
		for i, h := range a.cfg.hooks.redrive {
			hooks[i] = h
		}
		opts = append(opts[:len(opts):len(opts)], redrive.WithHooks(hooks...))
	}
	return redrive.Run(ctx, a.t, dlq, opts...)
}
