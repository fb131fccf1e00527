package pulsar

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func bodyWithAttempts(raw string) string {
	return `{"job":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":` + raw + `}`
}

func TestPopAppliesThePulsarAttemptsRule(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		props      map[string]string
		redelivery uint32
		want       string // body attempts after Pop; "" means body unchanged
	}{
		{name: "first delivery", body: bodyWithAttempts("0"), want: ""},
		{name: "redelivery count floors", body: bodyWithAttempts("0"), redelivery: 2, want: "2"},
		{name: "property wins over body", body: bodyWithAttempts("0"), props: map[string]string{"bq-attempts": "2"}, want: "2"},
		{name: "property lower than body is authoritative", body: bodyWithAttempts("4"), props: map[string]string{"bq-attempts": "1"}, want: "1"},
		{name: "max of property and redelivery", body: bodyWithAttempts("0"), props: map[string]string{"bq-attempts": "1"}, redelivery: 3, want: "3"},
		{name: "invalid property falls back to body", body: bodyWithAttempts("1"), props: map[string]string{"bq-attempts": "-2"}, want: ""},
		{name: "blank property falls back to body", body: bodyWithAttempts("1"), props: map[string]string{"bq-attempts": " "}, redelivery: 1, want: ""},
		{name: "out of range property falls back", body: bodyWithAttempts("0"), props: map[string]string{"bq-attempts": "2147483648"}, want: ""},
		{name: "non-integer attempts not rewritten", body: bodyWithAttempts(`"1"`), redelivery: 4, want: ""},
		{name: "fractional attempts not rewritten", body: bodyWithAttempts(`1.5`), redelivery: 4, want: ""},
		{name: "missing attempts not rewritten", body: `{"job":"urn:a","trace_id":"t","data":{}}`, redelivery: 4, want: ""},
		{name: "not json not rewritten", body: "\xff\x00raw", redelivery: 4, want: ""},
		{name: "gated message not rewritten", body: bodyWithAttempts("0"), props: map[string]string{"bq-schema-version": "2"}, redelivery: 2, want: ""},
		{name: "body version gated not rewritten", redelivery: 2, want: "",
			body: `{"job":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":2,"created_at":1},"attempts":0}`},
		{name: "schema version 1 property still reconciles", body: bodyWithAttempts("0"), props: map[string]string{"bq-schema-version": "1"}, redelivery: 1, want: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFake(t, WithSubscriptionType(pulsar.Shared))
			s.fc.consumer("q").ch <- &fakeMessage{payload: []byte(tt.body), props: tt.props, redelivery: tt.redelivery}
			msg, err := s.tr.Pop(context.Background(), "q", time.Second)
			if err != nil || msg == nil {
				t.Fatalf("Pop = %v, %v", msg, err)
			}
			want := tt.body
			if tt.want != "" {
				if n, _ := wire.BodyAttempts([]byte(msg.Body)); strconv.Itoa(n) != tt.want {
					t.Fatalf("body attempts = %d in %s, want %s", n, msg.Body, tt.want)
				}
				// Everything but the attempts value is kept.
				want = strings.Replace(tt.body, `"attempts":`+attemptsOf(tt.body), `"attempts":`+tt.want, 1)
			}
			if msg.Body != want {
				t.Errorf("body = %s\nwant  %s", msg.Body, want)
			}
			if len(tt.props) == 0 {
				if len(msg.Headers) != 0 {
					t.Errorf("headers = %v, want none", msg.Headers)
				}
			} else if diff := cmp.Diff(tt.props, msg.Headers); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if msg.Queue != "q" || Message(msg) == nil {
				t.Errorf("queue %q, handle %v", msg.Queue, msg.Handle)
			}
		})
	}
}

func attemptsOf(body string) string {
	i := strings.LastIndex(body, `"attempts":`)
	rest := body[i+len(`"attempts":`):]
	return strings.TrimSuffix(rest, "}")
}

func TestPopKeepsBodyBytesWhenAttemptsUnchanged(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	odd := "{ \"attempts\" : 2 ,\n \"job\":\"urn:a\", \"unknown\": [1,2] }"
	s.fc.consumer("q").ch <- &fakeMessage{payload: []byte(odd), props: map[string]string{"bq-attempts": "2"}, redelivery: 1}
	msg, err := s.tr.Pop(context.Background(), "q", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Body != odd {
		t.Errorf("body rewritten although attempts did not change: %q", msg.Body)
	}
}

func TestPopTimeoutReturnsNil(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithMaxWaitTime(20*time.Millisecond))
	msg, err := s.tr.Pop(context.Background(), "q", 0)
	if msg != nil || err != nil {
		t.Fatalf("Pop on an empty queue = %v, %v; want nil, nil", msg, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.tr.Pop(ctx, "q", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestPopSubscribesWithOptions(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.KeyShared), WithSubscription("billing"),
		WithTopicPrefix("acme", "prod"), WithNackRedeliveryDelay(250*time.Millisecond),
		WithInitialPosition(pulsar.SubscriptionPositionLatest),
		WithConsumerOptions(func(o *pulsar.ConsumerOptions) { o.Name = "c1" }))
	if _, err := s.tr.Pop(context.Background(), "orders", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := s.tr.Pop(context.Background(), "orders", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	fc := s.fc.consumer("persistent://acme/prod/orders")
	o := fc.opts
	if o.Topic != "persistent://acme/prod/orders" || o.SubscriptionName != "billing" || o.Type != pulsar.KeyShared ||
		o.NackRedeliveryDelay != 250*time.Millisecond || o.SubscriptionInitialPosition != pulsar.SubscriptionPositionLatest ||
		o.Name != "c1" {
		t.Errorf("consumer options = %+v", o)
	}
	if len(s.fc.consumers) != 1 {
		t.Errorf("subscribed %d times, want once", len(s.fc.consumers))
	}
}

func TestPopSubscribeErrorIsReturnedAndRetried(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	s.fc.subscribeErr = errors.New("broker down")
	if _, err := s.tr.Pop(context.Background(), "q", time.Millisecond); err == nil || !strings.Contains(err.Error(), "broker down") {
		t.Fatalf("Pop = %v, want the subscribe error", err)
	}
	s.fc.subscribeErr = nil
	if _, err := s.tr.Pop(context.Background(), "q", time.Millisecond); err != nil {
		t.Fatalf("Pop after the broker came back = %v", err)
	}
}

func TestAckAndNack(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	fc := s.fc.consumer("q")
	fc.ch <- &fakeMessage{payload: []byte(envelope)}
	fc.ch <- &fakeMessage{payload: []byte(envelope)}
	a, _ := s.tr.Pop(ctx, "q", time.Second)
	n, _ := s.tr.Pop(ctx, "q", time.Second)
	if err := s.tr.Ack(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.tr.Nack(ctx, n); err != nil {
		t.Fatal(err)
	}
	if fc.acked[0] != Message(a) || fc.nacked[0] != Message(n) || len(fc.acked) != 1 || len(fc.nacked) != 1 {
		t.Errorf("acked %v nacked %v", fc.acked, fc.nacked)
	}
	foreign := &babelqueue.ReceivedMessage{Body: envelope}
	if err := s.tr.Ack(ctx, foreign); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Errorf("Ack of a foreign message = %v", err)
	}
}

// chanConsumer is a fakeConsumer that, like pulsar.Consumer, also offers
// its receive queue as a channel: what is queued on cm is reachable only
// through Chan, what is queued on the fakeConsumer only through Receive.
type chanConsumer struct {
	*fakeConsumer
	cm chan pulsar.ConsumerMessage
}

func (c *chanConsumer) Chan() <-chan pulsar.ConsumerMessage { return c.cm }

type chanClient struct {
	*fakeClient
	c *chanConsumer
}

func (c chanClient) Subscribe(pulsar.ConsumerOptions) (consumer, error) { return c.c, nil }

func TestPopTakesPreparedMessagesFromTheClientChannelThenWaits(t *testing.T) {
	cc := &chanConsumer{
		fakeConsumer: &fakeConsumer{ch: make(chan pulsar.Message, 1), done: make(chan struct{})},
		cm:           make(chan pulsar.ConsumerMessage, 1),
	}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Shared, true
	tr := newTransport(cfg, chanClient{fakeClient: newFakeClient(), c: cc}, false, nil, nil)
	defer tr.Close()
	ctx := context.Background()

	waiting := &fakeMessage{payload: []byte(bodyWithAttempts("0")), props: map[string]string{"bq-job": "urn:a"}, redelivery: 2}
	cc.cm <- pulsar.ConsumerMessage{Message: waiting}
	msg, err := tr.Pop(ctx, "q", time.Second)
	if err != nil || msg == nil {
		t.Fatalf("Pop of a waiting message = %v, %v", msg, err)
	}
	if Message(msg) != waiting || msg.Body != bodyWithAttempts("2") || msg.Headers["bq-job"] != "urn:a" || msg.Queue != "q" {
		t.Errorf("Pop = body %s headers %v queue %q; want the waiting message with attempts 2", msg.Body, msg.Headers, msg.Queue)
	}
	// The prefetcher decoded the body as the attempts rule left it.
	if env, err := msg.Decoded(); err != nil || env.Attempts != 2 {
		t.Errorf("Decoded = %+v, %v; want attempts 2", env, err)
	}
	if err := tr.Ack(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if acked, _ := cc.counts(); acked != 1 {
		t.Errorf("acked %d, want 1", acked)
	}

	// Nothing waiting: Pop waits for the prefetcher, up to its timeout.
	later := &fakeMessage{payload: []byte(envelope)}
	go func() {
		time.Sleep(20 * time.Millisecond)
		cc.cm <- pulsar.ConsumerMessage{Message: later}
	}()
	if msg, err := tr.Pop(ctx, "q", 5*time.Second); err != nil || Message(msg) != later {
		t.Fatalf("Pop of a message that arrives while waiting = %v, %v", msg, err)
	}
	if msg, err := tr.Pop(ctx, "q", 20*time.Millisecond); msg != nil || err != nil {
		t.Fatalf("Pop on an empty queue = %v, %v; want nil, nil", msg, err)
	}
}

// TestPrefetchKeepsOrderAndStopsOnClose: prepared deliveries come out in
// the order the client received them, more than the prefetch depth of
// them; a Pop waiting when the Transport closes returns ErrClosed, and the
// prefetcher has stopped before the consumer is closed.
func TestPrefetchKeepsOrderAndStopsOnClose(t *testing.T) {
	const n = 3 * prefetchDepth
	cc := &chanConsumer{
		fakeConsumer: &fakeConsumer{ch: make(chan pulsar.Message, 1), done: make(chan struct{})},
		cm:           make(chan pulsar.ConsumerMessage, n),
	}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Shared, true
	tr := newTransport(cfg, chanClient{fakeClient: newFakeClient(), c: cc}, false, nil, nil)
	for i := range n {
		cc.cm <- pulsar.ConsumerMessage{Message: &fakeMessage{payload: []byte(bodyWithAttempts(strconv.Itoa(i)))}}
	}
	ctx := context.Background()
	for i := range n {
		msg, err := tr.Pop(ctx, "q", time.Second)
		if err != nil || msg == nil {
			t.Fatalf("Pop %d = %v, %v", i, msg, err)
		}
		if want := bodyWithAttempts(strconv.Itoa(i)); msg.Body != want {
			t.Fatalf("Pop %d = %s, want %s", i, msg.Body, want)
		}
	}
	popped := make(chan error, 1)
	go func() {
		_, err := tr.Pop(ctx, "q", time.Minute)
		popped <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	popEndsClosed(t, popped)
	s := tr.consumers["q"]
	select {
	case <-s.pre.done:
	default:
		t.Error("prefetcher still running after Close")
	}
}

func TestPopBodyReadsThePayloadInPlace(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	payload := []byte(envelope)
	s.fc.consumer("q").ch <- &fakeMessage{payload: payload}
	msg, err := s.tr.Pop(context.Background(), "q", time.Second)
	if err != nil || msg == nil {
		t.Fatalf("Pop = %v, %v", msg, err)
	}
	if msg.Body != envelope || unsafe.StringData(msg.Body) != &payload[0] {
		t.Errorf("body %q is a copy of the payload, want the payload itself", msg.Body)
	}
}

// TestReceiveAckHandBackConcurrently: deliveries of one queue received,
// acknowledged and handed back from several goroutines, in any order, are
// each settled exactly once.
func TestReceiveAckHandBackConcurrently(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	const n = 200
	fc := s.fc.consumer("q")
	for i := range n {
		fc.ch <- &fakeMessage{payload: []byte(bodyWithAttempts(strconv.Itoa(i)))}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []*babelqueue.ReceivedMessage
			for {
				msg, err := s.tr.Receive(ctx, "q", 20*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if msg == nil {
					break
				}
				held = append(held, msg)
			}
			// Settle in reverse order, alternating Ack and HandBack.
			for i := len(held) - 1; i >= 0; i-- {
				settle := s.tr.Ack
				if (i+w)%2 == 0 {
					settle = s.tr.HandBack
				}
				if err := settle(ctx, held[i]); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	fc.mu.Lock()
	defer fc.mu.Unlock()
	seen := map[pulsar.Message]int{}
	for _, m := range append(append([]pulsar.Message(nil), fc.acked...), fc.nacked...) {
		seen[m]++
	}
	if len(seen) != n || len(fc.acked)+len(fc.nacked) != n {
		t.Fatalf("settled %d distinct of %d (%d acks, %d nacks)", len(seen), n, len(fc.acked), len(fc.nacked))
	}
}

// TestPrefetchConcurrentPopsHandOutEachMessageOnce: Pops from several
// goroutines over a prefetching consumer get every message exactly once.
func TestPrefetchConcurrentPopsHandOutEachMessageOnce(t *testing.T) {
	const n = 500
	cc := &chanConsumer{
		fakeConsumer: &fakeConsumer{ch: make(chan pulsar.Message, 1), done: make(chan struct{})},
		cm:           make(chan pulsar.ConsumerMessage, 8),
	}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Shared, true
	tr := newTransport(cfg, chanClient{fakeClient: newFakeClient(), c: cc}, false, nil, nil)
	defer tr.Close()
	go func() {
		for i := range n {
			cc.cm <- pulsar.ConsumerMessage{Message: &fakeMessage{payload: []byte(bodyWithAttempts(strconv.Itoa(i)))}}
		}
	}()
	ctx := context.Background()
	var mu sync.Mutex
	seen := make(map[string]int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				msg, err := tr.Pop(ctx, "q", 200*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if msg == nil {
					return
				}
				mu.Lock()
				seen[msg.Body]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("got %d distinct messages, want %d", len(seen), n)
	}
	for body, k := range seen {
		if k != 1 {
			t.Errorf("%s handed out %d times", body, k)
		}
	}
}

// popEndsClosed fails the test unless the Pop reporting on popped returns
// ErrClosed within 5 s of the transport's Close.
func popEndsClosed(t *testing.T, popped <-chan error) {
	t.Helper()
	select {
	case err := <-popped:
		if !errors.Is(err, babelqueue.ErrClosed) {
			t.Errorf("Pop waiting at Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pop still waiting 5s after Close")
	}
}
