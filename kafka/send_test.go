package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func asCore(hs []kafkago.Header) []wire.Header {
	out := make([]wire.Header, 0, len(hs))
	for _, x := range hs {
		out = append(out, wire.Header{Key: x.Key, Value: string(x.Value)})
	}
	return out
}

func withoutTierHeaders(hs []wire.Header) []wire.Header {
	var out []wire.Header
	for _, x := range hs {
		if !isTierHeader(x.Key) {
			out = append(out, x)
		}
	}
	return out
}

// TestSendHeadersMatchTheCoreReference checks that every intent writes the
// header list driver.OutgoingHeaders gives (the retry tier headers
// aside), the key of the reserved record unless Key is set, and the
// receipt of a tier.
func TestSendHeadersMatchTheCoreReference(t *testing.T) {
	key := []byte("k\x00")
	in := append(contractHeaders("1"), h("traceparent", "00-a-b-01"), h("x-tenant", "acme"))
	retryHeaders := map[string]string{
		"bq-job": "urn:delivered:route", "bq-attempts": "2", "bq-redrive-count": "1", "bq-replay-bypass": "1",
		"traceparent": "00-a-b-01", "x-tenant": "acme", "x-blank": " ", " ": "blank key",
	}
	cases := []struct {
		name  string
		tiers bool
		out   driver.Outgoing
		topic string
	}{
		{"publish", false, driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: envelope(t, 0),
			Headers: map[string]string{"bq-job": "urn:spoofed", "b": "2", "a": "1"}, Key: []byte{}}, "orders"},
		{"retry without tiers", false, driver.Outgoing{Intent: driver.IntentRetry, Queue: "orders", Body: envelope(t, 2),
			Headers: retryHeaders, Attempt: 1}, "orders"},
		{"retry with tiers", true, driver.Outgoing{Intent: driver.IntentRetry, Queue: "orders", Body: envelope(t, 2),
			Headers: retryHeaders, Attempt: 1}, "orders.retry.2"},
		{"release", false, driver.Outgoing{Intent: driver.IntentRelease, Queue: "orders", Body: envelope(t, 1),
			Headers: retryHeaders}, "orders"},
		{"dead letter", false, driver.Outgoing{Intent: driver.IntentDeadLetter, Queue: "orders.dlq", Body: envelope(t, 3),
			Headers: retryHeaders}, "orders.dlq"},
		{"redrive", false, driver.Outgoing{Intent: driver.IntentRedrive, Queue: "orders", Body: envelope(t, 0),
			Headers: retryHeaders, Key: []byte("new key")}, "orders"},
		{"forward", false, driver.Outgoing{Intent: driver.IntentForward, Queue: "orders.dlq", Body: "gated",
			Headers: map[string]string{"bq-schema-version": "2", "x": "1", " ": "skipped"}}, "orders.dlq"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if c.tiers {
				opts = append(opts, WithRetryTiers(5*time.Second, 30*time.Second))
			}
			rg := newRig(t, opts...)
			rg.log.append("orders", 0, kafkago.Message{Key: key, Value: []byte(envelope(t, 1)), Headers: in})
			out := c.out
			out.From = rg.pop("orders")
			r, err := rg.tr.Send(context.Background(), &out)
			if err != nil {
				t.Fatal(err)
			}
			got := rg.log.records(c.topic)
			wantN := 1
			if c.topic == "orders" {
				wantN = 2 // the delivered record and the write
			}
			if len(got) != wantN {
				t.Fatalf("%s holds %d records, want %d", c.topic, len(got), wantN)
			}
			got = got[len(got)-1:]
			if diff := cmp.Diff(driver.OutgoingHeaders(&out), withoutTierHeaders(asCore(got[0].Headers))); diff != "" {
				t.Fatalf("headers (-reference +written):\n%s", diff)
			}
			wantKey := key
			if out.Key != nil {
				wantKey = out.Key
			}
			if !cmp.Equal(got[0].Key, wantKey) || string(got[0].Value) != out.Body {
				t.Fatalf("key %q value %q", got[0].Key, got[0].Value)
			}
			want := driver.Receipt{Partition: -1}
			if c.tiers {
				want.Queue, want.Delay = "orders.retry.2", 30*time.Second
				tierHs := asCore(got[0].Headers)[6:8]
				if diff := cmp.Diff([]wire.Header{{Key: "bq-delay", Value: "30000"}, {Key: "bq-original-topic", Value: "orders"}}, tierHs); diff != "" {
					t.Fatalf("tier headers (-want +got):\n%s", diff)
				}
			}
			if r != want {
				t.Fatalf("receipt %+v, want %+v", r, want)
			}
		})
	}
}

// TestSendNeverTakesTierHeadersFromTheCaller checks the one Kafka rule
// beside the reference: bq-delay and bq-original-topic are the retry
// tiers' own.
func TestSendNeverTakesTierHeadersFromTheCaller(t *testing.T) {
	rg := newRig(t)
	out := &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: envelope(t, 0),
		Headers: map[string]string{"bq-delay": "1", "bq-original-topic": "elsewhere", "x": "1"}}
	if _, err := rg.tr.Send(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(contractHeaders("0"), h("x", "1")), rg.log.records("orders")[0].Headers); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
}

// TestSendRestoreWritesTheRecordBack checks IntentRestore: a null value
// stays null, the headers keep their order (duplicates too), the key is
// kept and the timestamp is the write time.
func TestSendRestoreWritesTheRecordBack(t *testing.T) {
	rg := newRig(t)
	orig := []kafkago.Header{h("bq-job", "urn:x"), h("x", "1"), h("bq-attempts", "3")}
	rg.log.append("orders.dlq", 0, kafkago.Message{Key: []byte("k"), Value: nil, Headers: orig, Time: t0.Add(-48 * time.Hour)})
	m := rg.pop("orders.dlq")
	out := &driver.Outgoing{Intent: driver.IntentRestore, Queue: "orders.dlq", Body: m.Body, From: m, Headers: m.Headers}
	if _, err := rg.tr.Send(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	got := rg.log.records("orders.dlq")
	if len(got) != 2 {
		t.Fatalf("dlq holds %d records", len(got))
	}
	back := got[1]
	if back.Value != nil || string(back.Key) != "k" || !back.Time.Equal(t0) {
		t.Fatalf("restored value %v key %q time %v", back.Value, back.Key, back.Time)
	}
	if diff := cmp.Diff(orig, back.Headers); diff != "" {
		t.Fatalf("restored headers (-want +got):\n%s", diff)
	}
}

func TestSendRefusesWhatItCannotWrite(t *testing.T) {
	rg := newRig(t)
	ctx := context.Background()
	if _, err := rg.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: "x", Delay: time.Second}); !errors.Is(err, babelqueue.ErrDelayUnsupported) {
		t.Fatalf("delay without tiers: %v", err)
	}
	if _, err := rg.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: " ", Body: "x"}); !errors.Is(err, ErrEmptyTopic) {
		t.Fatalf("blank queue: %v", err)
	}
	if _, err := rg.tr.Send(ctx, &driver.Outgoing{Intent: 99, Queue: "orders", Body: "x"}); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("unknown intent: %v", err)
	}
	if _, err := rg.tr.Send(ctx, nil); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("nil: %v", err)
	}
	if n := len(rg.log.records("orders")); n != 0 {
		t.Fatalf("%d records written", n)
	}
	want := driver.Features{Keys: true, Headers: true, HandBack: driver.HandBackRewind}
	if f := rg.tr.Features(); f != want {
		t.Fatalf("features %+v", f)
	}
	want.Delay = true
	if f := newRig(t, WithRetryTiers(time.Second)).tr.Features(); f != want {
		t.Fatalf("features with tiers %+v", f)
	}
}
