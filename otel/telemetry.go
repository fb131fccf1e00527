package otel

import (
	"errors"

	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// Telemetry holds the tracer, the instruments and the propagator that its
// hooks and handler middlewares share. One Telemetry serves any number of
// Apps, redrive runs and re-injectors of one messaging system; it is safe
// for concurrent use.
type Telemetry struct {
	cfg    config
	tracer trace.Tracer
	m      *instruments
	attrs  *attrCache
	prop   propagation.TextMapPropagator
	links  *linkMemory
	hooks  Hooks
	// backlogs is the latest re-injector backlog sample (backlog.go).
	backlogs *backlogs
}

// New returns a Telemetry configured by opts (see the defaults in
// options.go). Every rejected option is reported, joined with errors.Join,
// each wrapping babelqueue.ErrInvalidOption; a failure to create an
// instrument is returned as well.
func New(opts ...Option) (*Telemetry, error) {
	cfg := defaultConfig()
	var errs []error
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	tp := cfg.tp
	if tp == nil {
		tp = globalTracerProvider()
	}
	m, err := newInstruments(cfg.mp)
	if err != nil {
		return nil, err
	}
	b := &backlogs{tiers: make(map[backlogKey]driver.ReinjectBacklog)}
	if err := registerBacklogGauges(m.meter, cfg.system, b); err != nil {
		return nil, err
	}
	t := &Telemetry{
		cfg:      cfg,
		tracer:   tp.Tracer(scopeName, trace.WithInstrumentationVersion(Version), trace.WithSchemaURL(semconv.SchemaURL)),
		m:        m,
		attrs:    newAttrCache(cfg.system),
		prop:     cfg.propagator,
		links:    newLinkMemory(cfg.linkMemory),
		backlogs: b,
	}
	t.hooks.t = t
	return t, nil
}

// Hooks returns the one value to register with an App, a redrive run and a
// binding's re-injector. Those take it through babelqueue.WithHooks,
// redrive.WithHooks (a Redrive run on a bare transport) and a binding's
// re-injector hooks option. Through it Telemetry traces and counts what
// those report, and nothing else: every outcome comes from the App's own
// babelqueue.Settlement, never from the traffic.
func (t *Telemetry) Hooks() *Hooks { return &t.hooks }

var _ babelqueue.Hook = (*Hooks)(nil)
