//go:build integration

package pulsar

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestIntegrationOversizeDeadLetterIsBounded: a raw producer writes a
// 4,000,000-byte payload that is not UTF-8 (below the broker's 5 MiB
// maxMessageSize), then a valid envelope. The poison dead letter (base64,
// 5.3 MB) is above maxMessageSize: before the oversize rule the client
// refused it on every redelivery, nothing reached the DLQ and the original
// was negatively acknowledged forever. Now a bounded dead letter naming the
// original's message id is written, the original and the valid message are
// acknowledged (the subscription holds nothing afterwards), the valid one
// is handled, the refusal is reported, and the original stays in its topic
// for any other subscription.
func TestIntegrationOversizeDeadLetterIsBounded(t *testing.T) {
	c := rawClient(t)
	q := uniqueQueue(t)
	sub := "oversize-sub"
	dlqReader := newRawReader(t, c, DeadLetterQueue(q))
	keeper := newRawReader(t, c, q) // another subscription: the original stays there
	p := rawProducer(t, c, q)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bigID, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(strings.Repeat("\xff", 4_000_000)), Key: "k-big",
		Properties: map[string]string{"bq-job": "urn:a", "bq-message-id": "id-big"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(makeBody(t, "urn:a", q)), Key: "k-ok"}); err != nil {
		t.Fatal(err)
	}

	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared), WithSubscription(sub))
	var handled atomic.Int32
	var mu sync.Mutex
	var reported []error
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLegacyURNs(),
		babelqueue.WithOnError(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Handle("urn:a", func(context.Context, *babelqueue.Envelope) error { handled.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Consume(actx, q) }()

	m := dlqReader.next(t, 60*time.Second)
	var b struct {
		Job      string `json:"job"`
		Meta     struct{ ID string }
		Oversize struct {
			Reason     string `json:"reason"`
			WriteError string `json:"write_error"`
			Size       int    `json:"size"`
			Refused    int    `json:"refused_size"`
			Topic      string `json:"topic"`
			MessageID  string `json:"message_id"`
			Partition  *int   `json:"partition"`
		} `json:"oversize"`
		DeadLetter struct {
			Reason        string  `json:"reason"`
			Error         *string `json:"error"`
			OriginalQueue string  `json:"original_queue"`
			Attempts      int     `json:"attempts"`
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal(m.Payload(), &b); err != nil {
		t.Fatalf("bounded dead letter: %v: %.300s", err, m.Payload())
	}
	o := b.Oversize
	if len(m.Payload()) > 8<<10 || b.Job != "urn:a" || b.Meta.ID != "id-big" || o.Reason != "poison" || o.Size != 4_000_000 ||
		o.Refused < 5_300_000 || o.Topic != q || o.MessageID != bigID.String() || o.Partition != nil ||
		!strings.Contains(o.WriteError, "MaxMessageSize") {
		t.Errorf("bounded dead letter (%d bytes): %s", len(m.Payload()), m.Payload())
	}
	if b.DeadLetter.Reason != "oversize" || b.DeadLetter.Error == nil || !strings.Contains(*b.DeadLetter.Error, "poison") ||
		b.DeadLetter.OriginalQueue != q || b.DeadLetter.Attempts != 1 {
		t.Errorf("dead_letter %+v", b.DeadLetter)
	}
	if m.Key() != "k-big" || m.Properties()["bq-job"] != "urn:a" {
		t.Errorf("key %q properties %v", m.Key(), m.Properties())
	}
	deadline := time.Now().Add(30 * time.Second)
	for handled.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the message behind the oversize one was not handled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	var loud bool
	for _, e := range reported {
		loud = loud || errors.Is(e, babelqueue.ErrTooLarge)
	}
	mu.Unlock()
	if !loud {
		t.Error("the oversize message was not reported through OnError")
	}
	if extra := dlqReader.poll(t, 2*time.Second); extra != nil {
		t.Errorf("a second dead letter: %.200s", extra.Payload())
	}
	// Both were acknowledged: the subscription redelivers nothing.
	again, err := c.Subscribe(pulsar.ConsumerOptions{Topic: q, SubscriptionName: sub, Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer rcancel()
	if left, err := again.Receive(rctx); err == nil {
		t.Fatalf("subscription still holds a message of %d bytes (id %v): not acknowledged", len(left.Payload()), left.ID())
	}
	// The original stays in its topic.
	if orig := keeper.next(t, 20*time.Second); len(orig.Payload()) != 4_000_000 {
		t.Errorf("original of %d bytes", len(orig.Payload()))
	}
}
