package babelqueue

import (
	"context"
	"errors"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

func TestValidURN(t *testing.T) {
	for _, ok := range []string{"urn:babel:orders:created", "urn:bq:x", "URN:Babel:Orders", "urn:x", "urn:a:b:c:d-e_f.g"} {
		if err := ValidURN(ok); err != nil {
			t.Errorf("ValidURN(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "not-a-urn", "urn:babel: bad", "urn:", "urn::x", "urn:a::b", "urn:babel:", "urnx:a:b", " urn:a:b", "urn:a:b\n", "urn:a:b\u00a0c"} {
		err := ValidURN(bad)
		if !errors.Is(err, ErrInvalidURN) || !errors.Is(err, ErrInvalidOption) {
			t.Errorf("ValidURN(%q) = %v, want ErrInvalidURN", bad, err)
		}
	}
}

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
