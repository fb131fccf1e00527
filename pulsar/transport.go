package pulsar

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Transport is the Pulsar binding of babelqueue.Transport (CONTRACT.md 5)
// and a redrive.Redriver; see Redrive. Every write goes through Send;
// Publish, PublishWithHeaders, PublishDelayed and Retry are thin methods
// over it, Pop is Receive, Nack is HandBack.
//
// It creates one producer per topic on first use and one consumer per queue
// on the first Pop of that queue, and releases all of them on Close. Every
// method is safe for concurrent use; deliveries may be acknowledged and
// handed back in any order, since Pulsar settles each message on its own.
type Transport struct {
	cfg       config
	client    client
	ownClient bool                // close client on Close
	retry     client              // builds retry producers lazily; nil when none
	given     map[string]producer // queue -> retry producer given by the caller

	closed atomic.Bool // set under mu, read without it on hot paths

	mu        sync.Mutex
	producers map[string]*producerSlot // topic -> producer we created
	retries   map[string]*producerSlot // queue -> retry producer we created
	consumers map[string]*consumerSlot // queue -> consumer we created

	// made holds the producers of producers that were created, topic ->
	// producer, so that a publish finds its producer without taking mu.
	made sync.Map
	// subscribed holds the consumer slots of consumers that subscribed,
	// queue -> *consumerSlot, so that a Pop finds its consumer without
	// taking mu; popped is the one the last Pop found there (a consume
	// loop pops one queue), found without hashing the queue name.
	subscribed sync.Map
	popped     atomic.Pointer[consumerSlot]

	// redriveFault, set by tests only, is called by Redrive at named
	// stages; an error stops the run there as a killed process would.
	redriveFault func(stage string) error
}

var _ babelqueue.Transport = (*Transport)(nil)

// New builds a Transport. It fails with an error wrapping
// babelqueue.ErrInvalidOption when an option is invalid, when neither
// WithServiceURL nor WithClient is given, or when max attempts is above 1,
// the subscription type is Exclusive, Failover or undeclared, and no retry
// producer, retry client or WithRepublishRetries gives Retry a way to
// republish (a negative acknowledgement would never advance the redelivery
// count there, so a failing message would be retried forever).
func New(opts ...Option) (*Transport, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	cfg.validate()
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, err
	}
	var c client
	own := false
	if cfg.client != nil {
		c = realClient{c: cfg.client}
	} else {
		pc, err := pulsar.NewClient(cfg.clientOptions())
		if err != nil {
			return nil, fmt.Errorf("pulsar: create client for %s: %w", cfg.serviceURL, err)
		}
		c, own = realClient{c: pc, failures: cfg.failures}, true
	}
	var retry client
	switch {
	case cfg.retryClient != nil:
		retry = realClient{c: cfg.retryClient}
	case cfg.republishRetries:
		retry = c
	}
	given := make(map[string]producer, len(cfg.retryProducers))
	for q, p := range cfg.retryProducers {
		given[q] = borrowedProducer{p}
	}
	return newTransport(cfg, c, own, retry, given), nil
}

// newTransport assembles a Transport around already built clients.
func newTransport(cfg config, c client, own bool, retry client, given map[string]producer) *Transport {
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	return &Transport{
		cfg:       cfg,
		client:    c,
		ownClient: own,
		retry:     retry,
		given:     given,
		producers: make(map[string]*producerSlot),
		retries:   make(map[string]*producerSlot),
		consumers: make(map[string]*consumerSlot),
	}
}

// Topic returns the Pulsar topic a queue maps to (see WithTopicPrefix).
func (t *Transport) Topic(queue string) string {
	if t.cfg.topicPrefix == "" || strings.Contains(queue, "://") {
		return queue
	}
	return t.cfg.topicPrefix + queue
}

// DeadLetterQueue returns the default dead-letter queue of queue,
// queue + DefaultDeadLetterSuffix.
func DeadLetterQueue(queue string) string { return queue + DefaultDeadLetterSuffix }

// Close closes every consumer and producer the Transport created, and the
// client when the Transport built it. Producers and clients given by the
// caller stay open. Every later call returns an error matching
// babelqueue.ErrClosed. Close is idempotent.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return nil
	}
	t.closed.Store(true)
	consumers := make([]*consumerSlot, 0, len(t.consumers))
	for _, s := range t.consumers {
		consumers = append(consumers, s)
	}
	producers := make([]*producerSlot, 0, len(t.producers)+len(t.retries))
	for _, s := range t.producers {
		producers = append(producers, s)
	}
	for _, s := range t.retries {
		producers = append(producers, s)
	}
	t.mu.Unlock()

	// A slot still being created is waited for, then closed.
	for _, s := range consumers {
		<-s.ready
		if s.disc != nil {
			s.disc.halt()
		}
		if s.pre != nil {
			s.pre.halt()
		}
		if s.c != nil {
			s.c.Close()
		}
	}
	for _, s := range producers {
		<-s.ready
		if s.p != nil {
			s.p.Close()
		}
	}
	if t.ownClient {
		t.client.Close()
	}
	return nil
}

func (t *Transport) isClosed() bool { return t.closed.Load() }

func errClosed(op string) error { return fmt.Errorf("pulsar: %s: %w", op, babelqueue.ErrClosed) }

// warn calls the warning hook, recovering a panic in it.
func (t *Transport) warn(msg string) {
	defer func() { _ = recover() }()
	if t.cfg.onWarning != nil {
		t.cfg.onWarning(msg)
		return
	}
	t.cfg.logger.Warn("babelqueue pulsar: " + msg)
}
