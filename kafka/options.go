package kafka

import (
	"crypto/tls"
	"log/slog"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Defaults of the transport options. Every option and its default:
//
//	option                         default
//	WithBrokers                    none (host:port, lists and kafka:// accepted; required unless WithWriter and WithReaderFactory are both given)
//	WithGroupID                    none (required to consume; also names the Reinjector's group)
//	WithReinjectGroupID            WithGroupID + ReinjectGroupSuffix: the consumer group of a Reinjector
//	WithStaleTierWarning           DefaultStaleTierAfter (1m): warn when a retry tier record waits this long past its tier
//	WithMaxWaitTime                DefaultMaxWaitTime (1s): the longest a single Pop blocks
//	WithOnSchemaVersionRejected    none
//	WithReaderFactory              none: a consumer-group member per queue, built from the brokers and group id
//	WithWriter                     a kafka-go Writer owned by the transport
//	WithRetryTiers                 none: retry tiers are opt-in (see DefaultRetryTiers)
//	WithLinger                     DefaultLinger (1ms): how long a partition batch waits for company
//	WithBatchSize                  DefaultBatchSize (1000 records per produce request)
//	WithBatchBytes                 DefaultBatchBytes (1 MiB): also the largest record accepted
//	WithRequiredAcks               kafkago.RequireAll
//	WithCommitInterval             DefaultCommitInterval (100ms); 0 commits synchronously in Ack
//	WithSessionTimeout             DefaultSessionTimeout (10s): a member silent this long is dropped from its group
//	WithHeartbeatInterval          DefaultHeartbeatInterval (1s): also how soon a rebalance is noticed
//	WithRebalanceTimeout           DefaultRebalanceTimeout (15s): how long a rebalance waits for members to rejoin
//	WithRevokeTimeout              DefaultRevokeTimeout (5s): how long revoked deliveries in flight may settle
//	WithStartAt                    StartEarliest: where a group with no committed offset starts (see StartAt)
//	WithMaxBufferedRecords         DefaultMaxBufferedRecords (1024 records buffered or in flight)
//	WithMaxBufferedBytes           DefaultMaxBufferedBytes (16 MiB buffered or in flight)
//	WithTLS                        none (plaintext)
//	WithSASL, WithSASLPlain,
//	WithSASLSCRAM                  none
//	WithLogger                     slog.Default() at each log call
//	WithClock                      driver.SystemClock{} (stamps publish times, times re-inject waits)
//	WithReinjectBuffer             DefaultReinjectBuffer (256 records per partition)
//	WithReinjectHooks              none: a Reinjector reports nothing per record
//	WithReinjectBacklogInterval    DefaultReinjectBacklogInterval (10s): how often a Reinjector samples its tiers' backlog
//	WithAutoCreateTopics           true: the broker's auto.create.topics.enable decides
const (
	DefaultMaxWaitTime    = time.Second
	DefaultLinger         = time.Millisecond
	DefaultBatchSize      = 1000
	DefaultBatchBytes     = 1 << 20
	DefaultCommitInterval = 100 * time.Millisecond
	DefaultReinjectBuffer = 256

	DefaultSessionTimeout     = 10 * time.Second
	DefaultHeartbeatInterval  = time.Second
	DefaultRebalanceTimeout   = 15 * time.Second
	DefaultRevokeTimeout      = 5 * time.Second
	DefaultMaxBufferedRecords = 1024
	DefaultMaxBufferedBytes   = 16 << 20

	// DefaultReinjectBacklogInterval is how often a Reinjector samples the
	// backlog of its tiers for the driver.ReinjectBacklogHook values
	// of WithReinjectHooks.
	DefaultReinjectBacklogInterval = 10 * time.Second
)

// DefaultRetryTiers is the recommended retry tier list of CONTRACT.md 6.4: 5s, 30s, 5m
// and 30m. Tiers are opt-in: pass it to WithRetryTiers to use it.
var DefaultRetryTiers = []time.Duration{5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}

// DefaultRetryTiersMs is DefaultRetryTiers in milliseconds.
var DefaultRetryTiersMs = []int64{5000, 30000, 300000, 1800000}

// Option customizes New. An option given a bad value does not panic: New
// reports it, wrapping babelqueue.ErrInvalidOption.
type Option func(*config)

// OnSchemaVersionRejected is called by Pop when the version gate rejects a
// record: its bq-schema-version header is present, not blank and not the
// supported version. version is the header value and queue the topic the
// record was read from. It is diagnostic only: a panic in it is recovered
// and ignored, and it never changes how the record is delivered or settled.
type OnSchemaVersionRejected func(version, queue string)

type config struct {
	brokers []string
	// brokersRejected: WithBrokers reported its entries, so New does not
	// report ErrNoBrokers as well.
	brokersRejected bool
	groupID         string
	reinjectGroup   string // WithReinjectGroupID; empty: groupID + ReinjectGroupSuffix
	staleAfter      time.Duration
	maxWait         time.Duration
	onVersion       OnSchemaVersionRejected
	readerFactory   func(queue string) Reader
	writer          Writer
	tiers           []time.Duration
	linger          time.Duration
	batchSize       int
	batchBytes      int64
	requiredAcks    kafkago.RequiredAcks
	commitInterval  time.Duration
	tls             *tls.Config
	sasl            sasl.Mechanism
	saslBy          string // the option that set sasl, to report a second one
	logger          *slog.Logger
	clock           driver.Clock
	reinjectBuffer  int
	autoCreate      bool

	sessionTimeout     time.Duration
	heartbeatInterval  time.Duration
	rebalanceTimeout   time.Duration
	revokeTimeout      time.Duration
	startAt            StartAt
	maxBufferedRecords int
	maxBufferedBytes   int64

	// memberFactory builds the consumer-group member that reads a queue;
	// tests replace it with a fake.
	memberFactory func(groupID string, topics []string) groupMember
	// memberEvent, when set (tests), is called under a member reader's
	// lock on each assignment ("assign"), start of a revocation ("revoke")
	// and hand-out ("out") of a partition.
	memberEvent func(queue, event string, partition int, offset int64)

	reinjectHooks []driver.ReinjectHook

	// reinjectbacklog.go: the backlog hooks and their sampling interval.
	reinjectBacklogHooks []driver.ReinjectBacklogHook
	staleTierHooks       []driver.StaleTierHook // tierwatch.go
	reinjectBacklogEvery time.Duration

	// groupFactory builds the consumer-group member of a Reinjector; tests
	// replace it with a fake.
	groupFactory func(groupID string, topics []string) groupMember

	errs option.Errors
}

func defaultConfig() config {
	return config{
		maxWait:        DefaultMaxWaitTime,
		linger:         DefaultLinger,
		batchSize:      DefaultBatchSize,
		batchBytes:     DefaultBatchBytes,
		requiredAcks:   kafkago.RequireAll,
		commitInterval: DefaultCommitInterval,
		clock:          driver.SystemClock{},
		reinjectBuffer: DefaultReinjectBuffer,
		autoCreate:     true,

		sessionTimeout:     DefaultSessionTimeout,
		heartbeatInterval:  DefaultHeartbeatInterval,
		rebalanceTimeout:   DefaultRebalanceTimeout,
		revokeTimeout:      DefaultRevokeTimeout,
		startAt:            StartEarliest,
		maxBufferedRecords: DefaultMaxBufferedRecords,
		maxBufferedBytes:   DefaultMaxBufferedBytes,

		reinjectBacklogEvery: DefaultReinjectBacklogInterval,
		staleAfter:           DefaultStaleTierAfter,

		errs: option.Prefixed("kafka"),
	}
}

func (c *config) fail(format string, args ...any) { c.errs.Fail(format, args...) }

// positive is the Option that sets the field at(c) to v, or records that
// v (what the caller names) is not positive.
func positive[T int | int64 | time.Duration](what string, v T, at func(*config) *T) Option {
	return func(c *config) { option.Positive(&c.errs, at(c), what, v) }
}

func isBlank(s string) bool { return wire.IsBlank(s) }

func (c *config) log() *slog.Logger {
	if c.logger != nil {
		return c.logger
	}
	return slog.Default()
}

// WithBrokers sets the bootstrap brokers, each host:port, a comma-separated
// list of them, or either behind kafka://.
//
// "127.0.0.1:9092,127.0.0.1:9093" (the form of BQ_KAFKA_BROKERS) and
// "kafka://127.0.0.1:9092" name the same brokers as separate host:port
// arguments. New reports every entry that is blank, has another scheme
// (TLS is set with WithTLS, not kafka+ssl://), or is not host:port with a
// port from 1 to 65535; an IPv6 host is bracketed ("[::1]:9092"). A later
// WithBrokers replaces an earlier one.
func WithBrokers(brokers ...string) Option {
	return func(c *config) {
		addrs, problems := parseBrokers(brokers)
		for _, p := range problems {
			c.fail("%s", p)
		}
		c.brokers, c.brokersRejected = addrs, len(problems) > 0
	}
}

// WithGroupID sets the consumer group whose offsets Ack commits. It is
// required to consume; a blank id is rejected. A Reinjector joins a group
// of its own named after it (see WithReinjectGroupID).
func WithGroupID(groupID string) Option {
	return func(c *config) {
		if wire.IsBlank(groupID) {
			c.fail("blank group id")
			return
		}
		c.groupID = groupID
	}
}

// ReinjectGroupSuffix is appended to the WithGroupID group to name the
// consumer group of a Reinjector when WithReinjectGroupID is not given.
const ReinjectGroupSuffix = ".reinject"

// WithReinjectGroupID names the consumer group a Reinjector of this
// transport joins, and whose offsets the stale tier check reads.
//
// Without it the group is the WithGroupID group followed by
// ReinjectGroupSuffix. Give the group of the re-injector that carries the
// tiers (bq reinject --group, say) when it runs elsewhere, so that the
// check of WithStaleTierWarning reads its offsets. A blank id is rejected.
func WithReinjectGroupID(groupID string) Option {
	return func(c *config) {
		if wire.IsBlank(groupID) {
			c.fail("blank re-inject group id")
			return
		}
		c.reinjectGroup = groupID
	}
}

// ReinjectGroupID returns the consumer group of this transport's
// Reinjectors: WithReinjectGroupID, else WithGroupID + ReinjectGroupSuffix;
// empty when neither was given.
func (t *Transport) ReinjectGroupID() string { return t.cfg.reinjectGroupID() }

func (c *config) reinjectGroupID() string {
	switch {
	case c.reinjectGroup != "":
		return c.reinjectGroup
	case c.groupID != "":
		return c.groupID + ReinjectGroupSuffix
	}
	return ""
}

// WithMaxWaitTime caps how long a single Pop blocks waiting for a record,
// whatever timeout it is given. It must be positive.
func WithMaxWaitTime(d time.Duration) Option {
	return positive("max wait time", d, func(c *config) *time.Duration { return &c.maxWait })
}

// WithOnSchemaVersionRejected registers the version gate hook (default none).
func WithOnSchemaVersionRejected(fn OnSchemaVersionRejected) Option {
	return func(c *config) { c.onVersion = fn }
}

// WithReaderFactory makes Pop read queue through the Reader f returns (a
// fake in tests) instead of a kafka-go group reader. The transport closes a
// returned Reader that implements io.Closer when it drops it.
func WithReaderFactory(f func(queue string) Reader) Option {
	return func(c *config) { c.readerFactory = f }
}

// WithWriter makes every write go through w instead of a Writer built by the
// transport; w must make one attempt per call. The caller owns w: Close
// leaves it open.
//
// One attempt per WriteMessages is what lets a failed publish be classified
// as refused or unknown (publish_outcome.go). New therefore refuses a
// *kafkago.Writer whose MaxAttempts is not 1 (0 means kafka-go's default,
// 10), also behind wrappers that expose it with an Unwrap() Writer method.
func WithWriter(w Writer) Option {
	return func(c *config) {
		if n, ok := writerAttempts(w); ok && n != 1 {
			c.fail("WithWriter: the kafka-go Writer has MaxAttempts %d (0 is kafka-go's default, 10); set it to 1: the transport retries only writes known to be refused", n)
			return
		}
		c.writer = w
	}
}

// writerAttempts returns the MaxAttempts of the kafka-go Writer that w is
// or wraps (through Unwrap() Writer), and false when w is none.
func writerAttempts(w Writer) (int, bool) {
	for range 16 { // bounded: a wrapper chain that loops is not followed forever
		switch v := w.(type) {
		case *kafkago.Writer:
			if v == nil {
				return 0, false
			}
			return v.MaxAttempts, true
		case interface{ Unwrap() Writer }:
			w = v.Unwrap()
		default:
			return 0, false
		}
	}
	return 0, false
}

// WithRetryTiers configures the delays of the retry-topic pattern
// (CONTRACT.md 6.4). Tier n, 1-based, is the topic RetryTopic(topic, n).
// The tiers must be positive and strictly ascending, or New fails. Without
// tiers, PublishDelayed, PublishRetry and PublishRetryForAttempt return
// ErrDelayUnsupported and a retry is a republish to the work topic. A
// deployment that sets tiers must run a Reinjector for them.
func WithRetryTiers(tiers ...time.Duration) Option {
	return func(c *config) {
		for i, d := range tiers {
			if d <= 0 {
				c.fail("retry tier %d (%v) is not positive", i+1, d)
				return
			}
			if d%time.Millisecond != 0 {
				c.fail("retry tier %d (%v) is not a whole number of milliseconds", i+1, d)
				return
			}
			if i > 0 && d <= tiers[i-1] {
				c.fail("retry tiers are not strictly ascending: tier %d (%v) after %v", i+1, d, tiers[i-1])
				return
			}
		}
		c.tiers = append([]time.Duration(nil), tiers...)
	}
}

// WithLinger sets how long the writer holds a partition's batch open for more
// records before sending it. Concurrent publishers share a batch within this
// window; a lone Publish waits at most this long. It must be positive.
func WithLinger(d time.Duration) Option {
	return positive("linger", d, func(c *config) *time.Duration { return &c.linger })
}

// WithBatchSize caps the records of one produce request per partition. It
// must be positive.
func WithBatchSize(n int) Option {
	return positive("batch size", n, func(c *config) *int { return &c.batchSize })
}

// WithBatchBytes caps the bytes of one produce request per partition; a
// single record larger than this is rejected with ErrRecordTooLarge before
// anything is sent. Keep it at most the broker's message.max.bytes.
func WithBatchBytes(n int64) Option {
	return positive("batch bytes", n, func(c *config) *int64 { return &c.batchBytes })
}

// WithRequiredAcks sets the acknowledgement a write waits for. RequireNone
// is rejected: a retry or dead-letter write must be acknowledged before the
// original is committed.
func WithRequiredAcks(acks kafkago.RequiredAcks) Option {
	return func(c *config) {
		if acks != kafkago.RequireOne && acks != kafkago.RequireAll {
			c.fail("required acks %v: use RequireOne or RequireAll", acks)
			return
		}
		c.requiredAcks = acks
	}
}

// WithCommitInterval batches the offset commits of Ack: the settled prefix
// of each partition is committed at most this long after Ack. A failed
// commit is retried at the next interval, and what is settled when a
// partition is revoked (or the transport closed) is committed before the
// member leaves its generation. An Ack that returned nil is therefore
// committed unless the member loses its generation first (a session
// timeout): then the partition's next owner reads the record again, never
// past an unsettled one. 0 makes every Ack wait for its commit. A
// Reinjector commits the records it wrote back at most once per interval
// too (0: as soon as the commit before has returned). Negative is rejected.
func WithCommitInterval(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("commit interval %v is negative", d)
			return
		}
		c.commitInterval = d
	}
}

// WithLogger sets the logger of the transport and its Reinjectors.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithClock sets the clock that stamps publish times of retry-tier records
// and times the Reinjector's waits. nil is rejected.
func WithClock(clock driver.Clock) Option {
	return func(c *config) {
		if clock == nil {
			c.fail("nil clock")
			return
		}
		c.clock = clock
	}
}

// WithReinjectBuffer bounds how many records a Reinjector holds per
// partition while they wait out their tier. It must be positive.
func WithReinjectBuffer(n int) Option {
	return positive("re-inject buffer", n, func(c *config) *int { return &c.reinjectBuffer })
}

// WithAutoCreateTopics says whether a write to a missing topic asks the
// broker to create it (it still obeys auto.create.topics.enable).
func WithAutoCreateTopics(on bool) Option {
	return func(c *config) { c.autoCreate = on }
}
