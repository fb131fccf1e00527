package babelqueue

import (
	"context"
	"errors"
	"io"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// outcomeTransport records every Send and fails the first ones with the
// errors of fail, in order.
type outcomeTransport struct {
	mu   sync.Mutex
	sent []driver.Outgoing
	fail []error
}

func (t *outcomeTransport) Features() driver.Features {
	return driver.Features{Keys: true, Headers: true, Delay: true}
}

func (t *outcomeTransport) Send(_ context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := *out
	o.Headers = maps.Clone(out.Headers)
	t.sent = append(t.sent, o)
	if len(t.fail) > 0 {
		err := t.fail[0]
		t.fail = t.fail[1:]
		return driver.Receipt{}, err
	}
	return driver.Receipt{}, nil
}

func (t *outcomeTransport) Receive(context.Context, string, time.Duration) (*ReceivedMessage, error) {
	return nil, nil
}
func (t *outcomeTransport) Ack(context.Context, *ReceivedMessage) error      { return nil }
func (t *outcomeTransport) HandBack(context.Context, *ReceivedMessage) error { return nil }

func TestPublishUnknownOutcomeIsRepublishedByteForByte(t *testing.T) {
	cut := errors.New("connection reset after the request went out")
	tr := &outcomeTransport{fail: []error{
		errors.Join(ErrPublishUnknown, cut),
		errors.Join(ErrPublishUnknown, io.ErrUnexpectedEOF),
	}}
	app := testApp(tr, WithDefaultQueue("orders"))
	headers := map[string]string{"traceparent": "00-abc"}
	id, err := app.PublishWithHeaders(context.Background(), "urn:t:o", map[string]int{"n": 1}, headers, WithKey([]byte("k1")), WithDelay(time.Second))
	if id != "" || !errors.Is(err, ErrPublishUnknown) || !errors.Is(err, cut) {
		t.Fatalf("publish = %q, %v; want an unknown outcome wrapping the cause", id, err)
	}
	var u *UnknownPublishError
	if !errors.As(err, &u) || u.Queue != "orders" || u.ID == "" {
		t.Fatalf("error %v: want an *UnknownPublishError naming queue and id, got %+v", err, u)
	}
	headers["traceparent"] = "changed by the caller"

	// The second attempt is unknown again: the error chains.
	_, err2 := app.Republish(context.Background(), err)
	var u2 *UnknownPublishError
	if !errors.As(err2, &u2) || u2.ID != u.ID || !errors.Is(err2, io.ErrUnexpectedEOF) {
		t.Fatalf("republish = %v; want an unknown outcome of id %s", err2, u.ID)
	}
	got, err := app.Republish(context.Background(), err2)
	if err != nil || got != u.ID {
		t.Fatalf("republish = %q, %v; want %q, nil", got, err, u.ID)
	}
	if len(tr.sent) != 3 {
		t.Fatalf("sends = %d, want 3", len(tr.sent))
	}
	for i, s := range tr.sent {
		first := tr.sent[0]
		if s.Body != first.Body || s.Queue != "orders" || string(s.Key) != "k1" || s.Delay != time.Second ||
			s.Headers["traceparent"] != "00-abc" || s.Intent != driver.IntentPublish {
			t.Fatalf("send %d = %+v; want the first write again: %+v", i, s, first)
		}
	}
	if u.Body() != tr.sent[0].Body {
		t.Fatalf("Body() = %q, want the written envelope", u.Body())
	}
}

func TestPublishErrorWithoutUnknownMeansNothingWritten(t *testing.T) {
	refused := errors.New("connection refused")
	tr := &outcomeTransport{fail: []error{refused}}
	app := testApp(tr, WithDefaultQueue("orders"))
	_, err := app.Publish(context.Background(), "urn:t:o", map[string]int{"n": 1})
	if !errors.Is(err, refused) || errors.Is(err, ErrPublishUnknown) {
		t.Fatalf("publish = %v; want the refusal, not an unknown outcome", err)
	}
	if _, err := app.Republish(context.Background(), err); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("republish of a refusal = %v; want ErrInvalidOption", err)
	}
	if len(tr.sent) != 1 {
		t.Fatalf("sends = %d, want 1 (republish of a refusal sends nothing)", len(tr.sent))
	}
}

func TestRepublishKeepsAnEmptyKeyApartFromNone(t *testing.T) {
	for name, key := range map[string][]byte{"empty": {}, "none": nil} {
		t.Run(name, func(t *testing.T) {
			tr := &outcomeTransport{fail: []error{ErrPublishUnknown}}
			app := testApp(tr, WithDefaultQueue("orders"))
			_, err := app.Publish(context.Background(), "urn:t:o", map[string]int{"n": 1}, WithKey(key))
			if !errors.Is(err, ErrPublishUnknown) {
				t.Fatalf("publish = %v, want an unknown outcome", err)
			}
			if _, err := app.Republish(context.Background(), err); err != nil {
				t.Fatal(err)
			}
			for i, s := range tr.sent {
				if (s.Key == nil) != (key == nil) || len(s.Key) != 0 {
					t.Fatalf("send %d key = %#v, want %#v", i, s.Key, key)
				}
			}
		})
	}
}
