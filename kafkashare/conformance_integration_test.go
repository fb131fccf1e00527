//go:build integration

package kafkashare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// shareConformance runs the blocks of the conformance suite that apply to
// a share-group transport through Transport on the real broker: records
// are produced to topics of their own, received through one share group
// and read back from the broker. Blocks of the kafka module's own
// mechanisms (retry tiers, delayed publish, the re-injector, PublishFrom)
// and rules taken from core unchanged are skipped by name.
type shareConformance struct {
	t *testing.T
	// work is consumed by the share group (tr); its DLQ is work+".dlq".
	// pub is written only (publish cases). All have one partition, so a
	// tap reads what a case wrote in order.
	work, pub string
	tr        *Transport
	raw       *kgo.Client // produces the records a case receives
	pubTap    *tap
	dlqTap    *tap
}

var (
	_ conformance.KafkaProjector     = (*shareConformance)(nil)
	_ conformance.KafkaReconciler    = (*shareConformance)(nil)
	_ conformance.KafkaVersionGate   = (*shareConformance)(nil)
	_ conformance.VersionGateSettler = (*shareConformance)(nil)
	_ conformance.PoisonShaper       = (*shareConformance)(nil)
	_ conformance.EnvelopeWriter     = (*shareConformance)(nil)
	_ conformance.Explainer          = (*shareConformance)(nil)
)

func (*shareConformance) Name() string { return "kafkashare" }

// NotImplemented says why the kafkashare column skips a block.
func (*shareConformance) NotImplemented(block string) string {
	switch block {
	case "babelqueue_go.kafka_retry_tier", "babelqueue_go.kafka_reinject_headers", "babelqueue_go.kafka_reinject_wait":
		return "retry tiers: see kafka (a share group retries by a release)"
	case "babelqueue_go.kafka_delayed_publish":
		return "retry tiers: see kafka (no delayed publish here)"
	case "babelqueue_go.kafka_publish_from":
		return "PublishFrom: see kafka (no kafkashare API)"
	}
	return conformance.BrokerSkip("kafka", block)
}

func TestConformanceShare(t *testing.T) {
	b := newShareConformance(t)
	rep := conformance.Run(t, "", b)
	want := map[string]bool{
		"kafka.property_projection": true, "babelqueue_go.kafka_header_projection": true,
		"kafka.attempts_reconciliation": true, "babelqueue_go.kafka_attempts_raw": true,
		"kafka.schema_version_gate": true, "babelqueue_go.version_gate_settlement": true,
		"babelqueue_go.poison_shape": true, "babelqueue_go.envelope_bytes": true,
	}
	for _, res := range rep.Results {
		if want[res.Block] && res.Status() != conformance.StatusPassed {
			t.Errorf("block %s: %s (%s)", res.Block, res.Status(), res.Reason)
		}
		delete(want, res.Block)
	}
	for blk := range want {
		if rep.Suite == conformance.EmbeddedSuite { // another suite may lack this project's blocks
			t.Errorf("block %s is not in the suite", blk)
		}
	}
}

// newShareConformance creates the topics and the share group, and waits
// for the group's first delivery (a new member is assigned partitions
// after a few seconds), so that every case receives at once.
func newShareConformance(t *testing.T) *shareConformance {
	t.Helper()
	b := &shareConformance{t: t, work: newTopic(t, 1), pub: newTopic(t, 1)}
	b.tr = newTransport(t, WithLockDuration(15*time.Second))
	raw, err := kgo.NewClient(kgo.SeedBrokers(brokertest.KafkaBrokers(t)...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	b.raw = raw
	b.pubTap = newTap(t, b.pub)
	b.dlqTap = newTap(t, b.work+".dlq")
	ctx := context.Background()
	b.produce(ctx, []byte(`{"warm":"up"}`), nil)
	msg, err := b.receive(ctx, 60*time.Second)
	if err != nil {
		t.Fatalf("the share group's first delivery: %v", err)
	}
	if err := b.tr.Ack(ctx, msg); err != nil {
		t.Fatal(err)
	}
	return b
}

// produce writes one record to the work topic (a nil body is an empty
// value, never a null one).
func (b *shareConformance) produce(ctx context.Context, body []byte, hs []conformance.Header) {
	b.t.Helper()
	rec := &kgo.Record{Topic: b.work, Key: []byte("k"), Value: append([]byte{}, body...)}
	for _, h := range hs {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	if err := b.raw.ProduceSync(ctx, rec).FirstErr(); err != nil {
		b.t.Fatalf("produce: %v", err)
	}
}

// receive returns the next delivery of the work topic.
func (b *shareConformance) receive(ctx context.Context, within time.Duration) (*driver.ReceivedMessage, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		msg, err := b.tr.Receive(ctx, b.work, time.Second)
		if err != nil || msg != nil {
			return msg, err
		}
	}
	return nil, fmt.Errorf("nothing delivered from %s within %v", b.work, within)
}

// KafkaHeaders sends body through Transport.Send (IntentPublish) and reads
// the headers of the record the broker stored.
func (b *shareConformance) KafkaHeaders(body []byte) ([]conformance.Header, error) {
	ctx := context.Background()
	if _, err := b.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: b.pub, Body: string(body)}); err != nil {
		return nil, err
	}
	rec, err := b.pubTap.next(ctx)
	if err != nil {
		return nil, err
	}
	return headersOf(rec), nil
}

// ReconcileKafka produces a record with bodyAttempts and the header,
// receives it through the share group (its first delivery) and reads the
// attempts of the body handed over.
func (b *shareConformance) ReconcileKafka(bodyAttempts int, header string, present bool) int {
	b.t.Helper()
	ctx := context.Background()
	body := fmt.Sprintf(`{"job":"urn:x","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":%d}`, bodyAttempts)
	var hs []conformance.Header
	if present {
		hs = []conformance.Header{{Key: wire.HeaderAttempts, Value: header}}
	}
	b.produce(ctx, []byte(body), hs)
	msg, err := b.receive(ctx, 30*time.Second)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.tr.Ack(ctx, msg); err != nil {
		b.t.Fatal(err)
	}
	n, ok := wire.ParseAttemptsHeader(wire.ProjectBody([]byte(msg.Body)).Attempts)
	if !ok {
		b.t.Fatalf("a body without attempts was handed over: %s", msg.Body)
	}
	return n
}

// AdmitKafka produces a record carrying body and the bq-schema-version
// header and runs a babelqueue.App over the share group until the record
// is settled: it was decoded when OnSchemaVersionRejected did not fire.
func (b *shareConformance) AdmitKafka(value string, present bool, body []byte) bool {
	b.t.Helper()
	var hs []conformance.Header
	if present {
		hs = []conformance.Header{{Key: wire.HeaderSchemaVersion, Value: value}}
	}
	run, err := b.settle(context.Background(), body, hs, 0, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return run.hookVersion == ""
}

// SettleVersionGated produces in's record, delivers and releases it
// RedeliveryCount times through the share group (the broker's delivery
// count goes up by one each time), then runs a babelqueue.App on it.
// Acked and Retried are the App's settlement of the delivery (Ack, or
// HandBack or a retry: a release); Written is what the broker stored in
// the DLQ, its topic named after in.Queue.
func (b *shareConformance) SettleVersionGated(ctx context.Context, in conformance.GatedDelivery) (conformance.GatedOutcome, error) {
	opts := []babelqueue.Option{babelqueue.WithDeadLetter(in.DeadLetter)}
	if in.MaxAttempts > 0 {
		opts = append(opts, babelqueue.WithMaxAttempts(in.MaxAttempts))
	}
	if in.UnknownURNStrategy != "" {
		opts = append(opts, babelqueue.WithUnknownURNStrategy(babelqueue.UnknownURNStrategy(in.UnknownURNStrategy)))
	}
	run, err := b.settle(ctx, in.Body, in.Headers, in.RedeliveryCount, opts)
	if err != nil {
		return conformance.GatedOutcome{}, err
	}
	out := conformance.GatedOutcome{HandlerCalled: run.handled, Acked: run.acked > 0,
		Retried: run.handedBack+run.retried > 0, HookVersion: run.hookVersion}
	for _, r := range run.dead {
		w := recordOf(r)
		w.Topic = in.Queue + strings.TrimPrefix(r.Topic, b.work)
		out.Written = append(out.Written, w)
	}
	return out, nil
}

// PoisonBody produces body, lets a babelqueue.App (dead-lettering on, its
// clock at dl.FailedAt) settle it and returns the dead letter the broker
// stored, the App's dead_letter block swapped for dl's
// (corebinding.SwapPoisonBlock). A failure fails the test and returns nil.
func (b *shareConformance) PoisonBody(body []byte, dl conformance.DeadLetter) []byte {
	b.t.Helper()
	run, err := b.settle(context.Background(), body, nil, 0, []babelqueue.Option{
		babelqueue.WithDeadLetter(true), babelqueue.WithClock(bqtest.NewFakeClock(time.UnixMilli(dl.FailedAt)))})
	if err != nil {
		b.t.Error(err)
		return nil
	}
	if len(run.dead) != 1 || run.handled || run.acked != 1 {
		b.t.Errorf("poison %q: %d dead letters, handled %v, acked %d; want 1, false, 1", body, len(run.dead), run.handled, run.acked)
		return nil
	}
	out, err := corebinding.SwapPoisonBlock(run.dead[0].Value, b.work, dl)
	if err != nil {
		b.t.Error(err)
	}
	return out
}

// WriteEnvelope publishes with babelqueue.App.Publish over the transport
// and returns the value the broker stored. The App publishes to in.Queue
// (its meta.queue); the write goes to the publish topic, since a suite
// queue need not be a legal topic name.
func (b *shareConformance) WriteEnvelope(ctx context.Context, in conformance.NewEnvelope) ([]byte, error) {
	data, err := in.DataMap()
	if err != nil {
		return nil, err
	}
	app, err := babelqueue.NewApp(&routed{Transport: b.tr, to: map[string]string{in.Queue: b.pub}}, babelqueue.WithDefaultQueue(in.Queue))
	if err != nil {
		return nil, err
	}
	if _, err := app.Publish(ctx, in.URN, data, babelqueue.WithEnvelopeOptions(babelqueue.WithTraceID(in.TraceID),
		babelqueue.WithID(in.ID), babelqueue.WithCreatedAt(time.UnixMilli(in.CreatedAt)))); err != nil {
		return nil, err
	}
	rec, err := b.pubTap.next(ctx)
	if err != nil {
		return nil, err
	}
	return rec.Value, nil
}

// settled is what an App did with one delivery (settle).
type settled struct {
	handled                    bool
	hookVersion                string
	acked, handedBack, retried int
	dead                       []*kgo.Record // read back from the DLQ
}

// settle produces body with hs, delivers and releases it redeliveries
// times, then consumes the work topic with a babelqueue.App (opts on top
// of a quiet logger and a 50 ms poll) until the App settled the delivery.
// The handler of the body's job, when it has one, fails.
func (b *shareConformance) settle(ctx context.Context, body []byte, hs []conformance.Header, redeliveries int, opts []babelqueue.Option) (*settled, error) {
	b.produce(ctx, body, hs)
	for i := range redeliveries {
		msg, err := b.receive(ctx, 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("delivery %d before the App: %w", i+1, err)
		}
		if err := b.tr.HandBack(ctx, msg); err != nil {
			return nil, err
		}
	}
	run := &settled{}
	obs := &routed{Transport: b.tr, settledc: make(chan struct{}, 1)}
	app, err := babelqueue.NewApp(obs, append([]babelqueue.Option{
		babelqueue.WithDefaultQueue(b.work),
		babelqueue.WithPollTimeout(50 * time.Millisecond),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		babelqueue.WithOnError(func(error) {}),
		babelqueue.WithLegacyURNs(), // any job a consumer accepts has a handler
		babelqueue.WithOnSchemaVersionRejected(func(version, _ string) { run.hookVersion = version }),
	}, opts...)...)
	if err != nil {
		return nil, err
	}
	if p := wire.ProjectBody(body); !wire.IsBlank(p.Job) {
		app.Handle(p.Job, func(context.Context, *babelqueue.Envelope) error {
			run.handled = true
			return errors.New("the handler ran")
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- app.Consume(cctx, b.work) }()
	tm := time.NewTimer(30 * time.Second)
	select {
	case <-obs.settledc:
	case <-tm.C:
	}
	tm.Stop()
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("consume: %w", err)
	}
	obs.mu.Lock()
	run.acked, run.handedBack, run.retried = obs.acked, obs.handedBack, obs.retried
	dlqWrites := obs.sentTo[b.work+".dlq"]
	obs.mu.Unlock()
	if run.acked+run.handedBack+run.retried == 0 {
		return nil, errors.New("the App settled nothing within 30s")
	}
	for range dlqWrites {
		rec, err := b.dlqTap.next(ctx)
		if err != nil {
			return nil, err
		}
		run.dead = append(run.dead, rec)
	}
	if run.handedBack+run.retried > 0 {
		// The record comes back: take it out of the way of the next case.
		msg, err := b.receive(ctx, 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("the released record: %w", err)
		}
		if err := b.tr.Ack(ctx, msg); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// routed is the transport as an App sees it in a case: Send goes to the
// topic to maps a queue to (the queue itself when absent), and every
// settlement is counted; settledc receives one value per settlement.
type routed struct {
	*Transport
	to       map[string]string
	settledc chan struct{}

	mu                         sync.Mutex
	acked, handedBack, retried int
	sentTo                     map[string]int
}

func (r *routed) note(n *int) {
	r.mu.Lock()
	*n++
	r.mu.Unlock()
	if r.settledc != nil {
		select {
		case r.settledc <- struct{}{}:
		default:
		}
	}
}

func (r *routed) Ack(ctx context.Context, msg *driver.ReceivedMessage) error {
	err := r.Transport.Ack(ctx, msg)
	r.note(&r.acked)
	return err
}

func (r *routed) HandBack(ctx context.Context, msg *driver.ReceivedMessage) error {
	err := r.Transport.HandBack(ctx, msg)
	r.note(&r.handedBack)
	return err
}

func (r *routed) Send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	if to, ok := r.to[out.Queue]; ok {
		o := *out
		o.Queue = to
		out = &o
	}
	rc, err := r.Transport.Send(ctx, out)
	if out.Intent == driver.IntentRetry {
		r.note(&r.retried)
	} else if err == nil {
		r.mu.Lock()
		if r.sentTo == nil {
			r.sentTo = map[string]int{}
		}
		r.sentTo[out.Queue]++
		r.mu.Unlock()
	}
	return rc, err
}

// tap reads one partition-0 topic from its start, record by record.
type tap struct {
	cl  *kgo.Client
	buf []*kgo.Record
}

func newTap(t testing.TB, topic string) *tap {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokertest.KafkaBrokers(t)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &tap{cl: cl}
}

// next returns the next record of the topic, waiting at most 30 s.
func (p *tap) next(ctx context.Context) (*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(p.buf) == 0 {
		fs := p.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no record read: %w", ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { p.buf = append(p.buf, r) })
	}
	r := p.buf[0]
	p.buf = p.buf[1:]
	return r, nil
}

func headersOf(r *kgo.Record) []conformance.Header {
	out := make([]conformance.Header, len(r.Headers))
	for i, h := range r.Headers {
		out[i] = conformance.Header{Key: h.Key, Value: string(h.Value)}
	}
	return out
}

func recordOf(r *kgo.Record) conformance.KafkaRecord {
	return conformance.KafkaRecord{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: headersOf(r)}
}
