package kafkashare

import (
	"log/slog"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Option configures a Transport. New reports every rejected option at
// once, each matching babelqueue.ErrInvalidOption.
type Option func(*config)

type config struct {
	errs         option.Errors
	brokers      []string
	group        string
	lock         time.Duration
	deliveryCap  int
	maxRecords   int32
	members      int
	retryDelay   time.Duration
	fromEarliest bool
	logger       *slog.Logger
	clock        driver.Clock
	onLockLost   func(LockLost)
	kgoOpts      []kgo.Opt
}

func defaults() config {
	return config{
		errs:         option.Prefixed("kafkashare"),
		lock:         30 * time.Second,
		deliveryCap:  10,
		maxRecords:   64,
		members:      2,
		fromEarliest: true,
		clock:        driver.SystemClock{},
	}
}

// WithBrokers sets the seed brokers (host:port); at least one is required.
func WithBrokers(addrs ...string) Option {
	return func(c *config) {
		if len(addrs) == 0 {
			c.errs.Fail("no broker address")
		}
		for _, a := range addrs {
			if err := option.HostPort(a); err != nil {
				c.errs.Fail("broker %q: %v", a, err)
			}
		}
		c.brokers = append(c.brokers, addrs...)
	}
}

// WithShareGroup names the share group every queue is consumed in; it is
// required for Receive and optional for a publish-only transport.
func WithShareGroup(group string) Option {
	return func(c *config) {
		if group == "" {
			c.errs.Fail("empty share group")
		}
		c.group = group
	}
}

// WithLockDuration sets the group's acquisition lock (the group config
// share.record.lock.duration.ms, set when a queue is first read; default
// 30s). Held records are renewed at a third of it.
func WithLockDuration(d time.Duration) Option {
	return func(c *config) {
		if d < time.Second {
			c.errs.Fail("lock duration %v is under 1s", d)
			return
		}
		c.lock = d
	}
}

// WithDeliveryCountLimit sets the group's share.delivery.count.limit
// (default 10, the broker's largest by default). The broker archives a
// record at this many deliveries without a dead letter, so it must stay
// above the App's max attempts: the App dead-letters first.
func WithDeliveryCountLimit(n int) Option {
	return func(c *config) {
		if n < 2 {
			c.errs.Fail("delivery count limit %d is under 2", n)
			return
		}
		c.deliveryCap = n
	}
}

// WithMaxRecords bounds the records one share fetch acquires (default
// 64); they are all held, and their locks renewed, until each is settled.
// With WithMembers(m), h handlers of latency L stay busy when
// (m-1) × n ≥ F·h/L, F being a share fetch's round trip (doc.go,
// "Members").
func WithMaxRecords(n int) Option {
	return func(c *config) {
		if n <= 0 || n > 10000 {
			c.errs.Fail("max records %d is not in 1..10000", n)
			return
		}
		c.maxRecords = int32(n)
	}
}

// WithMembers sets how many share-group members (franz-go clients) each
// queue runs (default 2, at most 16). Each member polls on its own
// goroutine once its previous records are settled, so one member's share
// fetch overlaps the handling of the others' records (three suit many
// handlers). A queue holds at most n × WithMaxRecords records; 1 halves
// that, and the connections, for slow handlers that leave records to other
// processes of the group (doc.go, "Members").
func WithMembers(n int) Option {
	return func(c *config) {
		if n < 1 || n > 16 {
			c.errs.Fail("members %d is not in 1..16", n)
			return
		}
		c.members = n
	}
}

// WithRetryDelay holds a retried record, its lock renewed, for d before
// releasing it for its next delivery (default 0: released at once).
func WithRetryDelay(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs.Fail("retry delay %v is negative", d)
			return
		}
		c.retryDelay = d
	}
}

// WithLatestOnly leaves the group's share.auto.offset.reset at the
// broker's default (latest) instead of setting it to earliest, so that a
// new group skips records written before it first consumed.
func WithLatestOnly() Option { return func(c *config) { c.fromEarliest = false } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { option.NonNil(&c.errs, &c.logger, "logger", l) }
}

// WithClock sets the clock the lock watchdog and retry delays run on
// (default driver.SystemClock).
func WithClock(clk driver.Clock) Option {
	return func(c *config) { option.NonNil(&c.errs, &c.clock, "clock", clk) }
}

// WithOnLockLost registers a hook called once for each held record whose
// acquisition lock passed without a confirmed renewal while it was still
// unsettled (a handler that outlived its lock, or a broker that did not
// answer the renewals). The broker may then deliver it elsewhere.
func WithOnLockLost(fn func(LockLost)) Option {
	return func(c *config) {
		if fn == nil {
			c.errs.Fail("nil lock-lost hook")
			return
		}
		c.onLockLost = fn
	}
}

// WithClientOptions adds franz-go options, such as TLS or SASL, to every
// client the transport makes.
//
// New refuses the options that would override the transport's own: a
// consumer or share group, topics or partitions to consume, acks other
// than all, idempotence disabled, and pools (kgo.WithPools), since
// received messages view the records' bytes.
func WithClientOptions(opts ...kgo.Opt) Option {
	return func(c *config) { c.kgoOpts = append(c.kgoOpts, opts...) }
}

// LockLost describes a held record whose acquisition lock expired.
type LockLost struct {
	Topic     string
	Partition int32
	Offset    int64
	// Held is how long the record had been held when the loss was seen.
	Held time.Duration
}

func (c *config) log() *slog.Logger {
	if c.logger != nil {
		return c.logger
	}
	return slog.Default()
}
