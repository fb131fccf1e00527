package kafkashare

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Transport is a driver.Transport on a Kafka share group (KIP-932): it
// receives from the group, accepts on Ack, releases on HandBack and on a
// retry, and publishes through franz-go's idempotent producer.
type Transport struct {
	cfg    config
	prod   *kgo.Client
	mu     sync.Mutex
	queues map[string]*queueSet
	closed atomic.Bool
	stop   chan struct{} // closed by Close: the keepers and pollers stop
	// stopCtx ends with stop: it cancels the polls in flight.
	stopCtx    context.Context
	cancelStop context.CancelFunc
	wg         sync.WaitGroup
}

var _ driver.Transport = (*Transport)(nil)

// New returns a Transport; it reports every rejected option at once and
// connects lazily (the producer on the first Send, a queue's share
// consumer on its first Receive).
func New(opts ...Option) (*Transport, error) {
	c := defaults()
	if err := option.Apply(&c, &c.errs, opts); err != nil {
		return nil, err
	}
	if len(c.brokers) == 0 {
		c.errs.Fail("no broker address (WithBrokers)")
		return nil, c.errs.Err()
	}
	popts := append([]kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		// Idempotent (franz-go's default, acks=all required): a produce
		// retried after a lost response is stored once.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}, c.kgoOpts...)
	prod, err := kgo.NewClient(popts...)
	if err != nil { // NewClient only validates; it does not connect
		c.errs.Fail("WithClientOptions: %v", err)
		return nil, c.errs.Err()
	}
	if checkClientOptions(prod, &c.errs); c.errs.Err() != nil {
		prod.Close()
		return nil, c.errs.Err()
	}
	stopCtx, cancelStop := context.WithCancel(context.Background())
	return &Transport{cfg: c, prod: prod, queues: map[string]*queueSet{}, stop: make(chan struct{}), stopCtx: stopCtx, cancelStop: cancelStop}, nil
}

// Features reports keys and headers kept, no publish delay, retries
// settled by a release (the broker's delivery count counts them) and
// HandBack as a release (HandBackNack); Ack never blocks.
func (t *Transport) Features() driver.Features {
	return driver.Features{
		Keys:           true,
		Headers:        true,
		SettlesRetry:   true,
		HandBack:       driver.HandBackNack,
		AckNonBlocking: true,
	}
}

// Close releases every held record, leaves the share groups and closes the
// clients. Records released are delivered again, with their delivery
// count increased.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.stop)
	t.cancelStop()
	t.wg.Wait()
	t.mu.Lock()
	var qs []*queue
	for _, set := range t.queues {
		qs = append(qs, set.members...)
	}
	t.mu.Unlock()
	for _, q := range qs {
		q.close()
	}
	t.prod.Close()
	return nil
}

// Send writes out (Features: no delay) and returns once the broker
// acknowledged it. IntentRetry writes nothing: it releases out.From (at
// once, or after WithRetryDelay with its lock renewed), so the broker's
// delivery count carries the attempt.
//
// ctx bounds the wait only until a request carries the record: franz-go
// fails a record on its context only while no unanswered request holds
// it, so a write in flight when the broker goes away waits for its answer
// (stored once, never in doubt). A write that ctx ended before it was sent
// matches driver.ErrPublishUnknown and was not stored.
func (t *Transport) Send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	if t.closed.Load() {
		return driver.Receipt{}, driver.ErrClosed
	}
	if out.Intent == driver.IntentRetry && out.From != nil {
		h, ok := out.From.Handle.(*held)
		if !ok {
			return driver.Receipt{}, fmt.Errorf("kafkashare: retry of a message this transport did not deliver")
		}
		d := h.q.retry(h)
		return driver.Receipt{Partition: -1, Delay: d}, nil
	}
	if out.Delay > 0 && out.Intent == driver.IntentPublish {
		return driver.Receipt{}, fmt.Errorf("kafkashare: publish to %q with delay %v: %w", out.Queue, out.Delay, driver.ErrDelayUnsupported)
	}
	rec := record(out)
	res := t.prod.ProduceSync(ctx, rec)
	r, err := res.First()
	if err != nil {
		return driver.Receipt{}, produceErr(out.Queue, err)
	}
	return driver.Receipt{Partition: r.Partition}, nil
}

// record builds the Kafka record of out: value, key (out.Key, else the key
// of From), headers (driver.OutgoingHeaders) and timestamp meta.created_at.
// The body's projection is the one the App gave (driver.SetProjection),
// not parsed again. The value and header values view the strings of out
// without a copy: franz-go only reads them.
func record(out *driver.Outgoing) *kgo.Record {
	// One allocation holds the record and the headers of a usual publish
	// (the six contract headers).
	r := new(recordWithHeaders)
	rec := &r.rec
	rec.Topic, rec.Value = out.Queue, stringBytes(out.Body)
	switch {
	case out.Key != nil:
		rec.Key = out.Key
	case out.From != nil:
		if h, ok := out.From.Handle.(*held); ok {
			rec.Key = h.rec.Key
		} else {
			rec.Key = out.From.Key
		}
	}
	var hs []wire.Header
	if !out.Intent.Verbatim() && len(out.Headers) == 0 {
		// driver.OutgoingHeaders without extra headers: the projection's
		// alone, gathered on the stack.
		var buf [6]wire.Header
		hs = out.Projection().AppendHeaders(buf[:0])
	} else {
		hs = driver.OutgoingHeaders(out)
	}
	if len(hs) > 0 {
		rec.Headers = r.headers[:0]
		for _, h := range hs {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: stringBytes(h.Value)})
		}
	}
	if p := out.Projection(); p.HasCreatedAt {
		rec.Timestamp = time.UnixMilli(p.CreatedAt)
	}
	return rec
}

// recordWithHeaders is a record with room for its headers.
type recordWithHeaders struct {
	rec     kgo.Record
	headers [6]kgo.RecordHeader
}

// stringBytes returns the bytes of s without a copy; they must only be
// read.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// produceErr wraps a produce error: one the broker answered with (other
// than a timeout) means nothing was written; any other one may have been
// stored and matches driver.ErrPublishUnknown.
func produceErr(topic string, err error) error {
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		return fmt.Errorf("kafkashare: write to %q: %w: %w", topic, driver.ErrTooLarge, err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable && !errors.Is(err, kerr.RequestTimedOut) {
		return fmt.Errorf("kafkashare: write to %q refused: %w", topic, err)
	}
	return fmt.Errorf("kafkashare: write to %q: %w: %w", topic, driver.ErrPublishUnknown, err)
}

// checkClientOptions reports the WithClientOptions that would override the
// transport's own settings: a group or topics to consume (the share
// consumers set their own), acks other than all, idempotence disabled,
// and pools (received messages view the records' bytes, which a pool
// would reuse).
func checkClientOptions(cl *kgo.Client, errs *option.Errors) {
	if g, _ := cl.OptValue(kgo.ConsumerGroup).(string); g != "" {
		errs.Fail("WithClientOptions: kgo.ConsumerGroup %q: the transport joins its share group (WithShareGroup)", g)
	}
	if g, _ := cl.OptValue(kgo.ShareGroup).(string); g != "" {
		errs.Fail("WithClientOptions: kgo.ShareGroup %q: name the share group with WithShareGroup", g)
	}
	if nonEmpty(cl.OptValue(kgo.ConsumeTopics)) {
		errs.Fail("WithClientOptions: kgo.ConsumeTopics: the App's Consume names the topics")
	}
	if nonEmpty(cl.OptValue(kgo.ConsumePartitions)) {
		errs.Fail("WithClientOptions: kgo.ConsumePartitions: a share group assigns the partitions")
	}
	if acks, _ := cl.OptValue(kgo.RequiredAcks).(kgo.Acks); acks != kgo.AllISRAcks() {
		errs.Fail("WithClientOptions: kgo.RequiredAcks: the idempotent producer needs acks from all in-sync replicas")
	}
	if off, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool); off {
		errs.Fail("WithClientOptions: kgo.DisableIdempotentWrite: a retried produce would write a duplicate")
	}
	if nonEmpty(cl.OptValue(kgo.WithPools)) {
		errs.Fail("WithClientOptions: kgo.WithPools: received messages view the records' bytes, which a pool would reuse")
	}
}

// nonEmpty reports whether v, an option's value, is a slice or map with
// elements (kgo keeps some in unexported types).
func nonEmpty(v any) bool {
	rv := reflect.ValueOf(v)
	return (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && rv.Len() > 0
}
