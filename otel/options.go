package otel

import (
	"fmt"
	"time"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Version is the version of this module, reported as the instrumentation
// scope version.
const Version = "0.1.0"

// Defaults of the options. Every option and its default:
//
//	option                 default
//	WithTracerProvider     the global TracerProvider (otel.GetTracerProvider)
//	WithMeterProvider      the global MeterProvider (otel.GetMeterProvider)
//	WithPropagator         W3C trace context (propagation.TraceContext)
//	WithSystem             DefaultSystem
//	WithLinkMemory         DefaultLinkMemory attempts remembered for retry links
const (
	DefaultSystem     = "babelqueue"
	DefaultLinkMemory = 10000
)

// Option configures New.
type Option func(*config) error

type config struct {
	tp         trace.TracerProvider
	mp         metric.MeterProvider
	propagator propagation.TextMapPropagator
	system     string
	linkMemory int
	now        func() time.Time
}

func defaultConfig() config {
	return config{
		propagator: propagation.TraceContext{},
		system:     DefaultSystem,
		linkMemory: DefaultLinkMemory,
		now:        time.Now,
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("otel: %s: %w", fmt.Sprintf(format, args...), babelqueue.ErrInvalidOption)
}

// WithTracerProvider sets the TracerProvider spans are made with. nil is
// rejected.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return invalid("nil TracerProvider")
		}
		c.tp = tp
		return nil
	}
}

// WithMeterProvider sets the MeterProvider of the instruments. nil is
// rejected.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return invalid("nil MeterProvider")
		}
		c.mp = mp
		return nil
	}
}

// WithPropagator sets the propagator that writes and reads the trace
// context headers. nil is rejected.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) error {
		if p == nil {
			return invalid("nil propagator")
		}
		c.propagator = p
		return nil
	}
}

// WithSystem sets messaging.system ("kafka", "pulsar", ...) of every span
// and measurement; the hooks cannot see which binding an App runs on. Use
// one Telemetry per binding when a process runs several. A blank value is
// rejected.
func WithSystem(system string) Option {
	return func(c *config) error {
		if wire.IsBlank(system) {
			return invalid("blank messaging system")
		}
		c.system = system
		return nil
	}
}

// WithLinkMemory sets how many failed attempts the hooks remember by
// meta.id, for links when a retry carries no HeaderRetryLink. That is a
// broker redelivery, such as a Pulsar negative acknowledgement; the next
// attempt's span then links to the failed one. Zero turns the memory off; a
// negative value is rejected.
func WithLinkMemory(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("negative link memory %d", n)
		}
		c.linkMemory = n
		return nil
	}
}

func globalTracerProvider() trace.TracerProvider { return global.GetTracerProvider() }
func globalMeterProvider() metric.MeterProvider  { return global.GetMeterProvider() }
