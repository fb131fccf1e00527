package idempotency

import (
	"log/slog"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
)

// Defaults of the Wrap options. Every option and its default:
//
//	option          default
//	WithLease       DefaultLease (5m a claim holds an id while its handler runs)
//	WithTTL         DefaultTTL (7 days a succeeded id is remembered; 0 or less: until forgotten)
//	WithBusyWait    DefaultBusyWait (30s), polling every DefaultBusyPoll (50ms)
//	WithClock       driver.SystemClock{}
//	WithLogger      slog.Default() at each log call
//
// An invalid value is recorded by its option; Wrap reports every problem
// together (errors.Join), each matching babelqueue.ErrInvalidOption.
const (
	DefaultLease    = 5 * time.Minute
	DefaultTTL      = 7 * 24 * time.Hour
	DefaultBusyWait = 30 * time.Second
	DefaultBusyPoll = 50 * time.Millisecond
)

type config struct {
	lease, ttl, busyWait, busyPoll time.Duration
	clock                          driver.Clock
	logger                         *slog.Logger
	errs                           option.Errors
}

func (c *config) fail(format string, args ...any) { c.errs.Fail(format, args...) }

// Option configures Wrap.
type Option func(*config)

// WithLease sets how long a claim holds an id while its handler runs.
// Choose it longer than the slowest handler: a handler still running when
// its lease passes may run beside a redelivery.
func WithLease(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond {
			c.fail("lease %v is shorter than a millisecond", d)
			return
		}
		c.lease = d
	}
}

// WithTTL sets how long a succeeded id is remembered (0 or less: until
// forgotten). Choose it longer than the broker's longest redelivery window.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithBusyWait sets how long a delivery waits, polling every poll, while
// another delivery holds the id's lease. When the other one succeeds the
// delivery is skipped; when it fails the delivery claims and runs; when
// the wait ends first the wrapped handler returns ErrInFlight.
func WithBusyWait(wait, poll time.Duration) Option {
	return func(c *config) {
		if wait < 0 || poll <= 0 {
			c.fail("busy wait %v polling every %v: want wait >= 0 and poll > 0", wait, poll)
			return
		}
		c.busyWait, c.busyPoll = wait, poll
	}
}

// WithClock sets the clock of the busy wait.
func WithClock(clock driver.Clock) Option {
	return func(c *config) { option.NonNil(&c.errs, &c.clock, "clock", clock) }
}

// WithLogger sets the logger of store failures that do not fail the
// delivery.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { option.NonNil(&c.errs, &c.logger, "logger", l) }
}
