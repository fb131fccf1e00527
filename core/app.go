package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// App is the BabelQueue runtime: it publishes envelopes through a
// Transport and consumes them, routing each message to the Handler of its
// URN and settling it by the contract's retry, dead-letter and version
// rules. An App is safe for concurrent use.
type App struct {
	t      Transport
	popper DeferredHeaderPopper // t, when it offers deferred headers
	cfg    config
	cfgErr error

	mu       sync.RWMutex
	handlers map[string]Handler

	ackCtxs sync.Pool // of detached *CallContext, see ackWithin
}

// NewApp returns an App over t configured by opts (see options.go for every
// option and its default). A rejected option does not panic: its error,
// wrapping ErrInvalidOption, is returned by every later Publish,
// PublishWithHeaders, Consume and Drain. A nil t is reported the same way.
func NewApp(t Transport, opts ...Option) *App {
	a := &App{t: t, cfg: defaultConfig(), handlers: make(map[string]Handler)}
	var errs []error
	if t == nil {
		errs = append(errs, invalid("transport is nil"))
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&a.cfg); err != nil {
			errs = append(errs, err)
		}
	}
	a.cfgErr = errors.Join(errs...)
	a.popper, _ = t.(DeferredHeaderPopper)
	return a
}

// Transport returns the transport the App was built on.
func (a *App) Transport() Transport { return a.t }

// PublishOption configures one Publish or PublishWithHeaders call.
type PublishOption func(*publishConfig)

type publishConfig struct {
	queue    string
	delay    time.Duration
	delayed  bool
	envelope []MakeOption
}

// ToQueue publishes to queue instead of the App's default queue; it is
// also the envelope's meta.queue.
func ToQueue(queue string) PublishOption {
	return func(p *publishConfig) { p.queue = queue }
}

// WithDelay asks for the message to be delivered no sooner than d from now,
// through the transport's DelayedPublisher. A transport without one, or one
// that cannot honour d, makes the publish fail with an error matching
// ErrDelayUnsupported, having written nothing. Out-of-band headers
// (PublishWithHeaders) combine with a delay through the transport's
// DelayedHeaderPublisher; a transport without one makes that combination
// fail with ErrDelayUnsupported too, rather than drop the headers.
func WithDelay(d time.Duration) PublishOption {
	return func(p *publishConfig) { p.delay, p.delayed = d, true }
}

// WithEnvelopeOptions passes codec options to Make (a trace id, an id, a
// creation time). The queue is always the publish queue, whatever they say.
func WithEnvelopeOptions(opts ...MakeOption) PublishOption {
	return func(p *publishConfig) { p.envelope = append(p.envelope, opts...) }
}

// Publish makes an envelope of urn and data (see Make) and writes it to the
// default queue, or to the queue of a ToQueue option. It returns meta.id,
// the message's idempotency key, once the transport acknowledged the write.
func (a *App) Publish(ctx context.Context, urn string, data any, opts ...PublishOption) (string, error) {
	return a.PublishWithHeaders(ctx, urn, data, nil, opts...)
}

// PublishWithHeaders is Publish with out-of-band headers written beside the
// contract projection, through the transport's HeaderPublisher (a contract
// bq- header wins a key collision; blank keys and values are skipped). An
// empty headers map behaves exactly like Publish. A transport without
// HeaderPublisher makes a call with headers fail with an error matching
// errors.ErrUnsupported, having written nothing.
func (a *App) PublishWithHeaders(ctx context.Context, urn string, data any, headers map[string]string, opts ...PublishOption) (string, error) {
	if a.cfgErr != nil {
		return "", a.cfgErr
	}
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
	if IsBlank(queue) {
		return "", invalid("publish queue is blank")
	}
	env, err := Make(urn, data, append(p.envelope, WithQueue(queue))...)
	if err != nil {
		return "", fmt.Errorf("babelqueue: publish %s: %w", urn, err)
	}
	raw, err := env.Encode()
	if err != nil {
		return "", fmt.Errorf("babelqueue: publish %s: %w", urn, err)
	}
	body := string(raw)
	switch {
	case p.delayed && len(headers) > 0:
		dh, ok := a.t.(DelayedHeaderPublisher)
		if !ok {
			return "", fmt.Errorf("babelqueue: publish %s to %s: transport %T has no delayed publish with headers: %w", urn, queue, a.t, ErrDelayUnsupported)
		}
		err = dh.PublishDelayedWithHeaders(ctx, queue, body, p.delay, headers)
	case p.delayed:
		dp, ok := a.t.(DelayedPublisher)
		if !ok {
			return "", fmt.Errorf("babelqueue: publish %s to %s: transport %T has no delayed publish: %w", urn, queue, a.t, ErrDelayUnsupported)
		}
		err = dp.PublishDelayed(ctx, queue, body, p.delay)
	case len(headers) > 0:
		hp, ok := a.t.(HeaderPublisher)
		if !ok {
			return "", fmt.Errorf("babelqueue: publish %s to %s: transport %T has no header publish: %w", urn, queue, a.t, errors.ErrUnsupported)
		}
		err = hp.PublishWithHeaders(ctx, queue, body, headers)
	default:
		err = a.t.Publish(ctx, queue, body)
	}
	if err != nil {
		return "", fmt.Errorf("babelqueue: publish %s to %s: %w", urn, queue, err)
	}
	return env.Meta.ID, nil
}

// deadLetterQueue returns the dead-letter queue of queue.
func (a *App) deadLetterQueue(queue string) string {
	if a.cfg.deadLetterQueue != "" {
		return a.cfg.deadLetterQueue
	}
	return queue + a.cfg.deadLetterSuffix
}
