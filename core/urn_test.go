package babelqueue

import (
	"context"
	"errors"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

func TestPublishRejectsInvalidURN(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	app, err := NewApp(tr, WithDefaultQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Publish(context.Background(), "urn:babel: bad", map[string]any{}); !errors.Is(err, ErrInvalidURN) {
		t.Fatalf("Publish with a blank in the URN = %v, want ErrInvalidURN", err)
	}
	if m, err := tr.Pop(context.Background(), "orders", 0); err != nil || m != nil {
		t.Fatalf("Pop after the refused publish = %v, %v; want nothing written", m, err)
	}
}
