package pulsar

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// oversizeLetter is the part of a bounded dead letter these tests read.
type oversizeLetter struct {
	Job      string `json:"job"`
	Oversize struct {
		Reason    string `json:"reason"`
		Size      int    `json:"size"`
		Topic     string `json:"topic"`
		MessageID string `json:"message_id"`
	} `json:"oversize"`
	DeadLetter struct {
		Reason   string  `json:"reason"`
		Error    *string `json:"error"`
		Attempts int     `json:"attempts"`
	} `json:"dead_letter"`
}

func TestTooBigIsOnlyTheSizeRefusal(t *testing.T) {
	for err, want := range map[error]bool{
		pulsar.ErrMessageTooLarge:              true,
		pulsar.ErrSendTimeout:                  false,
		pulsar.ErrProducerClosed:               false,
		errors.New("connection reset"):         false,
		pulsar.ErrContextExpired:               false,
		pulsar.ErrFailAddToBatch:               false,
		pulsar.ErrProducerBlockedQuotaExceeded: false,
	} {
		if got := tooBig(err); got != want {
			t.Errorf("tooBig(%v) = %v, want %v", err, got, want)
		}
	}
}

// TestOversizePoisonDeadLetterIsBounded: a poison message whose dead letter
// the client refuses as above maxMessageSize is dead-lettered bounded, named
// by its message id, and acknowledged; the message behind it is handled.
func TestOversizePoisonDeadLetterIsBounded(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithMaxWaitTime(10*time.Millisecond))
	s.fc.maxPayload = 1000
	var handled atomic.Int32
	var reported atomic.Int32
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{
		"urn:babel:orders:created": func(context.Context, *babelqueue.Envelope) error { handled.Add(1); return nil },
	}, babelqueue.WithOnError(func(err error) {
		if errors.Is(err, babelqueue.ErrTooLarge) {
			reported.Add(1)
		}
	}))
	id := pulsar.NewMessageID(12, 34, -1, 0)
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(strings.Repeat("\xff", 900)), props: map[string]string{"bq-job": "urn:babel:orders:created"}, key: "k", id: id}
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(envelope), id: pulsar.NewMessageID(12, 35, -1, 0)}
	stop := runConsumer(t, c)
	bqtest.WaitUntil(t, 5*time.Second, "the bounded dead letter and the next message", func() bool { return sentCount(s.fc, "orders.dlq") == 1 && handled.Load() == 1 })
	stop()
	dl := s.fc.producer("orders.dlq").messages()[0]
	var b oversizeLetter
	if err := json.Unmarshal(dl.Payload, &b); err != nil {
		t.Fatalf("%v: %s", err, dl.Payload)
	}
	if b.Job != "urn:babel:orders:created" || b.Oversize.Reason != "poison" || b.Oversize.Size != 900 || b.Oversize.Topic != "orders" ||
		b.Oversize.MessageID != id.String() || b.DeadLetter.Reason != "oversize" || b.DeadLetter.Error == nil {
		t.Errorf("bounded dead letter %s", dl.Payload)
	}
	if dl.Key != "k" || dl.Properties["bq-job"] != "urn:babel:orders:created" {
		t.Errorf("key %q properties %v", dl.Key, dl.Properties)
	}
	if acked, nacked := s.fc.consumer("orders").counts(); acked != 2 || nacked != 0 {
		t.Errorf("acked %d nacked %d, want 2 and 0", acked, nacked)
	}
	if reported.Load() == 0 {
		t.Error("the oversize message was not reported through OnError")
	}
}

// TestOversizeRetryCopyIsBounded: a retry republish refused as too large
// leaves the original reserved for the App, which dead-letters it bounded
// and acknowledges it (no nack, no endless redelivery).
func TestOversizeRetryCopyIsBounded(t *testing.T) {
	s := newFake(t, WithRepublishRetries(), WithMaxWaitTime(10*time.Millisecond))
	s.fc.maxPayload = 1000
	var h seen
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{"urn:babel:orders:created": h.failing})
	big := strings.Replace(envelope, `"order_id":1042`, `"order_id":1042,"pad":"`+strings.Repeat("p", 1200)+`"`, 1)
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(big), id: pulsar.NewMessageID(1, 2, -1, 0)}
	stop := runConsumer(t, c)
	bqtest.WaitUntil(t, 5*time.Second, "the bounded dead letter", func() bool { return sentCount(s.fc, "orders.dlq") == 1 })
	stop()
	var b oversizeLetter
	if err := json.Unmarshal(s.fc.producer("orders.dlq").messages()[0].Payload, &b); err != nil {
		t.Fatal(err)
	}
	if b.Oversize.Reason != "failed" || b.DeadLetter.Reason != "oversize" || b.DeadLetter.Attempts != 1 || *b.DeadLetter.Error != "boom" {
		t.Errorf("bounded dead letter %+v", b)
	}
	if acked, nacked := s.fc.consumer("orders").counts(); acked != 1 || nacked != 0 {
		t.Errorf("acked %d nacked %d, want 1 and 0", acked, nacked)
	}
	if len(h.get()) != 1 {
		t.Errorf("handler ran %d times, want 1", len(h.get()))
	}
}

// TestRetryOfTooLargeCopyNacks: Transport.Retry, with no App behind it,
// negatively acknowledges a message whose copy is refused as too large.
func TestRetryOfTooLargeCopyNacks(t *testing.T) {
	s := newFake(t, WithRepublishRetries(), WithMaxWaitTime(10*time.Millisecond))
	s.fc.maxPayload = 10
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(envelope)}
	msg, err := s.tr.Pop(context.Background(), "orders", time.Second)
	if err != nil || msg == nil {
		t.Fatalf("Pop = %v, %v", msg, err)
	}
	err = s.tr.Retry(context.Background(), msg, 1)
	if !errors.Is(err, driver.ErrTooLarge) || !errors.Is(err, babelqueue.ErrSettle) {
		t.Fatalf("Retry = %v", err)
	}
	if _, nacked := s.fc.consumer("orders").counts(); nacked != 1 {
		t.Errorf("nacked %d, want 1", nacked)
	}
}
