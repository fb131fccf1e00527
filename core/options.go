package babelqueue

import (
	"fmt"
	"log/slog"
	"time"
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
//	WithClock                      SystemClock{}
//	WithOnError                    none (errors are logged at level Error)
//	WithOnWarning                  none (warnings are logged at level Warn)
//	WithOnSchemaVersionRejected    none
//	WithOnRoutingMismatch          none
//	WithSettleTimeout              DefaultSettleTimeout (10s)
//	WithFailureBackoff             DefaultFailureBackoff (1s)
//	WithHooks                      none
//	WithPayloadValidator           none (payloads are not checked)
const (
	DefaultQueue            = "default"
	DefaultDeadLetterSuffix = ".dlq"
	DefaultPollTimeout      = time.Second
	DefaultSettleTimeout    = 10 * time.Second
	DefaultFailureBackoff   = time.Second
)

// UnknownURNStrategy says what the App does with a message whose URN has no
// handler.
type UnknownURNStrategy string

const (
	// StrategyFail treats the message as a failure: it is retried up to the
	// max attempts and then dead-lettered with reason unknown_urn (or
	// dropped when dead-lettering is off).
	StrategyFail UnknownURNStrategy = "fail"
	// StrategyDelete acknowledges the message and reports a warning.
	StrategyDelete UnknownURNStrategy = "delete"
	// StrategyRelease hands the message back to its queue for another
	// consumer that has a handler for it: it is republished unchanged, its
	// attempts not counted (this consumer did not fail it, it does not own
	// it), and the original acknowledged after that write. It is meant for
	// a queue shared by consumers that handle different URNs, for example
	// during a rolling deploy. A URN that no consumer handles circulates
	// until one does; it is never dead-lettered or dropped. Each release is
	// reported as a warning. A consume loop that reads back a message it
	// released releases it again and then waits the failure backoff
	// (WithFailureBackoff), so such a message does not spin the loop.
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

// Option configures an App. A rejected value does not panic: NewApp keeps
// the error and Publish, PublishWithHeaders, Consume and Drain return it,
// wrapping ErrInvalidOption.
type Option func(*config) error

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
	clock            Clock
	onError          func(error)
	onWarning        func(error)
	onVersion        func(version, queue string)
	onMismatch       func(headerURN, bodyURN string, env *Envelope)
	settleTimeout    time.Duration
	failureBackoff   time.Duration
	hooks            hookSet
	payloadValidator PayloadValidator
}

func defaultConfig() config {
	return config{
		defaultQueue:     DefaultQueue,
		maxAttempts:      DefaultMaxAttempts,
		deadLetter:       true,
		deadLetterSuffix: DefaultDeadLetterSuffix,
		pollTimeout:      DefaultPollTimeout,
		unknownURN:       StrategyFail,
		clock:            SystemClock{},
		settleTimeout:    DefaultSettleTimeout,
		failureBackoff:   DefaultFailureBackoff,
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// WithDefaultQueue sets the queue Publish writes to when no ToQueue option
// is given, and the queue Consume and Drain read when called without
// queues. A blank name is rejected.
func WithDefaultQueue(queue string) Option {
	return func(c *config) error {
		if IsBlank(queue) {
			return invalid("default queue is blank")
		}
		c.defaultQueue = queue
		return nil
	}
}

// WithMaxAttempts sets the total number of deliveries of a message that
// keeps failing, the first included; 1 means no retry. It must be at least 1.
func WithMaxAttempts(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("max attempts %d is below 1", n)
		}
		c.maxAttempts = n
		return nil
	}
}

// WithDeadLetter turns dead-lettering on or off. Off, a message whose
// attempts are exhausted is acknowledged and reported as a warning, a
// poison body is retried like a failure, and a version-gated message is
// acknowledged with a warning.
func WithDeadLetter(on bool) Option {
	return func(c *config) error {
		c.deadLetter = on
		return nil
	}
}

// WithDeadLetterQueue sends every dead letter to queue, whatever queue the
// message came from. A blank name is rejected.
func WithDeadLetterQueue(queue string) Option {
	return func(c *config) error {
		if IsBlank(queue) {
			return invalid("dead-letter queue is blank")
		}
		c.deadLetterQueue = queue
		return nil
	}
}

// WithDeadLetterSuffix names the dead-letter queue of queue q as q+suffix
// (when WithDeadLetterQueue is not set). A blank suffix is rejected: it
// would dead-letter a message onto its own queue.
func WithDeadLetterSuffix(suffix string) Option {
	return func(c *config) error {
		if IsBlank(suffix) {
			return invalid("dead-letter suffix is blank")
		}
		c.deadLetterSuffix = suffix
		return nil
	}
}

// WithPollTimeout sets how long one Pop waits for a message. Drain stops
// reading a queue after a Pop that waited this long for nothing. It must be
// positive.
func WithPollTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("poll timeout %v is not positive", d)
		}
		c.pollTimeout = d
		return nil
	}
}

// WithUnknownURNStrategy sets what happens to a message whose URN has no
// handler; see UnknownURNStrategy.
func WithUnknownURNStrategy(s UnknownURNStrategy) Option {
	return func(c *config) error {
		if !s.valid() {
			return invalid("unknown-URN strategy %q", string(s))
		}
		c.unknownURN = s
		return nil
	}
}

// WithLogger sets the logger of the App. nil means slog.Default(), looked
// up at each log call.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// WithClock sets the clock that stamps dead_letter.failed_at and times the
// failure backoff. nil is rejected.
func WithClock(clock Clock) Option {
	return func(c *config) error {
		if clock == nil {
			return invalid("clock is nil")
		}
		c.clock = clock
		return nil
	}
}

// WithOnError registers fn to receive every error the consume loop reports
// and handles itself: a handler error, a failed retry, dead-letter or
// acknowledge write, a rejected message. The error is a *DeliveryError
// when it concerns one message. fn is called from the queue's consume
// goroutine; a panic in it is recovered. The error is logged either way.
func WithOnError(fn func(error)) Option {
	return func(c *config) error {
		c.onError = fn
		return nil
	}
}

// WithOnWarning registers fn to receive every warning: a message dropped
// after its last attempt, deleted or released by the unknown-URN strategy,
// or version-gated with dead-lettering off. Warnings are errors so that
// they can be matched (errors.Is(w, ErrNoHandler), ...). A panic in fn is
// recovered. The warning is logged either way.
func WithOnWarning(fn func(error)) Option {
	return func(c *config) error {
		c.onWarning = fn
		return nil
	}
}

// WithOnSchemaVersionRejected registers a diagnostic hook called when the
// version gate rejects a message: version is the rejected value (the
// bq-schema-version header, or meta.schema_version of a body whose header
// is absent) and queue the queue it was read from. A panic in fn is
// recovered and ignored; fn never changes how the message is settled.
func WithOnSchemaVersionRejected(fn func(version, queue string)) Option {
	return func(c *config) error {
		c.onVersion = fn
		return nil
	}
}

// WithOnRoutingMismatch registers a hook called when a message's bq-job
// header and the URN of its body differ. The message is routed by the
// header; env is the decoded body, the envelope the handler receives. A
// panic in fn is recovered and ignored; fn never changes how the message is
// settled.
func WithOnRoutingMismatch(fn func(headerURN, bodyURN string, env *Envelope)) Option {
	return func(c *config) error {
		c.onMismatch = fn
		return nil
	}
}

// WithSettleTimeout bounds each settle call (acknowledge, retry or
// dead-letter write, rewind, nack). Settle calls run on a context that is
// not cancelled with the consume context, so that a message being settled
// when Consume stops is settled and not left half done. It must be
// positive.
func WithSettleTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("settle timeout %v is not positive", d)
		}
		c.settleTimeout = d
		return nil
	}
}

// WithFailureBackoff sets how long a consume loop pauses, on the App's
// clock, after a failed retry or dead-letter write before it reads again,
// so that a broker that refuses writes is not hammered with the same
// message. Zero turns the pause off; a negative value is rejected.
func WithFailureBackoff(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("failure backoff %v is negative", d)
		}
		c.failureBackoff = d
		return nil
	}
}

// WithHooks registers hooks that the App reports its decisions to (see
// Hook): every write, the start and the settlement of every delivery, and
// the runs of App.Redrive. A value that implements none of the hook
// interfaces, or a nil one, is rejected. Several WithHooks add up.
func WithHooks(hooks ...Hook) Option {
	return func(c *config) error {
		for i, h := range hooks {
			if h == nil {
				return invalid("hook %d is nil", i)
			}
			if !c.hooks.add(h) {
				return invalid("hook %d (%T) implements no hook interface", i, h)
			}
		}
		return nil
	}
}
