package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/conformance"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// conformanceBinding runs the CONTRACT.md 6 blocks of the conformance suite through
// the transport's real code paths (Publish, Pop, PublishRetryForAttempt,
// PublishDelayed, PublishFrom, the Reinjector's rewrite) over an in-memory
// writer and reader.
type conformanceBinding struct{ t *testing.T }

var (
	_ conformance.KafkaProjector        = conformanceBinding{}
	_ conformance.KafkaReconciler       = conformanceBinding{}
	_ conformance.KafkaVersionGate      = conformanceBinding{}
	_ conformance.KafkaTierSelector     = conformanceBinding{}
	_ conformance.KafkaDelaySelector    = conformanceBinding{}
	_ conformance.KafkaReinjectRewriter = conformanceBinding{}
	_ conformance.KafkaReinjectWaiter   = conformanceBinding{}
	_ conformance.KafkaRepublisher      = conformanceBinding{}
)

func (conformanceBinding) Name() string { return "kafka" }

var _ conformance.Explainer = conformanceBinding{}

// NotImplemented says why the kafka column skips a block: a Pulsar block,
// or a rule the transport takes from core unchanged (the core column).
func (conformanceBinding) NotImplemented(block string) string {
	return conformance.BrokerSkip("kafka", block)
}

type memTransport struct {
	tr  *Transport
	log *fakeLog
	off *fakeOffsets
}

func newMem(opts ...Option) (*memTransport, error) {
	m := &memTransport{log: newFakeLog(), off: newFakeOffsets()}
	base := []Option{WithWriter(&fakeWriter{log: m.log}), WithMaxWaitTime(time.Second),
		WithReaderFactory(func(q string) Reader { return newFakeReader(m.log, m.off, q) })}
	tr, err := New(append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	m.tr = tr
	return m, nil
}

func (m *memTransport) written() []kafkago.Message {
	m.log.mu.Lock()
	defer m.log.mu.Unlock()
	var out []kafkago.Message
	for _, ps := range m.log.parts {
		for _, p := range ps {
			out = append(out, p...)
		}
	}
	return out
}

func toConf(hs []kafkago.Header) []conformance.Header {
	out := make([]conformance.Header, len(hs))
	for i, h := range hs {
		out[i] = conformance.Header{Key: h.Key, Value: string(h.Value)}
	}
	return out
}

func fromConf(hs []conformance.Header) []kafkago.Header {
	out := make([]kafkago.Header, len(hs))
	for i, h := range hs {
		out[i] = kafkago.Header{Key: h.Key, Value: []byte(h.Value)}
	}
	return out
}

func (b conformanceBinding) KafkaHeaders(body []byte) ([]conformance.Header, error) {
	m, err := newMem()
	if err != nil {
		return nil, err
	}
	if err := m.tr.Publish(context.Background(), "orders", string(body)); err != nil {
		return nil, err
	}
	return toConf(m.written()[0].Headers), nil
}

// ReconcileKafka delivers a body with bodyAttempts through Pop and reads
// the attempts of the body Pop hands over.
func (b conformanceBinding) ReconcileKafka(bodyAttempts int, header string, present bool) int {
	m, err := newMem()
	if err != nil {
		b.t.Fatal(err)
	}
	body := `{"job":"urn:x","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":` + strconv.Itoa(bodyAttempts) + `}`
	var hs []kafkago.Header
	if present {
		hs = []kafkago.Header{h(wire.HeaderAttempts, header)}
	}
	m.log.append("orders", 0, kafkago.Message{Value: []byte(body), Headers: hs})
	msg, err := m.tr.Pop(context.Background(), "orders", time.Second)
	if err != nil || msg == nil {
		b.t.Fatalf("Pop: %v %v", msg, err)
	}
	n, ok := wire.ParseAttemptsHeader(wire.ProjectBody([]byte(msg.Body)).Attempts)
	if !ok {
		b.t.Fatalf("Pop handed over a body without attempts: %s", msg.Body)
	}
	return n
}

// AdmitKafka reports whether Pop let the record through the version gate
// (the hook did not fire); a gated body must come out untouched.
func (b conformanceBinding) AdmitKafka(value string, present bool, body []byte) bool {
	gated := false
	m, err := newMem(WithOnSchemaVersionRejected(func(string, string) { gated = true }))
	if err != nil {
		b.t.Fatal(err)
	}
	var hs []kafkago.Header
	if present {
		hs = []kafkago.Header{h(wire.HeaderSchemaVersion, value)}
	}
	m.log.append("orders", 0, kafkago.Message{Value: body, Headers: hs})
	msg, err := m.tr.Pop(context.Background(), "orders", time.Second)
	if err != nil || msg == nil {
		b.t.Fatalf("Pop: %v %v", msg, err)
	}
	if gated && msg.Body != string(body) {
		b.t.Fatalf("a gated body was changed: %q", msg.Body)
	}
	return !gated
}

func tierOfTopic(topic, work string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(topic, work+".retry."))
	return n
}

// RetryTier runs PublishRetryForAttempt and reads the tier it wrote to.
func (b conformanceBinding) RetryTier(tiers []time.Duration, attemptsBefore int) int {
	m, err := newMem(WithRetryTiers(tiers...))
	if err != nil {
		b.t.Fatal(err)
	}
	from := &babelqueue.ReceivedMessage{Queue: "orders", Body: "{}"}
	if err := m.tr.PublishRetryForAttempt(context.Background(), from, attemptsBefore); err != nil {
		if errors.Is(err, ErrDelayUnsupported) && len(m.written()) == 0 {
			return 0
		}
		b.t.Fatal(err)
	}
	return tierOfTopic(m.written()[0].Topic, "orders")
}

func (conformanceBinding) RetryTopic(topic string, n int) string { return RetryTopic(topic, n) }

// DelayTier runs PublishDelayed and reads the tier it wrote to.
func (b conformanceBinding) DelayTier(tiers []time.Duration, delay time.Duration) (int, bool) {
	m, err := newMem(WithRetryTiers(tiers...))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := m.tr.PublishDelayed(context.Background(), "orders", "{}", delay); err != nil {
		if errors.Is(err, ErrDelayUnsupported) && errors.Is(err, babelqueue.ErrDelayUnsupported) && len(m.written()) == 0 {
			return 0, false
		}
		b.t.Fatal(err)
	}
	return tierOfTopic(m.written()[0].Topic, "orders"), true
}

func (b conformanceBinding) ReinjectHeaders(in []conformance.Header) (string, []conformance.Header) {
	r := &Reinjector{clock: driver.SystemClock{}, workOf: map[string]string{"unknown.retry.1": "unknown"}}
	out := r.reinjected(kafkago.Message{Topic: "unknown.retry.1", Value: []byte("v"), Headers: fromConf(in)})
	return out.Topic, toConf(out.Headers)
}

func (conformanceBinding) ReinjectWait(recordTime, now time.Time, tier time.Duration) time.Duration {
	return reinjectWait(recordTime, tier, now)
}

func (b conformanceBinding) PublishFromRecord(ctx context.Context, in conformance.PublishFromInput) (conformance.KafkaRecord, error) {
	m, err := newMem()
	if err != nil {
		return conformance.KafkaRecord{}, err
	}
	rec := kafkago.Message{Topic: in.Reserved.Topic, Key: in.Reserved.Key, Value: in.Reserved.Value, Headers: fromConf(in.Reserved.Headers)}
	from := &babelqueue.ReceivedMessage{Body: string(in.Reserved.Value), Queue: rec.Topic, Headers: headerMap(rec.Headers),
		Handle: &delivery{msg: rec}}
	if err := m.tr.PublishFrom(ctx, in.Queue, string(in.Body), from); err != nil {
		return conformance.KafkaRecord{}, err
	}
	w := m.written()[0]
	return conformance.KafkaRecord{Topic: w.Topic, Key: w.Key, Value: w.Value, Headers: toConf(w.Headers)}, nil
}

func TestConformanceKafkaBlocks(t *testing.T) {
	rep := conformance.Run(t, "", conformanceBinding{t: t})
	want := map[string]bool{
		"kafka.property_projection": true, "kafka.attempts_reconciliation": true, "kafka.schema_version_gate": true,
		"babelqueue_go.kafka_retry_tier": true, "babelqueue_go.kafka_delayed_publish": true,
		"babelqueue_go.kafka_reinject_headers": true, "babelqueue_go.kafka_reinject_wait": true,
		"babelqueue_go.kafka_publish_from": true, "babelqueue_go.version_gate_settlement": true,
		"babelqueue_go.poison_shape": true, "babelqueue_go.envelope_bytes": true,
	}
	for _, res := range rep.Results {
		if want[res.Block] && res.Status() != conformance.StatusPassed {
			t.Errorf("block %s: %s (%s)", res.Block, res.Status(), res.Reason)
		}
		delete(want, res.Block)
	}
	for b := range want {
		if rep.Suite == conformance.EmbeddedSuite { // another suite (conformance.SuiteEnv) may lack this project's blocks
			t.Errorf("block %s is not in the suite", b)
		}
	}
}

var _ conformance.VersionGateSettler = conformanceBinding{}

// SettleVersionGated delivers in through a babelqueue.App over the
// transport (in-memory writer and reader) and reports what happened. A
// redelivery count is built by popping and rewinding that many times.
func (b conformanceBinding) SettleVersionGated(ctx context.Context, in conformance.GatedDelivery) (conformance.GatedOutcome, error) {
	var out conformance.GatedOutcome
	hookCalls := 0
	m, err := newMem(WithMaxWaitTime(20 * time.Millisecond))
	if err != nil {
		return out, err
	}
	defer m.tr.Close()
	m.log.append(in.Queue, 0, kafkago.Message{Value: in.Body, Headers: fromConf(in.Headers)})
	for range in.RedeliveryCount {
		msg, err := m.tr.Pop(ctx, in.Queue, time.Second)
		if err != nil || msg == nil {
			return out, fmt.Errorf("pop for redelivery: %v", err)
		}
		if err := m.tr.Rewind(ctx, msg); err != nil {
			return out, err
		}
	}
	opts := []babelqueue.Option{
		babelqueue.WithDefaultQueue(in.Queue),
		babelqueue.WithDeadLetter(in.DeadLetter),
		babelqueue.WithPollTimeout(20 * time.Millisecond),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		babelqueue.WithOnSchemaVersionRejected(func(version, _ string) {
			hookCalls++
			out.HookVersion = version
		}),
	}
	if in.MaxAttempts > 0 {
		opts = append(opts, babelqueue.WithMaxAttempts(in.MaxAttempts))
	}
	if in.UnknownURNStrategy != "" {
		opts = append(opts, babelqueue.WithUnknownURNStrategy(babelqueue.UnknownURNStrategy(in.UnknownURNStrategy)))
	}
	// A consumer accepts any job that is not blank, so the handler of a
	// fixture's job is registered whatever its shape.
	app, err := babelqueue.NewApp(m.tr, append(opts, babelqueue.WithLegacyURNs())...)
	if err != nil {
		return out, err
	}
	if p := wire.ProjectBody(in.Body); !wire.IsBlank(p.Job) {
		app.Handle(p.Job, func(context.Context, *babelqueue.Envelope) error {
			out.HandlerCalled = true
			return errors.New("the handler of a version-gated message ran")
		})
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := app.Drain(dctx, in.Queue); err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	out.Acked = m.off.get(in.Queue, 0) > 0
	out.Retried = hookCalls > 1 || len(m.log.records(in.Queue)) > 1
	for _, w := range m.written() {
		if w.Topic == in.Queue {
			continue
		}
		if strings.Contains(w.Topic, ".retry.") {
			out.Retried = true
		}
		out.Written = append(out.Written, conformance.KafkaRecord{Topic: w.Topic, Key: w.Key, Value: w.Value, Headers: toConf(w.Headers)})
	}
	return out, nil
}
