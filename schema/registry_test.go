package schema_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/babelqueue/babelqueue-go/schema"
)

const orderSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["order_id"],
"properties":{"order_id":{"type":"integer","minimum":1},"currency":{"enum":["USD","EUR"]}},"additionalProperties":false}`

func TestValidatePayload(t *testing.T) {
	r := schema.NewRegistry()
	if err := r.Register("urn:t:o", []byte(orderSchema)); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{`{"order_id":1}`, `{"order_id":12345678901234567890123}`, `{"order_id":2.0,"currency":"EUR"}`} {
		if err := r.ValidatePayload("urn:t:o", []byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{`{}`, `{"order_id":0}`, `{"order_id":"1"}`, `{"order_id":1,"x":1}`, `{"order_id":1,"currency":"GBP"}`, `{"order_id":1.5}`, `not json`} {
		err := r.ValidatePayload("urn:t:o", []byte(bad))
		var ve *schema.ValidationError
		if !errors.Is(err, babelqueue.ErrInvalidPayload) || !errors.As(err, &ve) || len(ve.Problems) == 0 {
			t.Errorf("%s: %v, want a ValidationError matching ErrInvalidPayload", bad, err)
		}
	}
	if err := r.ValidatePayload("urn:t:none", []byte(`"anything"`)); err != nil {
		t.Errorf("URN without schema: %v", err)
	}
	if err := r.Register("urn:t:o", []byte(orderSchema)); !errors.Is(err, schema.ErrSchema) {
		t.Errorf("second registration: %v, want ErrSchema", err)
	}
	if err := r.Register("urn:t:bad", []byte(`{"type":12}`)); !errors.Is(err, schema.ErrSchema) {
		t.Errorf("bad schema: %v, want ErrSchema", err)
	}
}

func TestRegisterFS(t *testing.T) {
	fsys := fstest.MapFS{
		"schemas/urn:babel:orders:created.json": {Data: []byte(orderSchema)},
		"schemas/nested/paid.json":              {Data: []byte(`{"x-babelqueue-urn":"urn:babel:orders:paid","type":"object","required":["paid_at"]}`)},
		"schemas/README.md":                     {Data: []byte("not a schema")},
	}
	r := schema.NewRegistry()
	if err := r.RegisterFS(fsys, "schemas"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.URNs(), ","); got != "urn:babel:orders:created,urn:babel:orders:paid" {
		t.Fatalf("URNs = %s", got)
	}
	if err := r.ValidatePayload("urn:babel:orders:paid", []byte(`{}`)); !errors.Is(err, babelqueue.ErrInvalidPayload) {
		t.Fatalf("paid without paid_at: %v", err)
	}
}

func TestAppIntegration(t *testing.T) {
	r := schema.NewRegistry()
	if err := r.Register("urn:t:o", []byte(orderSchema)); err != nil {
		t.Fatal(err)
	}
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("q"), babelqueue.WithPayloadValidator(r))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Publish(ctx, "urn:t:o", map[string]any{"order_id": 0}); !errors.Is(err, babelqueue.ErrInvalidPayload) {
		t.Fatalf("publish invalid: %v", err)
	}
	if tr.Len("q") != 0 {
		t.Fatal("an invalid payload was written")
	}
	// A producer without the registry writes one; the consumer dead-letters it.
	producer, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("q"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := producer.Publish(ctx, "urn:t:o", map[string]any{"order_id": "x"}); err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:t:o", func(context.Context, *babelqueue.Envelope) error { t.Error("handler ran"); return nil })
	if _, err := app.Drain(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	dead := tr.Messages("q.dlq")
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	env, err := babelqueue.Decode([]byte(dead[0].Body))
	if err != nil {
		t.Fatal(err)
	}
	if env.DeadLetter.Reason != wire.ReasonInvalidPayload || !strings.Contains(*env.DeadLetter.Error, "/order_id") {
		t.Fatalf("dead_letter %+v (error %q)", env.DeadLetter, *env.DeadLetter.Error)
	}
}
