package pulsar

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Defaults applied by New. Every option and its default is listed here:
//
//	option                         default
//	WithServiceURL, WithClient     none: exactly one is required
//	WithTopicPrefix                none: a queue name is the topic name (public/default)
//	WithSubscription               DefaultSubscription ("babelqueue")
//	WithSubscriptionType           pulsar.Exclusive (the client's), undeclared
//	WithInitialPosition            pulsar.SubscriptionPositionEarliest
//	WithNackRedeliveryDelay        the client's (1 min)
//	WithMaxWaitTime                DefaultMaxWaitTime (1s)
//	WithMaxAttempts                babelqueue.DefaultMaxAttempts (3)
//	WithRetryProducer,
//	WithRetryClient,
//	WithRepublishRetries           none: Retry negatively acknowledges
//	WithToken, WithTLSAuth         none (no authentication)
//	WithTLSTrustCerts              none
//	WithTLSAllowInsecure           off
//	WithTimeouts                   the client's
//	WithProducerOptions            none: batching off, deduplicating producers included
//	WithDeduplication              off: producers have generated names and no explicit sequence ids
//	WithConsumerOptions            none: the client's grouped acknowledgements (see below)
//	WithLogger                     slog.Default()
//	WithClock                      driver.SystemClock{} (times the discovery of new partitions)
//	WithOnWarning                  none (warnings are logged at level Warn)
//
// Producers do not batch: every write waits for the broker's receipt (a
// synchronous send), which pulsar-client-go flushes at once, so a batching
// producer would only wrap each message in a batch of one and convert and
// encode its properties a second time (DESIGN.md, "Producers"). A
// deduplicating producer (WithDeduplication) sends asynchronously and does
// not batch either: a batch entry of the client's default builder mixes
// keys, which a Key_Shared subscription dispatches by one of them, and its
// key-based builder sends entries whose sequence id ranges overlap, which
// broker deduplication cannot judge. The other producer settings (send
// timeout, pending-message bound, compression) are the client's: none of
// them changes the work per message (DESIGN.md, "Producers").
//
// Acknowledgements are the client's default: grouped, sent up to 100 ms
// (or 1,000 acknowledgements) after Ack returned nil. A consumer killed
// with SIGKILL therefore has handled again, besides the messages it held
// in flight, those it acknowledged in its last 100 ms (measured: 73
// against 32 in flight). Acknowledgements confirmed by the broker
// (AckWithResponse, through WithConsumerOptions) narrow that to what was
// in flight (1 to 24 of 32), but cost a broker round trip per message: on
// the same machine and run, the App's consume throughput fell from 1.05 to
// 0.25 of the raw client's with one handler, from 1.09 to 0.14 with 64.
const (
	// DefaultSubscription is the subscription name used by Pop.
	DefaultSubscription = "babelqueue"
	// DefaultMaxWaitTime is how long Pop waits when it is given no timeout.
	DefaultMaxWaitTime = time.Second
	// DefaultBatchingMaxPublishDelay bounds how long a publish of a
	// batching producer (one WithProducerOptions turned batching on for)
	// waits for a batch to fill. Publish returns
	// only once the broker acknowledged the write, so the client's own
	// default (10 ms) would add up to 10 ms to every lone publish.
	DefaultBatchingMaxPublishDelay = time.Millisecond
	// DefaultDeadLetterSuffix names the dead-letter queue of a queue.
	DefaultDeadLetterSuffix = driver.DefaultDeadLetterSuffix
)

// Option configures a Transport. Options are applied in order by New; an
// option that rejects its value records the problem, and New reports every
// problem of its options at once (errors.Join), each wrapping
// babelqueue.ErrInvalidOption. A nil Option is ignored.
type Option func(*config)

type config struct {
	serviceURL string
	// serviceURLRejected: WithServiceURL reported its URL, so validate
	// does not report a missing one as well.
	serviceURLRejected bool
	client             pulsar.Client // prepared by the caller; never closed by us

	topicPrefix string

	subscription    string
	subType         pulsar.SubscriptionType
	subTypeDeclared bool
	initialPosition pulsar.SubscriptionInitialPosition
	nackDelay       time.Duration
	maxWait         time.Duration
	maxAttempts     int

	retryProducers   map[string]pulsar.Producer // queue -> producer, given
	retryClient      pulsar.Client              // given
	republishRetries bool                       // build retry producers from our client

	auth                pulsar.Authentication
	tlsTrustCertsFile   string
	tlsAllowInsecure    bool
	tlsValidateHostname bool
	connectionTimeout   time.Duration
	operationTimeout    time.Duration
	failures            *connFailures // fed by the logger of the client we build

	producerOptions func(*pulsar.ProducerOptions)
	dedupName       string // WithDeduplication (dedup.go)
	consumerOptions func(*pulsar.ConsumerOptions)

	logger    *slog.Logger
	onWarning func(string)
	clock     driver.Clock

	authBy string  // the option that set auth, to report a second one
	errs   []error // the problems the options found
}

// fail records a problem of an option.
func (c *config) fail(format string, args ...any) {
	c.errs = append(c.errs, invalid(format, args...))
}

// setAuth sets the client authentication, recording a conflict when
// another option already set one.
func (c *config) setAuth(by string, auth func() (pulsar.Authentication, error)) {
	if c.authBy != "" {
		c.fail("%s and %s both set the client authentication; give one", c.authBy, by)
		return
	}
	a, err := auth()
	if err != nil {
		c.fail("%s: %v", by, err)
		return
	}
	c.auth, c.authBy = a, by
}

func defaultConfig() config {
	return config{
		subscription:    DefaultSubscription,
		subType:         pulsar.Exclusive, // the client's default
		initialPosition: pulsar.SubscriptionPositionEarliest,
		maxWait:         DefaultMaxWaitTime,
		maxAttempts:     babelqueue.DefaultMaxAttempts,
		clock:           driver.SystemClock{},
	}
}

func invalid(format string, args ...any) error {
	return option.Invalid("pulsar", format, args...)
}

// WithServiceURL makes the Transport build, and later close, its own client
// for url, such as "pulsar://127.0.0.1:6650". Exactly one of WithServiceURL
// and WithClient is required.
//
// url is pulsar://, pulsar+ssl:// (TLS), http:// or https:// (the HTTP
// lookup service), then host:port addresses separated by ',' or ';', each
// with its port. New reports a URL that is not, so no bad address reaches
// the client.
func WithServiceURL(url string) Option {
	return func(c *config) {
		u, err := parseServiceURL(url)
		if err != nil {
			c.fail("%v", err)
			c.serviceURLRejected = true
			return
		}
		c.serviceURL = u
	}
}

// WithClient makes the Transport use a client the caller prepared. The
// Transport creates its producers and consumers from it and closes those on
// Close, but never closes the client itself.
func WithClient(client pulsar.Client) Option {
	return func(c *config) {
		if client == nil {
			c.fail("client is nil")
			return
		}
		c.client = client
	}
}

// WithTopicPrefix maps every queue name q to the topic
// "persistent://<tenant>/<namespace>/<q>". Without it a queue name is used
// as the topic name as it is, which Pulsar resolves in public/default. A
// queue name that already holds "://" is always used as it is.
func WithTopicPrefix(tenant, namespace string) Option {
	return func(c *config) {
		if wire.IsBlank(tenant) || wire.IsBlank(namespace) {
			c.fail("tenant and namespace must not be blank")
			return
		}
		c.topicPrefix = "persistent://" + tenant + "/" + namespace + "/"
	}
}

// WithSubscription sets the subscription name Pop subscribes with
// (default DefaultSubscription).
func WithSubscription(name string) Option {
	return func(c *config) {
		if wire.IsBlank(name) {
			c.fail("subscription name is blank")
			return
		}
		c.subscription = name
	}
}

// WithSubscriptionType declares the subscription type. When it is not
// declared the client's default, Exclusive, is used and counts as Exclusive
// for the retry check of New.
//
// On a Failover or Exclusive subscription (declared or not) of a topic of
// two partitions or more, the Transport subscribes a consumer to each
// partition, so that each partition's messages come through a receive
// channel of their own; the broker's assignment of active consumers is the
// same as for the client's partitioned consumer.
//
// A negative acknowledgement advances Pulsar's redelivery count only on
// Shared and KeyShared subscriptions, and native delayed delivery
// (PublishDelayed) is honoured only by those two types.
func WithSubscriptionType(t pulsar.SubscriptionType) Option {
	return func(c *config) {
		switch t {
		case pulsar.Exclusive, pulsar.Shared, pulsar.Failover, pulsar.KeyShared:
		default:
			c.fail("unknown subscription type %d", t)
			return
		}
		c.subType = t
		c.subTypeDeclared = true
	}
}

// WithInitialPosition sets where a new subscription starts (default
// pulsar.SubscriptionPositionEarliest, so that messages published before the
// first Pop of a queue are delivered).
func WithInitialPosition(p pulsar.SubscriptionInitialPosition) Option {
	return func(c *config) {
		c.initialPosition = p
	}
}

// WithNackRedeliveryDelay sets how long the broker waits before it
// redelivers a negatively acknowledged message (default: the client's, one
// minute).
func WithNackRedeliveryDelay(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("nack redelivery delay must be positive, got %v", d)
			return
		}
		c.nackDelay = d
	}
}

// WithMaxWaitTime sets how long Pop waits when it is called with a timeout
// of zero or less. The default is DefaultMaxWaitTime; the Kafka binding's
// option has the same name.
func WithMaxWaitTime(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("max wait must be positive, got %v", d)
			return
		}
		c.maxWait = d
	}
}

// WithMaxAttempts tells the Transport the max attempts of the App that
// consumes through it (default babelqueue.DefaultMaxAttempts). It is used
// only by the retry check of New; set the App's own option to the same value.
func WithMaxAttempts(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("max attempts must be at least 1, got %d", n)
			return
		}
		c.maxAttempts = n
	}
}

// WithRetryProducer gives the producer Retry republishes through for
// messages consumed from queue. It must write to the topic of queue. The
// Transport never closes it. A given producer wins over WithRetryClient and
// WithRepublishRetries.
func WithRetryProducer(queue string, p pulsar.Producer) Option {
	return func(c *config) {
		if wire.IsBlank(queue) || p == nil {
			c.fail("retry producer needs a queue and a producer")
			return
		}
		if c.retryProducers == nil {
			c.retryProducers = make(map[string]pulsar.Producer)
		}
		c.retryProducers[queue] = p
	}
}

// WithRetryClient makes Retry republish through producers it builds lazily
// from client, on the first retry of each queue, and closes on Close. The
// Transport never closes client itself.
func WithRetryClient(client pulsar.Client) Option {
	return func(c *config) {
		if client == nil {
			c.fail("retry client is nil")
			return
		}
		c.retryClient = client
	}
}

// WithRepublishRetries makes Retry republish through producers it builds
// lazily from the Transport's own client. Without this option,
// WithRetryProducer or WithRetryClient, Retry negatively acknowledges.
func WithRepublishRetries() Option {
	return func(c *config) {
		c.republishRetries = true
	}
}

// WithToken authenticates the client the Transport builds with a JWT token.
func WithToken(token string) Option {
	return func(c *config) {
		if wire.IsBlank(token) {
			c.fail("token is blank")
			return
		}
		c.setAuth("WithToken", func() (pulsar.Authentication, error) { return pulsar.NewAuthenticationToken(token), nil })
	}
}

// WithTLSAuth authenticates the client the Transport builds with a client
// certificate and its private key (PEM files).
func WithTLSAuth(certFile, keyFile string) Option {
	return func(c *config) {
		if wire.IsBlank(certFile) || wire.IsBlank(keyFile) {
			c.fail("TLS certificate and key files are required")
			return
		}
		c.setAuth("WithTLSAuth", func() (pulsar.Authentication, error) { return pulsar.NewAuthenticationTLS(certFile, keyFile), nil })
	}
}

// WithTLSTrustCerts makes the client the Transport builds trust the CA
// certificates in file (PEM) for a pulsar+ssl:// service URL. validateHostname
// checks the broker's host name against its certificate.
func WithTLSTrustCerts(file string, validateHostname bool) Option {
	return func(c *config) {
		if wire.IsBlank(file) {
			c.fail("TLS trust certificate file is blank")
			return
		}
		c.tlsTrustCertsFile = file
		c.tlsValidateHostname = validateHostname
	}
}

// WithTLSAllowInsecure makes the client the Transport builds accept any
// broker certificate. Meant for tests only.
func WithTLSAllowInsecure() Option {
	return func(c *config) {
		c.tlsAllowInsecure = true
	}
}

// WithTimeouts sets the connection and operation timeouts of the client the
// Transport builds (zero keeps the client's default).
func WithTimeouts(connection, operation time.Duration) Option {
	return func(c *config) {
		if connection < 0 || operation < 0 {
			c.fail("timeouts must not be negative")
			return
		}
		c.connectionTimeout = connection
		c.operationTimeout = operation
	}
}

// WithProducerOptions lets fn adjust the options of every producer the
// Transport creates. fn runs after the Transport filled in the topic and
// its own defaults (batching off, see the defaults above).
func WithProducerOptions(fn func(*pulsar.ProducerOptions)) Option {
	return func(c *config) {
		c.producerOptions = fn
	}
}

// WithConsumerOptions lets fn adjust the options of every consumer Pop
// subscribes. fn runs after the Transport filled in topic, subscription
// name and type, initial position and nack delay. Set AckWithResponse to
// have Ack wait for the broker (see the defaults above).
//
// On a Failover or Exclusive subscription of a partitioned topic fn runs
// once, and each partition topic is subscribed with its result (DESIGN.md,
// "Receive"); a message channel, dead-letter or retry
// topics, a zero receiver queue, or several topics set by fn keep the
// client's one partitioned consumer.
func WithConsumerOptions(fn func(*pulsar.ConsumerOptions)) Option {
	return func(c *config) {
		c.consumerOptions = fn
	}
}

// WithLogger sets the logger of the default error and warning hooks
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.fail("logger is nil")
			return
		}
		c.logger = l
	}
}

// WithClock sets the clock that times the periodic discovery of
// partitions added to a subscribed topic (DESIGN.md,
// "Receive"). nil is rejected.
func WithClock(clock driver.Clock) Option {
	return func(c *config) {
		if clock == nil {
			c.fail("clock is nil")
			return
		}
		c.clock = clock
	}
}

// WithOnWarning sets the hook called with warnings, such as a retry producer
// that could not be created (default: log at warn level). A panic in it is
// recovered.
func WithOnWarning(fn func(string)) Option {
	return func(c *config) {
		c.onWarning = fn
	}
}

// clientOptions returns the options of the client New builds from a
// service URL. The client logs through the Transport's logger (WithLogger,
// default slog.Default()), and c gets a fresh failures recorder fed by that
// logger, so a producer or consumer that cannot be created says why the
// broker connection failed.
func (c *config) clientOptions() pulsar.ClientOptions {
	logger := c.logger
	if logger == nil {
		logger = slog.Default()
	}
	c.failures = &connFailures{}
	return pulsar.ClientOptions{
		Logger:                     newFailureLogger(logger, c.failures),
		URL:                        c.serviceURL,
		Authentication:             c.auth,
		TLSTrustCertsFilePath:      c.tlsTrustCertsFile,
		TLSAllowInsecureConnection: c.tlsAllowInsecure,
		TLSValidateHostname:        c.tlsValidateHostname,
		ConnectionTimeout:          c.connectionTimeout,
		OperationTimeout:           c.operationTimeout,
	}
}

// validate checks the combination of options.
func (c *config) validate() {
	switch {
	case c.serviceURL == "" && c.client == nil && !c.serviceURLRejected:
		c.fail("one of WithServiceURL or WithClient is required")
	case c.serviceURL != "" && c.client != nil:
		c.fail("WithServiceURL and WithClient exclude each other")
	case c.client != nil && (c.auth != nil || c.tlsTrustCertsFile != "" || c.tlsAllowInsecure ||
		c.connectionTimeout != 0 || c.operationTimeout != 0):
		c.fail("authentication, TLS and timeout options configure a client the Transport builds; set them on the given client instead")
	}
	if c.maxAttempts > 1 && !c.canRepublish() && !c.nackAdvancesRedelivery() {
		name := "undeclared (Exclusive)"
		if c.subTypeDeclared {
			name = subscriptionTypeName(c.subType)
		}
		c.fail("max attempts is %d but the subscription type is %s, on which a negative "+
			"acknowledgement never advances the redelivery count, and there is no way to republish a retry: "+
			"declare WithSubscriptionType(pulsar.Shared) or pulsar.KeyShared, or give WithRetryProducer, "+
			"WithRetryClient or WithRepublishRetries", c.maxAttempts, name)
	}
}

func (c *config) canRepublish() bool {
	return len(c.retryProducers) > 0 || c.retryClient != nil || c.republishRetries
}

// nackAdvancesRedelivery reports whether the declared subscription type
// counts negative acknowledgements.
func (c *config) nackAdvancesRedelivery() bool {
	return c.subTypeDeclared && (c.subType == pulsar.Shared || c.subType == pulsar.KeyShared)
}

func subscriptionTypeName(t pulsar.SubscriptionType) string {
	switch t {
	case pulsar.Exclusive:
		return "Exclusive"
	case pulsar.Shared:
		return "Shared"
	case pulsar.Failover:
		return "Failover"
	case pulsar.KeyShared:
		return "KeyShared"
	}
	return fmt.Sprintf("SubscriptionType(%d)", t)
}
