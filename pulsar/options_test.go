package pulsar

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

func TestNewRejectsUnboundedRetries(t *testing.T) {
	url := WithServiceURL("pulsar://127.0.0.1:6650")
	producer := WithRetryProducer("orders", &fakeProducer{topic: "orders"})
	tests := []struct {
		name    string
		opts    []Option
		wantErr string // "" means New succeeds
	}{
		{"undeclared type, default max attempts", []Option{url}, "undeclared (Exclusive)"},
		{"exclusive", []Option{url, WithSubscriptionType(pulsar.Exclusive)}, "Exclusive"},
		{"failover", []Option{url, WithSubscriptionType(pulsar.Failover)}, "Failover"},
		{"shared", []Option{url, WithSubscriptionType(pulsar.Shared)}, ""},
		{"key shared", []Option{url, WithSubscriptionType(pulsar.KeyShared)}, ""},
		{"exclusive with max attempts 1", []Option{url, WithSubscriptionType(pulsar.Exclusive), WithMaxAttempts(1)}, ""},
		{"undeclared with max attempts 1", []Option{url, WithMaxAttempts(1)}, ""},
		{"exclusive with retry producer", []Option{url, WithSubscriptionType(pulsar.Exclusive), producer}, ""},
		{"failover with retry client", []Option{url, WithSubscriptionType(pulsar.Failover), WithRetryClient(stubClient{})}, ""},
		{"undeclared with republish retries", []Option{url, WithRepublishRetries()}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := New(tt.opts...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New = %v", err)
				}
				_ = tr.Close()
				return
			}
			if !errors.Is(err, babelqueue.ErrInvalidOption) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New = %v, want ErrInvalidOption naming %q", err, tt.wantErr)
			}
			if tr != nil {
				t.Error("New returned a Transport with an error")
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	url := WithServiceURL("pulsar://127.0.0.1:6650")
	shared := WithSubscriptionType(pulsar.Shared)
	tests := map[string][]Option{
		"no url or client":      {shared},
		"url and client":        {url, WithClient(stubClient{}), shared},
		"blank url":             {WithServiceURL(" "), shared},
		"nil client":            {WithClient(nil), shared},
		"max attempts 0":        {url, shared, WithMaxAttempts(0)},
		"blank subscription":    {url, shared, WithSubscription("\t")},
		"bad subscription type": {url, WithSubscriptionType(pulsar.SubscriptionType(9))},
		"blank tenant":          {url, shared, WithTopicPrefix("", "ns")},
		"zero max wait":         {url, shared, WithMaxWaitTime(0)},
		"zero nack delay":       {url, shared, WithNackRedeliveryDelay(0)},
		"token with client":     {WithClient(stubClient{}), shared, WithToken("jwt")},
		"blank token":           {url, shared, WithToken("")},
		"tls auth without key":  {url, shared, WithTLSAuth("cert.pem", "")},
		"nil logger":            {url, shared, WithLogger(nil)},
		"nil clock":             {url, shared, WithClock(nil)},
		"retry producer no q":   {url, WithRetryProducer("", &fakeProducer{})},
		"blank dedup name":      {url, shared, WithDeduplication(" ")},
	}
	for name, opts := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := New(opts...); !errors.Is(err, babelqueue.ErrInvalidOption) {
				t.Fatalf("New = %v, want ErrInvalidOption", err)
			}
		})
	}
}

func TestNewWithAuthOptions(t *testing.T) {
	tr, err := New(WithServiceURL("pulsar://127.0.0.1:6650"), WithSubscriptionType(pulsar.Shared),
		WithToken("eyJhbGciOiJIUzI1NiJ9.e30.x"), WithTimeouts(time.Second, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPerQueueRetryCheck(t *testing.T) {
	// A retry producer for one queue does not make another queue of an
	// Exclusive subscription safe.
	s := newFake(t, WithRetryProducer("orders", &fakeProducer{topic: "orders"}))
	if _, err := s.tr.Pop(context.Background(), "orders", time.Millisecond); err != nil {
		t.Fatalf("Pop orders = %v", err)
	}
	if _, err := s.tr.Pop(context.Background(), "payments", time.Millisecond); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("Pop payments = %v, want ErrInvalidOption", err)
	}
}

func TestCloseReleasesAndRejects(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	if err := s.tr.Publish(ctx, "orders", envelope); err != nil {
		t.Fatal(err)
	}
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(envelope)}
	msg, err := s.tr.Pop(ctx, "orders", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.tr.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if !s.fc.producer("orders").isClosed() || !s.fc.consumer("orders").closed || !s.fc.closed {
		t.Error("Close left a producer, consumer or the owned client open")
	}
	checks := map[string]error{
		"Publish":        s.tr.Publish(ctx, "orders", envelope),
		"PublishDelayed": s.tr.PublishDelayed(ctx, "orders", envelope, time.Second),
		"Send":           sendErr(s.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders.dlq", Body: envelope, From: msg})),
		"HandBack":       s.tr.HandBack(ctx, msg),
		"Ack":            s.tr.Ack(ctx, msg),
		"Nack":           s.tr.Nack(ctx, msg),
		"Retry":          s.tr.Retry(ctx, msg, 1),
	}
	_, checks["Pop"] = s.tr.Pop(ctx, "orders", time.Millisecond)
	_, checks["Receive"] = s.tr.Receive(ctx, "orders", time.Millisecond)
	_, checks["Send retry"] = s.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentRetry, Queue: "orders", Body: envelope, From: msg})
	for op, err := range checks {
		if !errors.Is(err, babelqueue.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", op, err)
		}
	}
}

func TestCloseDuringPopReturnsErrClosed(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	if _, err := s.tr.Pop(context.Background(), "q", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.tr.Pop(context.Background(), "q", 10*time.Second)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	_ = s.tr.Close()
	select {
	case err := <-done:
		if !errors.Is(err, babelqueue.ErrClosed) {
			t.Fatalf("Pop interrupted by Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pop did not return after Close")
	}
}

func TestGivenClientIsNotClosed(t *testing.T) {
	c := &closeCountingClient{}
	tr, err := New(WithClient(c), WithSubscriptionType(pulsar.Shared))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if c.closed != 0 {
		t.Error("Close closed the caller's client")
	}
}

type closeCountingClient struct {
	pulsar.Client
	closed int
}

func (c *closeCountingClient) Close() { c.closed++ }

func TestClientOptionsCarryAuthAndTLS(t *testing.T) {
	cfg := defaultConfig()
	for _, o := range []Option{
		WithServiceURL("pulsar+ssl://127.0.0.1:6651"),
		WithToken("jwt-token"),
		WithTLSTrustCerts("/etc/ca.pem", true),
		WithTimeouts(2*time.Second, 3*time.Second),
	} {
		if o(&cfg); len(cfg.errs) > 0 {
			t.Fatal(cfg.errs)
		}
	}
	co := cfg.clientOptions()
	if co.URL != "pulsar+ssl://127.0.0.1:6651" || co.TLSTrustCertsFilePath != "/etc/ca.pem" || !co.TLSValidateHostname ||
		co.TLSAllowInsecureConnection || co.ConnectionTimeout != 2*time.Second || co.OperationTimeout != 3*time.Second {
		t.Errorf("client options = %+v", co)
	}
	p, ok := co.Authentication.(authProvider)
	if !ok {
		t.Fatalf("token authentication not set: %T", co.Authentication)
	}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	data, err := p.GetData()
	if p.Name() != "token" || err != nil || string(data) != "jwt-token" {
		t.Errorf("auth %s data = %q, %v", p.Name(), data, err)
	}

	cfg = defaultConfig()
	if WithTLSAuth("client.pem", "client.key")(&cfg); len(cfg.errs) > 0 {
		t.Fatal(cfg.errs)
	}
	if WithTLSAllowInsecure()(&cfg); len(cfg.errs) > 0 {
		t.Fatal(cfg.errs)
	}
	co = cfg.clientOptions()
	if p, ok := co.Authentication.(authProvider); !ok || p.Name() != "tls" || !co.TLSAllowInsecureConnection {
		t.Errorf("TLS auth not set: %+v", co)
	}
}

// authProvider is the part of pulsar-client-go's auth.Provider the test
// reads (pulsar.Authentication is an empty interface).
type authProvider interface {
	Init() error
	Name() string
	GetData() ([]byte, error)
}

func sendErr(_ driver.Receipt, err error) error { return err }
