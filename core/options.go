package babelqueue

import (
	"log/slog"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Defaults of the App options. Every option and its default is listed here:
//
//	option                         default
//	WithDefaultQueue               DefaultQueue ("default")
//	WithMaxAttempts                DefaultMaxAttempts (3 deliveries, the first included)
//	WithDeadLetter                 true (dead-lettering on)
//	WithDeadLetterQueue            none: the DLQ of queue q is q + suffix
//	WithDeadLetterSuffix           DefaultDeadLetterSuffix (".dlq")
//	WithPollTimeout                DefaultPollTimeout (1s)
//	WithUnknownURNStrategy         StrategyFail
//	WithLogger                     slog.Default() at the time of each log call
//	WithClock                      driver.SystemClock{}
//	WithOnError                    none (errors are logged at level Error)
//	WithOnWarning                  none (warnings are logged at level Warn)
//	WithOnSchemaVersionRejected    none
//	WithOnRoutingMismatch          none
//	WithSettleTimeout              DefaultSettleTimeout (10s)
//	WithFailureBackoff             DefaultFailureBackoff (1s)
//	WithHooks                      none
//	WithConcurrency                DefaultConcurrency (1 handler at a time per queue), OrderKey
//	WithMaxPending                 4 × the concurrency
//	WithPayloadValidator           none (payloads are not checked)
//	WithLegacyURNs                 off: Handle takes only URNs that follow the URN rule
const (
	DefaultQueue            = "default"
	DefaultMaxAttempts      = 3
	DefaultDeadLetterSuffix = driver.DefaultDeadLetterSuffix
	DefaultPollTimeout      = time.Second
	DefaultSettleTimeout    = 10 * time.Second
	DefaultFailureBackoff   = time.Second
	// DefaultConcurrency is the handlers run at once per consumed queue
	// when WithConcurrency is not given: one message at a time.
	DefaultConcurrency = 1
)

// UnknownURNStrategy says what the App does with a message whose URN has no
// handler.
type UnknownURNStrategy string

const (
	// StrategyFail treats the message as a failure: it is retried up to the
	// max attempts and then dead-lettered with reason unknown_urn. With
	// dead-lettering off it is dropped.
	StrategyFail UnknownURNStrategy = "fail"
	// StrategyDelete acknowledges the message and reports a warning.
	StrategyDelete UnknownURNStrategy = "delete"
	// StrategyRelease hands the message back to its queue, unchanged and
	// without counting an attempt, for another consumer that has a handler
	// for it. It is republished, and the original acknowledged after that
	// write: this consumer did not fail it and does not own it. It is meant
	// for a queue shared by consumers that handle different URNs, for
	// example during a rolling deploy. A URN that no consumer handles
	// circulates until one does; it is never dead-lettered or dropped. Each
	// release is reported as a warning. A consume loop that reads back a
	// message it released releases it again and then waits the failure
	// backoff (WithFailureBackoff), so such a message does not spin the
	// loop.
	StrategyRelease UnknownURNStrategy = "release"
	// StrategyDeadLetter dead-letters the message at once with reason
	// unknown_urn, or drops it with a warning when dead-lettering is off.
	StrategyDeadLetter UnknownURNStrategy = "dead_letter"
)

func (s UnknownURNStrategy) valid() bool {
	switch s {
	case StrategyFail, StrategyDelete, StrategyRelease, StrategyDeadLetter:
		return true
	}
	return false
}

// Option configures an App. An option that rejects its value records the
// problem; NewApp reports every problem of its options at once, each
// wrapping ErrInvalidOption. A nil Option is ignored.
type Option func(*config)

// config holds the resolved options of an App.
type config struct {
	defaultQueue     string
	maxAttempts      int
	deadLetter       bool
	deadLetterQueue  string
	deadLetterSuffix string
	pollTimeout      time.Duration
	unknownURN       UnknownURNStrategy
	logger           *slog.Logger
	clock            driver.Clock
	onError          func(error)
	onWarning        func(error)
	onVersion        func(version, queue string)
	onMismatch       func(headerURN, bodyURN string, env *Envelope)
	settleTimeout    time.Duration
	failureBackoff   time.Duration
	hooks            hookSet
	conc             concurrencyConfig
	payloadValidator PayloadValidator
	protector        gdpr.FieldProtector
	legacyURNs       bool // WithLegacyURNs

	suffixSet bool    // WithDeadLetterSuffix was given
	errs      []error // the problems the options found
}

// fail records a problem of an option, wrapping ErrInvalidOption.
func (c *config) fail(format string, args ...any) {
	c.errs = append(c.errs, invalid(format, args...))
}

// check records the problems of the options taken together.
func (c *config) check() {
	if c.deadLetterQueue != "" && c.suffixSet {
		c.fail("WithDeadLetterQueue and WithDeadLetterSuffix both name the dead-letter queue")
	}
	if !c.deadLetter && (c.deadLetterQueue != "" || c.suffixSet) {
		c.fail("a dead-letter queue is named but dead-lettering is off (WithDeadLetter(false))")
	}
}

func defaultConfig() config {
	return config{
		defaultQueue:     DefaultQueue,
		maxAttempts:      DefaultMaxAttempts,
		deadLetter:       true,
		deadLetterSuffix: DefaultDeadLetterSuffix,
		pollTimeout:      DefaultPollTimeout,
		unknownURN:       StrategyFail,
		clock:            driver.SystemClock{},
		settleTimeout:    DefaultSettleTimeout,
		failureBackoff:   DefaultFailureBackoff,
	}
}

func invalid(format string, args ...any) error { return option.Invalid("", format, args...) }

// WithDefaultQueue sets the queue Publish writes to when no ToQueue option
// is given, and the queue Consume and Drain read when called without
// queues. A blank name is rejected.
func WithDefaultQueue(queue string) Option {
	return func(c *config) {
		if wire.IsBlank(queue) {
			c.fail("default queue is blank")
			return
		}
		c.defaultQueue = queue
	}
}

// WithMaxAttempts sets the total number of deliveries of a message that
// keeps failing, the first included; 1 means no retry. It must be at least 1.
func WithMaxAttempts(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("max attempts %d is below 1", n)
			return
		}
		c.maxAttempts = n
	}
}

// WithDeadLetter turns dead-lettering on or off. Off, a message whose
// attempts are exhausted is acknowledged and reported as a warning, a
// poison body is retried like a failure, and a version-gated message is
// acknowledged with a warning.
func WithDeadLetter(on bool) Option {
	return func(c *config) {
		c.deadLetter = on
	}
}

// WithDeadLetterQueue sends every dead letter to queue, whatever queue the
// message came from. A blank name is rejected.
func WithDeadLetterQueue(queue string) Option {
	return func(c *config) {
		if wire.IsBlank(queue) {
			c.fail("dead-letter queue is blank")
			return
		}
		c.deadLetterQueue = queue
	}
}

// WithDeadLetterSuffix names the dead-letter queue of queue q as q+suffix
// (when WithDeadLetterQueue is not set). A blank suffix is rejected: it
// would dead-letter a message onto its own queue.
func WithDeadLetterSuffix(suffix string) Option {
	return func(c *config) {
		if wire.IsBlank(suffix) {
			c.fail("dead-letter suffix is blank")
			return
		}
		c.deadLetterSuffix, c.suffixSet = suffix, true
	}
}

// WithPollTimeout sets how long one Pop waits for a message. Drain stops
// reading a queue after a Pop that waited this long for nothing. It must be
// positive.
func WithPollTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("poll timeout %v is not positive", d)
			return
		}
		c.pollTimeout = d
	}
}

// WithUnknownURNStrategy sets what happens to a message whose URN has no
// handler; see UnknownURNStrategy.
func WithUnknownURNStrategy(s UnknownURNStrategy) Option {
	return func(c *config) {
		if !s.valid() {
			c.fail("unknown-URN strategy %q", string(s))
			return
		}
		c.unknownURN = s
	}
}

// WithLogger sets the logger of the App. nil means slog.Default(), looked
// up at each log call.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		c.logger = l
	}
}

// WithClock sets the clock that stamps dead_letter.failed_at and times the
// failure backoff. nil is rejected.
func WithClock(clock driver.Clock) Option {
	return func(c *config) {
		if clock == nil {
			c.fail("clock is nil")
			return
		}
		c.clock = clock
	}
}

// WithOnError registers fn to receive every error the consume loop reports
// and handles itself. Such an error is a handler error, a failed retry,
// dead-letter or acknowledge write, or a rejected message. The error is a
// *DeliveryError when it concerns one message. fn is called from the
// queue's consume goroutine (from the handler goroutines, concurrently,
// under WithConcurrency); a panic in it is recovered. The error is logged
// either way.
func WithOnError(fn func(error)) Option {
	return func(c *config) {
		c.onError = fn
	}
}

// WithOnWarning registers fn to receive every warning. A warning is a
// message dropped after its last attempt, deleted or released by the
// unknown-URN strategy, or version-gated with dead-lettering off. Warnings
// are errors so that they can be matched (errors.Is(w, ErrNoHandler), ...).
// A panic in fn is recovered. The warning is logged either way.
func WithOnWarning(fn func(error)) Option {
	return func(c *config) {
		c.onWarning = fn
	}
}

// WithOnSchemaVersionRejected registers a diagnostic hook called when the
// version gate rejects a message; fn never changes how the message is
// settled. version is the rejected value (the bq-schema-version header, or
// meta.schema_version of a body whose header is absent) and queue the queue
// it was read from. A panic in fn is recovered and ignored.
func WithOnSchemaVersionRejected(fn func(version, queue string)) Option {
	return func(c *config) {
		c.onVersion = fn
	}
}

// WithOnRoutingMismatch registers a hook called when a message's bq-job
// header and the URN of its body differ. The message is routed by the
// header; env is the decoded body, the envelope the handler receives. A
// panic in fn is recovered and ignored; fn never changes how the message is
// settled.
func WithOnRoutingMismatch(fn func(headerURN, bodyURN string, env *Envelope)) Option {
	return func(c *config) {
		c.onMismatch = fn
	}
}

// WithSettleTimeout bounds each settle call (acknowledge, retry or
// dead-letter write, rewind, nack). Settle calls run on a context that is
// not cancelled with the consume context, so that a message being settled
// when Consume stops is settled and not left half done. It must be
// positive.
func WithSettleTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("settle timeout %v is not positive", d)
			return
		}
		c.settleTimeout = d
	}
}

// WithFailureBackoff sets how long a consume loop pauses after a failed
// retry or dead-letter write before it reads again. The pause runs on the
// App's clock, so that a broker that refuses writes is not hammered with
// the same message. Zero turns the pause off; a negative value is rejected.
func WithFailureBackoff(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("failure backoff %v is negative", d)
			return
		}
		c.failureBackoff = d
	}
}

// WithHooks registers hooks that the App reports its decisions to (see
// Hook). They see every write, the start and the settlement of every
// delivery, and the runs of App.Redrive. A value that implements none of
// the hook interfaces, or a nil one, is rejected. Several WithHooks add up.
func WithHooks(hooks ...Hook) Option {
	return func(c *config) {
		for i, h := range hooks {
			if h == nil {
				c.fail("hook %d is nil", i)
				continue
			}
			if !c.hooks.add(h) {
				c.fail("hook %d (%T) implements no hook interface", i, h)
			}
		}
	}
}

// WithLegacyURNs makes Handle accept any URN that is not blank, for
// messages of producers that predate the URN rule of wire.ValidURN.
//
// A consumer routes such a message like any other (its job is not
// checked), so this lets a service register a handler for it. Publish
// still refuses a URN that breaks the rule.
func WithLegacyURNs() Option {
	return func(c *config) { c.legacyURNs = true }
}
