package outbox

import (
	"log/slog"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
)

// Defaults of the outbox and relay options. Every option and its default:
//
//	option             default
//	WithTable          DefaultTable ("bq_outbox"), a plain identifier
//	WithClock          time.Now
//	WithRelayID        a random id (the relay's name in locked_by)
//	WithBatchSize      DefaultBatchSize (500 rows per send)
//	WithWaves          DefaultWaves (1 row of an order key per PostgreSQL claim)
//	WithInFlight       DefaultInFlight (2 sends in flight in Run, by 4 workers that claim, send and settle)
//	WithClaimAhead     off (PostgreSQL: a worker claims its next batch while one is sent, up to n per transaction)
//	WithParallelism    DefaultParallelism (64 sends in flight per batch, when the sender does not batch)
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
	DefaultWaves       = 1
	DefaultInFlight    = 2
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
	waves                  int
	inflight               int
	ahead                  int
	lease, poll            time.Duration
	minBackoff, maxBackoff time.Duration
	sendTimeout            time.Duration
	logger                 *slog.Logger
	plainSQL               bool // tests: PostgreSQL through database/sql even with pgx's driver
	errs                   option.Errors
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

// WithBatchSize sets how many rows one send carries (at most one per
// order key), in one SendBatch when the sender batches.
func WithBatchSize(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.batch, "batch size", n) }
}

// WithWaves sets how many rows of one order key a PostgreSQL claim takes:
// it reads up to n × WithBatchSize rows and sends them in waves, first the
// oldest pending row of each key, then the next one of each key, each
// wave once the broker acknowledged the one before, and one commit
// settles them all. After a wave with a failure the later ones are not
// sent (their rows stay pending). On SQLite a claim takes one row per key.
// More waves cost the relay fewer database round trips and less CPU per
// row when it is behind; DESIGN.md ("Throughput") has the measurements.
func WithWaves(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.waves, "waves", n) }
}

// WithInFlight sets how many sends (waves) Run has in flight at once; 2n
// workers claim, send and settle batches, so that other batches are
// claimed or settled meanwhile (on PostgreSQL each claim takes up to
// 1/(2n) of the table's key buckets). With WithClaimAhead, n workers,
// each claiming its next batch while it sends one.
func WithInFlight(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.inflight, "batches in flight", n) }
}

// WithParallelism bounds the sends in flight per batch when the sender
// does not batch.
func WithParallelism(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.parallel, "parallelism", n) }
}

// WithLease sets how long claimed rows are the relay's on SQLite: a relay
// that dies leaves its rows to the others after it. It must exceed the
// send timeout. (On PostgreSQL a claim holds its keys with advisory locks
// of an open transaction, released when the relay's connection ends.)
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

// WithClaimAhead makes each PostgreSQL worker claim its next batch while
// the one before is being sent, in the same transaction (so under the
// same key bucket locks, past the last row the batch before read), up to
// n claims per transaction; Run then starts WithInFlight workers, each
// with one send in flight, instead of twice as many. A batch claimed
// ahead is sent once the one before was acknowledged; its rows of keys
// the batch before sent wait until that batch's deletion found every row,
// and its rows of keys that failed there stay pending. A claim is
// followed ahead only while its buckets hold one row per key within its
// limit, no failed row waits out its backoff and every id up to its last
// row was taken by a transaction that had ended (otherwise the worker
// settles and commits as without the option). Through pgx's driver only;
// DESIGN.md ("Claims ahead") has the rules and the measurements.
func WithClaimAhead(n int) RelayOption {
	return func(c *relayConfig) { option.Positive(&c.errs, &c.ahead, "claims ahead", n) }
}
