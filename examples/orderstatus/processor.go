package orderstatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// DefaultWorkTimeout bounds one attempt at projecting a record.
const DefaultWorkTimeout = 10 * time.Second

// Option configures NewProjector.
type Option func(*Projector)

// WithClock sets the clock the backoff waits on (default
// driver.SystemClock).
func WithClock(c driver.Clock) Option { return func(p *Projector) { p.clock = c } }

// WithMeterProvider sets where the counters are registered (default: a
// no-op provider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(p *Projector) { p.meters = mp }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(p *Projector) { p.log = l } }

// WithWorkTimeout bounds each attempt at projecting a record (default
// DefaultWorkTimeout); an attempt that runs out of time is unavailable.
func WithWorkTimeout(d time.Duration) Option { return func(p *Projector) { p.workTimeout = d } }

// Projector settles the records of the events and retry topics: it projects
// them into the Store, produces them to the retry topic, or produces them to
// the dead-letter topic. It keeps no state between records and is safe for
// concurrent use by one goroutine per partition.
type Projector struct {
	settings    Settings
	store       Store
	producer    Producer
	clock       driver.Clock
	meters      metric.MeterProvider
	log         *slog.Logger
	workTimeout time.Duration
	counters    counters
}

// NewProjector returns a Projector. The settings must be valid (Validate is
// called, and its error returned); store and producer must not be nil.
func NewProjector(s Settings, store Store, producer Producer, opts ...Option) (*Projector, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if store == nil || producer == nil {
		return nil, fmt.Errorf("%w: a store and a producer are required", ErrInvalidSettings)
	}
	p := &Projector{settings: s, store: store, producer: producer,
		clock: driver.SystemClock{}, meters: noop.NewMeterProvider(), log: slog.Default(), workTimeout: DefaultWorkTimeout}
	for _, o := range opts {
		o(p)
	}
	if p.workTimeout <= 0 {
		return nil, fmt.Errorf("%w: work timeout %v is not positive", ErrInvalidSettings, p.workTimeout)
	}
	c, err := newCounters(p.meters)
	if err != nil {
		return nil, err
	}
	p.counters = c
	return p, nil
}

// Settings returns the settings of p.
func (p *Projector) Settings() Settings { return p.settings }

// Process settles one record of the events or retry topic. It returns nil
// when the record may be committed: projected, applied already, produced to
// the retry topic or produced to the dead-letter topic. It returns an error
// when the record must not be committed: ctx ended (shutdown) before it was
// settled, or the retry or dead-letter write failed. Row by row:
//
//   - malformed (bad retry headers, not an envelope, no order id) or of an
//     unknown type: a dead letter at once;
//   - projected or applied already: nil;
//   - unavailable or invalid-transition with attempts left: produced to the
//     retry topic one attempt higher, after waiting out its backoff;
//   - the same on its last attempt: a dead letter with that reason and
//     dlq.attempts.
func (p *Projector) Process(ctx context.Context, m kafka.Message) error {
	attempt, from, err := p.settings.Origin(m)
	if err != nil {
		return p.deadLetter(ctx, m, from, ReasonMalformed, err, 0)
	}
	e, reason, err := DecodeEvent(m.Value)
	if err != nil {
		return p.deadLetter(ctx, m, from, reason, err, 0)
	}
	if err := p.wait(ctx, m, attempt); err != nil {
		return err
	}
	reason, err = p.project(ctx, e)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("projecting %s: %w", from, context.Cause(ctx))
	}
	return p.retry(ctx, m, from, attempt, reason, err)
}

// project applies e within the work timeout and names the reason of a failure.
func (p *Projector) project(ctx context.Context, e Event) (string, error) {
	work, cancel := context.WithTimeout(ctx, p.workTimeout)
	defer cancel()
	result, err := p.store.Apply(work, e)
	if err != nil {
		if errors.Is(err, ErrInvalidTransition) {
			return ReasonInvalidTransition, err
		}
		return ReasonUnavailable, err
	}
	p.log.DebugContext(ctx, "orderstatus: event applied", "order", e.OrderID, "status", e.Status, "result", result.String())
	return "", nil
}

// wait blocks until a retried record's timestamp plus its backoff.
func (p *Projector) wait(ctx context.Context, m kafka.Message, attempt int) error {
	if attempt == 0 {
		return nil
	}
	d := p.settings.RetryAt(m.Time, attempt).Sub(p.clock.Now())
	if d <= 0 {
		return nil
	}
	t := p.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting to retry %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, context.Cause(ctx))
	case <-t.C():
		return nil
	}
}
