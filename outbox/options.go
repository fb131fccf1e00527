package outbox

import (
	"log/slog"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/outbox/internal/plain"
)

// Defaults of the outbox and relay options. Every option and its default:
//
//	option             default
//	WithTable          DefaultTable ("bq_outbox"), a plain identifier
//	WithClock          time.Now
//	WithRelayID        a random id (the relay's name in locked_by)
//	WithBatchSize      DefaultBatchSize (500 rows per claim)
//	WithInFlight       DefaultInFlight (4 workers in Run, each with one claim in flight)
//	WithParallelism    DefaultParallelism (64 sends at once per claim, when the sender does not batch)
//	WithLease          DefaultLease (30s; SQLite: how long claimed rows are the relay's)
//	WithPoll           DefaultPoll (200ms wait after a claim that found nothing)
//	WithBackoff        DefaultMinBackoff (500ms) doubled per attempt, at most DefaultMaxBackoff (1m)
//	WithSendTimeout    DefaultSendTimeout (30s per batch)
//	WithLogger         slog.Default() at each log call
//
// An invalid value is recorded by its option; New and NewRelay report every
// problem together, each matching babelqueue.ErrInvalidOption.
const (
	DefaultTable       = "bq_outbox"
	DefaultBatchSize   = 500
	DefaultInFlight    = 4
	DefaultParallelism = 64
	DefaultLease       = 30 * time.Second
	DefaultPoll        = 200 * time.Millisecond
	DefaultMinBackoff  = 500 * time.Millisecond
	DefaultMaxBackoff  = time.Minute
	DefaultSendTimeout = 30 * time.Second
)

// config holds the options of an Outbox.
type config struct {
	table string
	clock driver.Clock
	errs  option.Errors
}

// Option configures an Outbox.
type Option func(*config)

// WithTable sets the table name, a plain identifier.
func WithTable(name string) Option {
	return func(c *config) { option.Identifier(&c.errs, &c.table, "table name", name) }
}

// WithClock sets the source of time (the App's driver.Clock, so a
// test can share one bqtest.FakeClock).
func WithClock(clock driver.Clock) Option {
	return func(c *config) { option.NonNil(&c.errs, &c.clock, "clock", clock) }
}

// relayConfig holds the options of a Relay.
type relayConfig struct {
	id                     string
	batch, parallel        int
	inflight               int
	lease, poll            time.Duration
	minBackoff, maxBackoff time.Duration
	sendTimeout            time.Duration
	logger                 *slog.Logger
	plain                  plain.Forms // set by the bench only
	errs                   option.Errors
}

// init sets the bench's seam, internal/plain's option.
func init() {
	plain.Option = func(f plain.Forms) any { return RelayOption(func(c *relayConfig) { c.plain = f }) }
}

func (c *relayConfig) fail(format string, args ...any) { c.errs.Fail(format, args...) }

// RelayOption configures a Relay.
type RelayOption func(*relayConfig)

// WithRelayID names the relay in the table's locked_by column.
func WithRelayID(id string) RelayOption {
	return func(c *relayConfig) {
		if id == "" {
			c.fail("empty relay id")
			return
		}
		c.id = id
	}
}

// WithBatchSize sets how many rows one claim takes at most.
//
// A claim sends its rows in rounds, one SendBatch each when the sender
// batches: the oldest claimed row of every key, then the next one of
// every key, and so on. On SQLite a claim takes one row per key.
func WithBatchSize(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.batch, "batch size", n) }
}

// WithInFlight sets how many workers Run keeps, each claiming, sending and
// settling one batch at a time.
//
// While one worker sends, the others claim or settle, so database round
// trips overlap sends. On PostgreSQL each worker's claim takes up to 1/n of
// the table's 64 key buckets.
func WithInFlight(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.inflight, "batches in flight", n) }
}

// WithParallelism bounds the sends in flight per batch when the sender
// does not batch.
func WithParallelism(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.parallel, "parallelism", n) }
}

// WithLease sets how long a SQLite claim's rows stay the relay's; a relay
// that dies leaves its rows to the others once it ends.
//
// It must exceed the send timeout. On PostgreSQL a claim holds its keys by
// advisory locks of an open transaction instead, released at once when the
// relay's connection ends.
func WithLease(d time.Duration) RelayOption {
	return func(c *relayConfig) {
		if d < time.Millisecond {
			c.fail("lease %v is shorter than a millisecond", d)
			return
		}
		c.lease = d
	}
}

// WithPoll sets the wait after a claim that found nothing.
func WithPoll(d time.Duration) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.poll, "poll interval", d) }
}

// WithBackoff sets the retry delay of a failed row: minDelay doubled per
// attempt, at most maxDelay.
func WithBackoff(minDelay, maxDelay time.Duration) RelayOption {
	return func(c *relayConfig) {
		if minDelay <= 0 || maxDelay < minDelay {
			c.fail("backoff %v..%v: want 0 < min <= max", minDelay, maxDelay)
			return
		}
		c.minBackoff, c.maxBackoff = minDelay, maxDelay
	}
}

// WithSendTimeout bounds the sending of one batch.
func WithSendTimeout(d time.Duration) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.sendTimeout, "send timeout", d) }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) RelayOption {
	return func(c *relayConfig) { option.NonNil(&c.errs, &c.logger, "logger", l) }
}
