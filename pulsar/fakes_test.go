package pulsar

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// fakeMessage is a pulsar.Message with the fields the Transport reads.
// Calling any other method panics (nil embedded interface).
type fakeMessage struct {
	pulsar.Message
	payload     []byte
	props       map[string]string
	key         string
	orderingKey string
	redelivery  uint32
	eventTime   time.Time
	id          pulsar.MessageID // nil unless a test sets it
}

func (m *fakeMessage) Payload() []byte               { return m.payload }
func (m *fakeMessage) Properties() map[string]string { return m.props }
func (m *fakeMessage) Key() string                   { return m.key }
func (m *fakeMessage) OrderingKey() string           { return m.orderingKey }
func (m *fakeMessage) RedeliveryCount() uint32       { return m.redelivery }
func (m *fakeMessage) EventTime() time.Time          { return m.eventTime }
func (m *fakeMessage) ID() pulsar.MessageID          { return m.id }

// fakeProducer records what it is asked to send. It also satisfies
// pulsar.Producer, so it can be given through WithRetryProducer.
type fakeProducer struct {
	pulsar.Producer
	topic string

	mu      sync.Mutex
	sent    []*pulsar.ProducerMessage
	sendErr error
	closed  bool
	onSend  func(*pulsar.ProducerMessage) // called after a successful send
	ids     bool                          // return message IDs, as a broker does
	// maxPayload refuses a longer payload as the client does one above the
	// broker's maxMessageSize (pulsar.ErrMessageTooLarge); 0: no limit.
	maxPayload int
}

func (p *fakeProducer) Send(_ context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("producer closed")
	}
	if p.sendErr != nil {
		return nil, p.sendErr
	}
	if p.maxPayload > 0 && len(msg.Payload) > p.maxPayload {
		return nil, pulsar.ErrMessageTooLarge
	}
	p.sent = append(p.sent, msg)
	if p.onSend != nil {
		p.onSend(msg)
	}
	if p.ids {
		return pulsar.NewMessageID(7, int64(len(p.sent)), -1, 0), nil
	}
	return nil, nil
}

// SendAsync writes a copy of msg, as a broker stores what it was sent (the
// Transport reuses msg once answered: send_reuse.go), and answers at once
// with what Send returns.
func (p *fakeProducer) SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	stored := *msg
	stored.Properties = maps.Clone(msg.Properties)
	id, err := p.Send(ctx, &stored)
	cb(id, msg, err)
}

func (p *fakeProducer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
}

func (p *fakeProducer) Topic() string { return p.topic }

func (p *fakeProducer) messages() []*pulsar.ProducerMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*pulsar.ProducerMessage(nil), p.sent...)
}

func (p *fakeProducer) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// fakeConsumer delivers the messages pushed into ch and records
// acknowledgements.
type fakeConsumer struct {
	opts pulsar.ConsumerOptions
	ch   chan pulsar.Message

	mu     sync.Mutex
	acked  []pulsar.Message
	nacked []pulsar.Message
	closed bool
	done   chan struct{}

	// redeliverOnNack makes Nack deliver the message again with its
	// redelivery count advanced, as a Shared subscription does.
	redeliverOnNack bool
}

func (c *fakeConsumer) Receive(ctx context.Context) (pulsar.Message, error) {
	select {
	case m := <-c.ch:
		return m, nil
	case <-c.done:
		return nil, errors.New("consumer closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeConsumer) Ack(m pulsar.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acked = append(c.acked, m)
	return nil
}

func (c *fakeConsumer) Nack(m pulsar.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nacked = append(c.nacked, m)
	if fm, ok := m.(*fakeMessage); ok && c.redeliverOnNack {
		again := *fm
		again.redelivery++
		c.ch <- &again
	}
}

func (c *fakeConsumer) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
}

func (c *fakeConsumer) counts() (acked, nacked int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked), len(c.nacked)
}

// fakeClient hands out fake producers and consumers, one per topic.
type fakeClient struct {
	mu           sync.Mutex
	producers    map[string]*fakeProducer
	consumers    map[string]*fakeConsumer
	producerOpts []pulsar.ProducerOptions
	createErr    error
	subscribeErr error
	closed       bool

	// loopback delivers what a producer sends to the fake consumer of its
	// topic, like a broker would.
	loopback bool
	// maxPayload is the maxPayload of the producers it creates.
	maxPayload int
}

func newFakeClient() *fakeClient {
	return &fakeClient{producers: map[string]*fakeProducer{}, consumers: map[string]*fakeConsumer{}}
}

func (c *fakeClient) CreateProducer(opts pulsar.ProducerOptions) (producer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.createErr != nil {
		return nil, c.createErr
	}
	c.producerOpts = append(c.producerOpts, opts)
	p := &fakeProducer{topic: opts.Topic, maxPayload: c.maxPayload}
	if c.loopback {
		fc := c.consumerLocked(opts.Topic)
		p.onSend = func(m *pulsar.ProducerMessage) {
			fc.ch <- &fakeMessage{payload: m.Payload, props: m.Properties, key: m.Key, orderingKey: m.OrderingKey, eventTime: m.EventTime}
		}
	}
	c.producers[opts.Topic] = p
	return p, nil
}

func (c *fakeClient) Subscribe(opts pulsar.ConsumerOptions) (consumer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subscribeErr != nil {
		return nil, c.subscribeErr
	}
	fc := c.consumerLocked(opts.Topic)
	fc.opts = opts
	return fc, nil
}

// consumer returns the fake consumer of topic, creating it so that a test
// can queue messages before the first Pop.
func (c *fakeClient) consumer(topic string) *fakeConsumer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consumerLocked(topic)
}

func (c *fakeClient) consumerLocked(topic string) *fakeConsumer {
	fc, ok := c.consumers[topic]
	if !ok {
		fc = &fakeConsumer{ch: make(chan pulsar.Message, 256), done: make(chan struct{})}
		c.consumers[topic] = fc
	}
	return fc
}

func (c *fakeClient) producer(topic string) *fakeProducer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.producers[topic]
}

func (c *fakeClient) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

// fakeSetup builds a Transport on fake clients. opts are validated as New
// validates them; WithRepublishRetries builds retry producers from fc and
// WithRetryClient (given any non-nil pulsar.Client) from retry.
type fakeSetup struct {
	tr    *Transport
	fc    *fakeClient
	retry *fakeClient
}

func newFake(t *testing.T, opts ...Option) fakeSetup {
	t.Helper()
	cfg := defaultConfig()
	for _, o := range opts {
		if o(&cfg); len(cfg.errs) > 0 {
			t.Fatalf("option: %v", cfg.errs)
		}
	}
	if cfg.serviceURL == "" && cfg.client == nil {
		cfg.serviceURL = "pulsar://127.0.0.1:6650"
	}
	if cfg.validate(); len(cfg.errs) > 0 {
		t.Fatalf("validate: %v", cfg.errs)
	}
	s := fakeSetup{fc: newFakeClient()}
	var retry client
	switch {
	case cfg.retryClient != nil:
		s.retry = newFakeClient()
		retry = s.retry
	case cfg.republishRetries:
		retry = s.fc
	}
	given := map[string]producer{}
	for q, p := range cfg.retryProducers {
		given[q] = borrowedProducer{p}
	}
	s.tr = newTransport(cfg, s.fc, true, retry, given)
	t.Cleanup(func() { _ = s.tr.Close() })
	return s
}

// stubClient is a pulsar.Client for option validation only.
type stubClient struct{ pulsar.Client }
