package babelqueue

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func testProtector(t *testing.T, key byte) *gdpr.Protector {
	t.Helper()
	c, err := gdpr.NewAESGCM(bytes.Repeat([]byte{key}, 32))
	if err != nil {
		t.Fatal(err)
	}
	p, err := gdpr.NewProtector(gdpr.PathsByURN{"urn:test:order": gdpr.NewPaths("email", "profile.name", "cards[].pan")}, c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cleartextValidator accepts only a readable e-mail: it fails on
// ciphertext, so it proves the order validate-then-protect and
// unprotect-then-validate.
type cleartextValidator struct{ calls *int }

func (v cleartextValidator) ValidatePayload(_ string, data []byte) error {
	*v.calls++
	if !bytes.Contains(data, []byte(`"email":"alice@example.com"`)) {
		return errors.New("email is not an address")
	}
	return nil
}

func TestFieldProtectorRoundTrip(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	var validated int
	app := testApp(tr, WithDefaultQueue("orders"), WithFieldProtector(testProtector(t, 1)), WithPayloadValidator(cleartextValidator{&validated}))
	data := []byte(`{"order_id":12345678901234567890,"email":"alice@example.com","profile":{"name":"Alice","tier":"gold"},"cards":[{"pan":"4242"}],"x-unknown":[1]}`)
	if _, err := app.Publish(ctx, "urn:test:order", data); err != nil {
		t.Fatal(err)
	}
	if _, err := app.PublishBatch(ctx, []BatchMessage{{URN: "urn:test:order", Data: data}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range tr.Messages("orders") {
		// Quoted values: a random meta.id or a base64 ciphertext may hold
		// "4242" or "Alice" by chance, never a whole JSON string equal to them.
		for _, pii := range []string{`"alice@example.com"`, `"Alice"`, `"4242"`} {
			if strings.Contains(m.Body, pii) {
				t.Fatalf("%q written in clear: %s", pii, m.Body)
			}
		}
		env, err := wire.Decode([]byte(m.Body))
		if err != nil || !strings.Contains(string(env.Data()), `"order_id":12345678901234567890,"email":"`) || !strings.HasSuffix(string(env.Data()), `"}],"x-unknown":[1]}`) {
			t.Fatalf("the other bytes of data changed: %s (%v)", env.Data(), err)
		}
	}
	var got [][]byte
	app.Handle("urn:test:order", func(_ context.Context, env *Envelope) error {
		got = append(got, env.Data())
		return nil
	})
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0], data) || !bytes.Equal(got[1], data) {
		t.Fatalf("handler got %s, want the cleartext %s", got, data)
	}
	if validated != 4 {
		t.Fatalf("validator ran %d times, want 4 (cleartext, both sides)", validated)
	}
}

func TestFieldProtectorWrongKeyRetriesThenDeadLetters(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	if _, err := testApp(tr, WithDefaultQueue("orders"), WithFieldProtector(testProtector(t, 1))).
		Publish(ctx, "urn:test:order", map[string]any{"email": "alice@example.com"}); err != nil {
		t.Fatal(err)
	}
	protected := tr.Messages("orders")[0].Body
	var reasons []string
	app := testApp(tr, WithDefaultQueue("orders"), WithMaxAttempts(2), WithFieldProtector(testProtector(t, 2)),
		WithHooks(settleFunc(func(_ context.Context, _ *Delivery, s *Settlement) {
			reasons = append(reasons, s.Outcome.String()+"/"+s.Reason)
			if !errors.Is(s.Err, ErrDecryptFailed) || !errors.Is(s.Err, gdpr.ErrDecrypt) {
				t.Errorf("settlement error %v, want ErrDecryptFailed and gdpr.ErrDecrypt", s.Err)
			}
		})))
	app.Handle("urn:test:order", func(context.Context, *Envelope) error { t.Error("handler ran on unreadable data"); return nil })
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(reasons, ",") != "retried/decrypt_failed,dead_lettered/decrypt_failed" {
		t.Fatalf("settlements %v", reasons)
	}
	dead := tr.Messages("orders.dlq")
	if len(dead) != 1 {
		t.Fatalf("%d dead letters", len(dead))
	}
	dl := dlqEntry(t, dead[0].Body)
	if dl.Reason != wire.ReasonDecryptFailed || dl.Attempts != 2 {
		t.Fatalf("dead_letter %+v", dl)
	}
	env, _ := wire.Decode([]byte(dead[0].Body))
	orig, _ := wire.Decode([]byte(protected))
	if !bytes.Equal(env.Data(), orig.Data()) {
		t.Fatalf("the dead letter must keep the ciphertext: %s vs %s", env.Data(), orig.Data())
	}
}

func TestWithFieldProtectorNilIsRejected(t *testing.T) {
	if _, err := NewApp(bqtest.NewInMemoryTransport(), WithFieldProtector(nil)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("NewApp(WithFieldProtector(nil)) = %v", err)
	}
}

type settleFunc func(context.Context, *Delivery, *Settlement)

func (f settleFunc) OnSettle(ctx context.Context, d *Delivery, s *Settlement) { f(ctx, d, s) }

// plainProtector hides the envelope methods of a gdpr.Protector, so the
// App takes the FieldProtector path any other implementation takes.
type plainProtector struct{ p *gdpr.Protector }

func (p plainProtector) ProtectFields(urn string, data []byte) ([]byte, error) {
	return p.p.ProtectFields(urn, data)
}

func (p plainProtector) UnprotectFields(urn string, data []byte) ([]byte, error) {
	return p.p.UnprotectFields(urn, data)
}

func TestFieldProtectorInterfacePath(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	app := testApp(tr, WithDefaultQueue("orders"), WithMaxAttempts(1), WithFieldProtector(plainProtector{testProtector(t, 1)}))
	data := []byte(`{"email":"alice@example.com","profile":{"name":"Alice"},"n":12345678901234567890}`)
	if _, err := app.Publish(ctx, "urn:test:order", data); err != nil {
		t.Fatal(err)
	}
	if body := tr.Messages("orders")[0].Body; strings.Contains(body, "alice@") {
		t.Fatalf("written in clear: %s", body)
	}
	var got []byte
	app.Handle("urn:test:order", func(_ context.Context, env *Envelope) error { got = env.Data(); return nil })
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("handler got %s, want %s", got, data)
	}
	if _, err := testApp(tr, WithDefaultQueue("orders")).Publish(ctx, "urn:test:order", data); err != nil {
		t.Fatal(err)
	}
	wrong := testApp(tr, WithDefaultQueue("orders"), WithMaxAttempts(1), WithFieldProtector(plainProtector{testProtector(t, 1)}))
	wrong.Handle("urn:test:order", func(context.Context, *Envelope) error {
		t.Error("handler ran on a cleartext string it cannot open")
		return nil
	})
	if _, err := wrong.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if dead := tr.Messages("orders.dlq"); len(dead) != 1 || dlqEntry(t, dead[0].Body).Reason != wire.ReasonDecryptFailed {
		t.Fatalf("dead letters %v", dead)
	}
}
