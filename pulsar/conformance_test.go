package pulsar

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/conformance"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// conformanceBinding runs the CONTRACT.md 5 blocks of the conformance suite through
// the Transport's real code paths (Publish, Pop, the Consumer on the App)
// over the fake client.
type conformanceBinding struct{ t *testing.T }

var (
	_ conformance.PulsarProjector    = conformanceBinding{}
	_ conformance.PulsarReconciler   = conformanceBinding{}
	_ conformance.PulsarVersionGate  = conformanceBinding{}
	_ conformance.PulsarRouter       = conformanceBinding{}
	_ conformance.VersionGateSettler = conformanceBinding{}
)

func (conformanceBinding) Name() string { return "pulsar" }

var _ conformance.Explainer = conformanceBinding{}

// NotImplemented says why the pulsar column skips a block: a Kafka block,
// or a rule the transport takes from core unchanged (the core column).
func (conformanceBinding) NotImplemented(block string) string {
	return conformance.BrokerSkip("pulsar", block)
}

// PulsarProperties publishes body and returns the properties written.
func (b conformanceBinding) PulsarProperties(body []byte) (map[string]string, error) {
	s := newFake(b.t, WithSubscriptionType(pulsar.Shared))
	if err := s.tr.Publish(context.Background(), "orders", string(body)); err != nil {
		return nil, err
	}
	props := s.fc.producer("orders").messages()[0].Properties
	if props == nil {
		props = map[string]string{}
	}
	return props, nil
}

// ReconcilePulsar delivers a body with bodyAttempts and the given
// redelivery count through Pop and reads the attempts of the body handed
// over.
func (b conformanceBinding) ReconcilePulsar(bodyAttempts int, property string, present bool, redeliveryCount int) int {
	s := newFake(b.t, WithSubscriptionType(pulsar.Shared))
	props := map[string]string{}
	if present {
		props[wire.HeaderAttempts] = property
	}
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(bodyWithAttempts(fmt.Sprint(bodyAttempts))),
		props: props, redelivery: uint32(redeliveryCount)}
	msg, err := s.tr.Pop(context.Background(), "orders", time.Second)
	if err != nil || msg == nil {
		b.t.Fatalf("Pop: %v %v", msg, err)
	}
	n, ok := wire.BodyAttempts([]byte(msg.Body))
	if !ok {
		b.t.Fatalf("Pop handed over a body without attempts: %s", msg.Body)
	}
	return n
}

// delivery is what draining one message through a Consumer did.
type drained struct {
	s        fakeSetup
	routes   []string
	mismatch bool
	version  string
	hooked   bool
}

// drainOne delivers m to a Consumer of "orders" with handlers for urns and
// drains the queue.
func (b conformanceBinding) drainOne(m *fakeMessage, urns []string, trOpts []Option, appOpts ...babelqueue.Option) *drained {
	d := &drained{s: newFake(b.t, append([]Option{WithSubscriptionType(pulsar.Shared), WithMaxWaitTime(5 * time.Millisecond)}, trOpts...)...)}
	handlers := map[string]babelqueue.Handler{}
	for _, u := range urns {
		handlers[u] = func(context.Context, *babelqueue.Envelope) error {
			d.routes = append(d.routes, u)
			return nil
		}
	}
	appOpts = append([]babelqueue.Option{
		babelqueue.WithLegacyURNs(), // the fixtures' jobs need only be non-blank
		babelqueue.WithOnRoutingMismatch(func(string, string, *babelqueue.Envelope) { d.mismatch = true }),
		babelqueue.WithOnSchemaVersionRejected(func(v, _ string) { d.version, d.hooked = v, true }),
	}, appOpts...)
	c := NewConsumer(d.s.tr, "orders", handlers, appOpts...)
	d.s.fc.consumer("orders").ch <- m
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.App().Drain(ctx, "orders"); err != nil {
		b.t.Fatalf("Drain: %v", err)
	}
	return d
}

// AdmitPulsar reports whether a delivery with the given bq-schema-version
// property got past the gate to its handler; a gated body must not reach
// it.
func (b conformanceBinding) AdmitPulsar(value string, present bool, body []byte) bool {
	props := map[string]string{}
	if present {
		props[wire.HeaderSchemaVersion] = value
	}
	env, err := babelqueue.Decode(body)
	if err != nil {
		b.t.Fatalf("fixture: %v", err)
	}
	d := b.drainOne(&fakeMessage{payload: body, props: props}, []string{env.URN()}, nil)
	if d.hooked == (len(d.routes) == 1) {
		b.t.Fatalf("gate hook %v but handler calls %v", d.hooked, d.routes)
	}
	return len(d.routes) == 1
}

// RoutePulsar delivers an envelope of bodyURN with the given bq-job
// property and reports the handler it reached and whether the mismatch hook
// fired.
func (b conformanceBinding) RoutePulsar(property string, present bool, bodyURN string) (string, bool) {
	props := map[string]string{}
	if present {
		props[wire.HeaderJob] = property
	}
	body := `{"job":"` + bodyURN + `","trace_id":"t","data":{},"meta":{"id":"i","queue":"orders","lang":"go","schema_version":1,"created_at":1},"attempts":0}`
	urns := []string{bodyURN}
	if present && !wire.IsBlank(property) && property != bodyURN {
		urns = append(urns, property)
	}
	d := b.drainOne(&fakeMessage{payload: []byte(body), props: props}, urns, nil)
	if len(d.routes) != 1 {
		b.t.Fatalf("handlers reached: %v", d.routes)
	}
	return d.routes[0], d.mismatch
}

// SettleVersionGated delivers a gated message through a Consumer and reports
// what the binding did with it.
func (b conformanceBinding) SettleVersionGated(_ context.Context, in conformance.GatedDelivery) (conformance.GatedOutcome, error) {
	if in.Queue != "orders" {
		return conformance.GatedOutcome{}, conformance.Skip("the fake binding consumes the queue orders only")
	}
	props := map[string]string{}
	for _, h := range in.Headers {
		props[h.Key] = h.Value
	}
	var urns []string
	if env, err := babelqueue.Decode(in.Body); err == nil {
		urns = append(urns, env.URN())
	}
	d := b.drainOne(&fakeMessage{payload: in.Body, props: props, key: "k", redelivery: uint32(in.RedeliveryCount)}, urns,
		[]Option{WithMaxAttempts(max(in.MaxAttempts, 1))},
		babelqueue.WithMaxAttempts(max(in.MaxAttempts, 1)), babelqueue.WithDeadLetter(in.DeadLetter),
		babelqueue.WithUnknownURNStrategy(babelqueue.UnknownURNStrategy(in.UnknownURNStrategy)))
	acked, nacked := d.s.fc.consumer("orders").counts()
	out := conformance.GatedOutcome{
		HandlerCalled: len(d.routes) > 0,
		Acked:         acked == 1,
		Retried:       nacked > 0,
		HookVersion:   d.version,
	}
	d.s.fc.mu.Lock()
	topics := make([]string, 0, len(d.s.fc.producers))
	for topic := range d.s.fc.producers {
		topics = append(topics, topic)
	}
	d.s.fc.mu.Unlock()
	sort.Strings(topics)
	for _, topic := range topics {
		for _, m := range d.s.fc.producer(topic).messages() {
			if topic == "orders" {
				out.Retried = true
			}
			rec := conformance.KafkaRecord{Topic: topic, Key: []byte(m.Key), Value: m.Payload}
			for k, v := range m.Properties {
				rec.Headers = append(rec.Headers, conformance.Header{Key: k, Value: v})
			}
			out.Written = append(out.Written, rec)
		}
	}
	return out, nil
}

func TestConformance(t *testing.T) {
	rep := conformance.Run(t, "", conformanceBinding{t})
	want := map[string]bool{
		"pulsar.property_projection":            true,
		"pulsar.attempts_reconciliation":        true,
		"pulsar.schema_version_gate":            true,
		"babelqueue_go.pulsar_routing":          true,
		"babelqueue_go.version_gate_settlement": true,
		"babelqueue_go.poison_shape":            true,
		"babelqueue_go.envelope_bytes":          true,
	}
	for _, res := range rep.Results {
		if _, ok := want[res.Block]; ok {
			if res.Status() != conformance.StatusPassed {
				t.Errorf("block %s did not pass", res.Block)
			}
			delete(want, res.Block)
		}
	}
	for block := range want {
		if rep.Suite == conformance.EmbeddedSuite { // another suite (conformance.SuiteEnv) may lack this project's blocks
			t.Errorf("block %s is not in the suite", block)
		}
	}
}
