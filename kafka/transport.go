package kafka

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Writer is the subset of *kafkago.Writer the transport writes through.
// WriteMessages returns once every record was acknowledged by the broker, or
// with an error.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafkago.Message) error
}

// Reader is the subset of *kafkago.Reader the transport consumes through: a
// group reader without auto-commit. A Reader that also implements io.Closer
// is closed when the transport drops it (Rewind, Close). FetchMessage hands
// the returned record's byte slices (key, value, header values) over to the
// transport, which reads them without copying for as long as the delivery
// lives: a Reader must not change them afterwards (kafka-go's Reader
// allocates them per record). CommitMessages must not keep or change msgs;
// the transport calls it for one queue from one goroutine at a time, with
// offsets that never move backwards.
type Reader interface {
	FetchMessage(ctx context.Context) (kafkago.Message, error)
	CommitMessages(ctx context.Context, msgs ...kafkago.Message) error
}

// Transport implements babelqueue.Transport over Apache Kafka: keys and
// headers, delayed publish when retry tiers are configured, hand-back by
// rewind. Every method is safe for concurrent use. Deliveries of one queue
// may be acknowledged and handed back in any order and from several
// goroutines: per partition, only the end of the contiguous prefix of
// settled deliveries is committed, so a commit never passes a delivery that
// is neither acknowledged nor handed back (DESIGN.md, "Acknowledgement
// ledger").
type Transport struct {
	cfg       config
	writer    Writer
	ownWriter *kafkago.Writer    // nil when the writer was injected
	net       *kafkago.Transport // connections of ownWriter and of admin calls
	dialer    *kafkago.Dialer    // connections of readers and group members

	closed      atomic.Bool // set under mu, read without it on the publish path
	connChecked atomic.Bool // a broker accepted the connection settings (checkConnection)
	mu          sync.Mutex
	readers     map[string]*consumer
}

var _ babelqueue.Transport = (*Transport)(nil)

// New builds a transport. Give it brokers (WithBrokers) and, to consume, a
// group id (WithGroupID); tests may instead inject a Writer and a reader
// factory (WithWriter, WithReaderFactory). Every bad option and a missing
// broker list are reported here at once (errors.Join), each wrapping
// babelqueue.ErrInvalidOption. New does not contact the brokers.
func New(opts ...Option) (*Transport, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if len(cfg.brokers) == 0 && (cfg.writer == nil || cfg.readerFactory == nil) {
		cfg.errs = append(cfg.errs, ErrNoBrokers)
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, readers: make(map[string]*consumer)}
	if len(cfg.brokers) > 0 {
		t.net = netTransport(&cfg)
		t.dialer = &kafkago.Dialer{
			Timeout:       dialTimeout,
			DualStack:     true,
			TLS:           cfg.tls,
			SASLMechanism: cfg.sasl,
			ClientID:      clientID,
		}
	}
	if cfg.writer != nil {
		t.writer = cfg.writer
	} else {
		t.ownWriter = &kafkago.Writer{
			Addr:                   kafkago.TCP(cfg.brokers...),
			Balancer:               &Murmur2Balancer{},
			BatchTimeout:           cfg.linger,
			BatchSize:              cfg.batchSize,
			BatchBytes:             cfg.batchBytes,
			RequiredAcks:           cfg.requiredAcks,
			MaxAttempts:            1, // the transport retries (publish_outcome.go)
			AllowAutoTopicCreation: cfg.autoCreate,
			Transport:              t.net,
			ErrorLogger:            kafkaLogger{cfg.log()},
		}
		t.writer = t.ownWriter
	}
	return t, nil
}

const clientID = "babelqueue-go"

// Close releases what the transport created: its readers, whose pending
// commits are flushed first, and its own Writer and connections. A Writer
// injected with WithWriter is left open. After Close, Pop, Ack and the
// publish calls return ErrClosed; a second Close is a no-op. It returns the
// first error met.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return nil
	}
	t.closed.Store(true)
	readers := t.readers
	t.readers = nil
	t.mu.Unlock()

	var errs []error
	for queue, c := range readers {
		if err := closeReader(c.r); err != nil {
			errs = append(errs, wrapf(err, "close reader of %q", queue))
		}
	}
	if t.ownWriter != nil {
		if err := t.ownWriter.Close(); err != nil {
			errs = append(errs, wrapf(err, "close writer"))
		}
	}
	if t.net != nil {
		t.net.CloseIdleConnections()
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func (t *Transport) isClosed() bool { return t.closed.Load() }

// reader returns the consumer of queue, building its reader on first use
// (fresh).
func (t *Transport) reader(queue string) (c *consumer, fresh bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, false, ErrClosed
	}
	if c, ok := t.readers[queue]; ok {
		return c, false, nil
	}
	var r Reader
	if t.cfg.readerFactory != nil {
		r = t.cfg.readerFactory(queue)
	} else {
		if t.cfg.groupID == "" {
			return nil, false, ErrNoGroupID
		}
		r = newPrefetchReader(t, queue, kafkago.NewReader(kafkago.ReaderConfig{
			Brokers:         t.cfg.brokers,
			GroupID:         t.cfg.groupID,
			Topic:           queue,
			Dialer:          t.dialer,
			MinBytes:        1,
			MaxBytes:        16 << 20,
			MaxWait:         250 * time.Millisecond,
			ReadBackoffMin:  10 * time.Millisecond,
			ReadBackoffMax:  250 * time.Millisecond,
			ReadLagInterval: -1,
			CommitInterval:  t.cfg.commitInterval,
			StartOffset:     kafkago.FirstOffset,
			ErrorLogger:     kafkaLogger{t.cfg.log()},
		}))
	}
	if r == nil {
		return nil, false, wrapf(babelqueue.ErrInvalidOption, "reader factory returned nil for %q", queue)
	}
	c = newConsumer(queue, r)
	t.readers[queue] = c
	return c, true, nil
}

// dropReader forgets c as the consumer of its queue (when it still is) and
// closes its reader, flushing the commits it holds.
func (t *Transport) dropReader(c *consumer) error {
	t.mu.Lock()
	if cur, ok := t.readers[c.queue]; ok && cur == c {
		delete(t.readers, c.queue)
	} else {
		t.mu.Unlock()
		return nil // already dropped (a second Rewind, or Close)
	}
	t.mu.Unlock()
	return closeReader(c.r)
}

func closeReader(r Reader) error {
	if c, ok := r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// dialTimeout bounds every connection attempt to a broker.
const dialTimeout = 10 * time.Second

// netTransport returns kafka-go connections to the configured brokers, with
// the configured TLS and SASL.
func netTransport(cfg *config) *kafkago.Transport {
	return &kafkago.Transport{DialTimeout: dialTimeout, TLS: cfg.tls, SASL: cfg.sasl, ClientID: clientID}
}
