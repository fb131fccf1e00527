package otel

import (
	"sync/atomic"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry holds the tracer, the instruments and the propagator that the
// transport decorators and handler middlewares it makes share. One
// Telemetry serves any number of transports and handlers; it is safe for
// concurrent use.
type Telemetry struct {
	cfg     config
	tracer  trace.Tracer
	metrics *Metrics
	prop    propagation.TextMapPropagator
	// middlewareUsed is set once Middleware wrapped a handler: from then
	// on a delivery whose handler never ran is known to have had no
	// handler (unknown URN).
	middlewareUsed atomic.Bool
	// reg tracks the open deliveries of every decorated transport, so
	// that Middleware finds the span of the delivery it runs for.
	reg *registry
}

// New returns a Telemetry configured by opts (see the defaults in
// options.go). A rejected option gives an error wrapping
// babelqueue.ErrInvalidOption; a failure to create an instrument is
// returned as well.
func New(opts ...Option) (*Telemetry, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	tp := cfg.tp
	if tp == nil {
		tp = globalTracerProvider()
	}
	m, err := NewMetrics(cfg.mp)
	if err != nil {
		return nil, err
	}
	return &Telemetry{
		cfg:     cfg,
		tracer:  tp.Tracer(meterName, trace.WithInstrumentationVersion(Version), trace.WithSchemaURL(semconv.SchemaURL)),
		metrics: m,
		prop:    cfg.propagator,
		reg:     newRegistry(cfg.maxOpen, cfg.linkMemory),
	}, nil
}

// Metrics returns the instruments, for the events only a binding or a
// tool sees (re-injection lag, redrive on a bare transport).
func (t *Telemetry) Metrics() *Metrics { return t.metrics }

// Transport returns t wrapped in a decorator that traces and measures every
// publish and delivery (see the package documentation). The decorator has
// exactly the optional babelqueue capabilities of t (HeaderPublisher,
// KeyedRepublisher, HeaderRepublisher, Forwarder, Rewinder,
// NegativeAcknowledger, DelayedPublisher, DelayedHeaderPublisher,
// TieredRetrier, Retrier), so an App
// over it takes the same paths as over t. Methods of t outside the
// babelqueue contract (Close, PublishBatch, ...) are reached through the
// decorator's Unwrap method (see Unwrap). A nil inner gives nil.
func (t *Telemetry) Transport(inner babelqueue.Transport) babelqueue.Transport {
	if inner == nil {
		return nil
	}
	system := t.cfg.system
	if system == "" {
		system = inferSystem(inner)
	}
	d := &transport{tel: t, inner: inner, system: system}
	d.outer = wrapCapabilities(d)
	return d.outer
}

// Unwrap returns the transport a decorator made by Telemetry.Transport
// wraps, or t itself when it is not such a decorator.
func Unwrap(t babelqueue.Transport) babelqueue.Transport {
	if u, ok := t.(interface{ Unwrap() babelqueue.Transport }); ok {
		return u.Unwrap()
	}
	return t
}
