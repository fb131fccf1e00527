package otel

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"github.com/babelqueue/babelqueue-go/pulsar"
)

// implements lists, in the bit order of capabilityMask, whether v
// implements each optional capability.
func implements(v any) [10]bool {
	_, a := v.(babelqueue.HeaderPublisher)
	_, b := v.(babelqueue.KeyedRepublisher)
	_, c := v.(babelqueue.HeaderRepublisher)
	_, d := v.(babelqueue.Forwarder)
	_, e := v.(babelqueue.Rewinder)
	_, f := v.(babelqueue.NegativeAcknowledger)
	_, g := v.(babelqueue.DelayedPublisher)
	_, h := v.(babelqueue.TieredRetrier)
	_, i := v.(babelqueue.Retrier)
	_, j := v.(babelqueue.DelayedHeaderPublisher)
	return [10]bool{a, b, c, d, e, f, g, h, i, j}
}

func TestEveryCombinationHasExactlyItsCapabilities(t *testing.T) {
	tr := &transport{inner: minimal{}}
	for mask := range len(combinations) {
		got := implements(combinations[mask](tr))
		for bit, has := range got {
			if want := mask&(1<<bit) != 0; has != want {
				t.Errorf("mask %010b: capability %d present=%v, want %v", mask, bit, has, want)
			}
		}
	}
}

// minimal is a Transport with no optional capability.
type minimal struct{}

func (minimal) Publish(context.Context, string, string) error { return nil }
func (minimal) Pop(context.Context, string, time.Duration) (*babelqueue.ReceivedMessage, error) {
	return nil, nil
}
func (minimal) Ack(context.Context, *babelqueue.ReceivedMessage) error { return nil }

func TestDecoratorKeepsCapabilitiesOfRealTransports(t *testing.T) {
	h := newHarness(t)
	for name, tc := range map[string]struct {
		inner  babelqueue.Transport
		system string
	}{
		"memory":      {babelqueue.NewInMemoryTransport(), DefaultSystem},
		"minimal":     {minimal{}, DefaultSystem},
		"republisher": {republisher{babelqueue.NewInMemoryTransport()}, DefaultSystem},
		"kafka":       {&kafka.Transport{}, "kafka"},
		"pulsar":      {&pulsar.Transport{}, "pulsar"},
	} {
		t.Run(name, func(t *testing.T) {
			wrapped := h.tel.Transport(tc.inner)
			if got, want := implements(wrapped), implements(tc.inner); got != want {
				t.Errorf("capabilities %v, want those of the wrapped transport %v", got, want)
			}
			if Unwrap(wrapped) != tc.inner {
				t.Errorf("Unwrap does not return the wrapped transport")
			}
			if got := wrapped.(interface{ Unwrap() babelqueue.Transport }).Unwrap(); got != tc.inner {
				t.Errorf("Unwrap method does not return the wrapped transport")
			}
			if got := inferSystem(tc.inner); got != tc.system {
				t.Errorf("system %q, want %q", got, tc.system)
			}
		})
	}
	if h.tel.Transport(nil) != nil {
		t.Error("Transport(nil) must be nil")
	}
	if Unwrap(minimal{}) != (minimal{}) {
		t.Error("Unwrap of a plain transport must return it")
	}
}

func TestRepublisherKeepsAppOnItsPath(t *testing.T) {
	// Over a transport without Retrier or TieredRetrier, the App retries
	// by PublishFromWithHeaders; the decorator must not make it look like
	// a Retrier (which would change who settles the original).
	h := newHarness(t)
	wrapped := h.tel.Transport(republisher{babelqueue.NewInMemoryTransport()})
	if _, ok := wrapped.(babelqueue.Retrier); ok {
		t.Fatal("decorator gained Retrier")
	}
	if _, ok := wrapped.(babelqueue.NegativeAcknowledger); ok {
		t.Fatal("decorator gained NegativeAcknowledger")
	}
}
