package kafka

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Writer is the subset of *kafkago.Writer the transport writes through.
// WriteMessages returns once every record was acknowledged by the broker, or
// with an error. It must not change the records' byte slices: a new
// message's value and header values are read-only views of its strings.
// It makes one attempt per call (a kafka-go Writer: MaxAttempts 1; see
// WithWriter), so that a failed write can be classified as refused or
// unknown.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafkago.Message) error
}

// Reader is the subset of *kafkago.Reader a transport built with
// WithReaderFactory consumes through: a group reader without auto-commit.
// (Built from brokers and a group id, the transport reads through a
// consumer-group member instead; DESIGN.md, "Group member reader".) A Reader that also implements io.Closer
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
	cfg        config
	writer     Writer
	ownWriter  *kafkago.Writer    // nil when the writer was injected
	loneWriter *kafkago.Writer    // ownWriter's twin sending each record at once; nil when the writer was injected
	manyWriter *kafkago.Writer    // ownWriter's twin for concurrent single-record writes (send.go); nil when the writer was injected
	fewWriter  *kafkago.Writer    // ownWriter's twin for SendBatch calls of at most fewBatchSize records (send_batch.go); nil when the writer was injected
	writing    atomic.Int32       // writes in flight through the own writers
	batchCalls atomic.Int32       // SendBatch writes in flight (send_batch.go)
	net        *kafkago.Transport // connections of ownWriter and of admin calls
	netMemo    *metadataMemo      // t.net as the writers use it (metadatamemo.go)
	dialer     *kafkago.Dialer    // connections of readers and group members

	closed      atomic.Bool // set under mu, read without it on the publish path
	connChecked atomic.Bool // a broker accepted the connection settings (checkConnection)
	mu          sync.Mutex
	readers     map[string]*consumer
	budget      *recordBudget            // records buffered or in flight across the queues read by group members
	readyMember atomic.Pointer[consumer] // the member ReceiveReady last used (receive_ready.go)
	tiers       *tierWatch               // nil without tiers to check (tierwatch.go)
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
	if len(cfg.brokers) == 0 && !cfg.brokersRejected && (cfg.writer == nil || (cfg.readerFactory == nil && cfg.memberFactory == nil)) {
		cfg.errs.Add(ErrNoBrokers)
	}
	if err := cfg.errs.Err(); err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, readers: make(map[string]*consumer),
		budget: newRecordBudget(cfg.maxBufferedRecords, cfg.maxBufferedBytes)}
	if len(cfg.brokers) > 0 {
		t.net = netTransport(&cfg)
		t.netMemo = newMetadataMemo(t.net, cfg.clock)
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
		t.ownWriter = t.newWriter(cfg.batchSize)
		t.writer = t.ownWriter
		// A lone record goes out at once instead of waiting out the
		// linger for company that is not coming (see write).
		t.loneWriter = t.newWriter(1)
		t.manyWriter = t.newWriter(min(cfg.batchSize, singlesBatchSize))
		t.fewWriter = t.newWriter(min(cfg.batchSize, fewBatchSize))
	}
	t.tiers = newTierWatch(t)
	return t, nil
}

const clientID = "babelqueue-go"

// newWriter builds a kafka-go Writer of the configured brokers sending a
// partition's batch at batchSize records or after the linger.
func (t *Transport) newWriter(batchSize int) *kafkago.Writer {
	logger, errorLogger := kafkaLoggers(t.cfg.log())
	return &kafkago.Writer{
		Addr:                   kafkago.TCP(t.cfg.brokers...),
		Balancer:               &Murmur2Balancer{},
		BatchTimeout:           t.cfg.linger,
		BatchSize:              batchSize,
		BatchBytes:             t.cfg.batchBytes,
		RequiredAcks:           t.cfg.requiredAcks,
		MaxAttempts:            1, // the transport retries what was refused (publish_outcome.go)
		AllowAutoTopicCreation: t.cfg.autoCreate,
		Transport:              t.netMemo,
		Logger:                 logger,
		ErrorLogger:            errorLogger,
	}
}

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
	t.tiers.stop()

	var errs []error
	for queue, c := range readers {
		if err := closeConsumer(c); err != nil {
			errs = append(errs, wrapf(err, "close reader of %q", queue))
		}
	}
	if t.ownWriter != nil {
		if err := t.ownWriter.Close(); err != nil {
			errs = append(errs, wrapf(err, "close writer"))
		}
		if err := t.loneWriter.Close(); err != nil {
			errs = append(errs, wrapf(err, "close writer"))
		}
		if err := t.manyWriter.Close(); err != nil {
			errs = append(errs, wrapf(err, "close writer"))
		}
		if err := t.fewWriter.Close(); err != nil {
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
// (fresh). A group member built for a Receive (deferHeaders) builds no
// header maps ahead.
func (t *Transport) reader(queue string, deferHeaders bool) (c *consumer, fresh bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, false, ErrClosed
	}
	if c, ok := t.readers[queue]; ok {
		return c, false, nil
	}
	if t.cfg.readerFactory == nil {
		if t.cfg.groupID == "" {
			return nil, false, ErrNoGroupID
		}
		var g groupMember
		if t.cfg.memberFactory != nil {
			g = t.cfg.memberFactory(t.cfg.groupID, []string{queue})
		} else {
			var err error
			if g, err = t.newKafkaMember(t.cfg.groupID, []string{queue}, t.cfg.startAt.offset()); err != nil {
				return nil, false, wrapf(err, "join group %q for %q", t.cfg.groupID, queue)
			}
		}
		c = &consumer{queue: queue, member: newMemberReader(t, queue, g, deferHeaders)}
		t.readers[queue] = c
		t.tiers.watch(queue)
		return c, true, nil
	}
	r := t.cfg.readerFactory(queue)
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
	return closeConsumer(c)
}

// closeConsumer closes the reader or the group member of c.
func closeConsumer(c *consumer) error {
	if c.member != nil {
		return c.member.Close()
	}
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
