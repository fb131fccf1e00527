package babelqueue

import (
	"context"
	"errors"
	"io"
	"maps"
	"sync"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// batchTransport is an outcomeTransport that also takes whole batches,
// answering each SendBatch with the error batchErr gives (nil: all written).
type batchTransport struct {
	outcomeTransport
	bmu      sync.Mutex
	batches  [][]driver.Outgoing
	batchErr func(n int) error
}

func (t *batchTransport) SendBatch(_ context.Context, outs []*driver.Outgoing) ([]driver.Receipt, error) {
	t.bmu.Lock()
	defer t.bmu.Unlock()
	b := make([]driver.Outgoing, len(outs))
	for i, o := range outs {
		b[i] = *o
		b[i].Headers = maps.Clone(o.Headers)
	}
	t.batches = append(t.batches, b)
	if t.batchErr != nil {
		if err := t.batchErr(len(outs)); err != nil {
			return nil, err
		}
	}
	rs := make([]driver.Receipt, len(outs))
	for i := range rs {
		rs[i] = driver.Receipt{Partition: int32(i)}
	}
	return rs, nil
}

// countingHook counts the publish hooks it sees and adds a header.
type countingHook struct {
	mu        sync.Mutex
	before    int
	published []error
}

func (h *countingHook) OnPublish(ctx context.Context, out *driver.Outgoing) context.Context {
	h.mu.Lock()
	h.before++
	h.mu.Unlock()
	out.Headers["traceparent"] = "00-hook"
	return ctx
}

func (h *countingHook) OnPublished(_ context.Context, _ *driver.Outgoing, _ driver.Receipt, err error) {
	h.mu.Lock()
	h.published = append(h.published, err)
	h.mu.Unlock()
}

func batchOf(n int) []BatchMessage {
	msgs := make([]BatchMessage, n)
	for i := range msgs {
		msgs[i] = BatchMessage{URN: "urn:t:o", Data: map[string]int{"n": i}, Options: []PublishOption{WithKey([]byte{byte('a' + i)})}}
	}
	return msgs
}

func TestPublishBatchHandsTheWholeBatchToABatchSender(t *testing.T) {
	tr := &batchTransport{}
	hook := &countingHook{}
	app := testApp(tr, WithDefaultQueue("orders"), WithHooks(hook))
	msgs := batchOf(3)
	msgs[2].Headers = map[string]string{"x-tenant": "t1"}
	msgs[2].Options = append(msgs[2].Options, ToQueue("audit"))
	ids, err := app.PublishBatch(context.Background(), msgs, WithKey([]byte("batch")))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.batches) != 1 || len(tr.batches[0]) != 3 || len(tr.sent) != 0 {
		t.Fatalf("batches %d (first %d), single sends %d; want one batch of 3", len(tr.batches), len(tr.batches[0]), len(tr.sent))
	}
	for i, out := range tr.batches[0] {
		env, err := wire.Decode([]byte(out.Body))
		if err != nil {
			t.Fatal(err)
		}
		if env.Meta.ID != ids[i] || out.Intent != driver.IntentPublish || string(out.Key) != string(rune('a'+i)) {
			t.Errorf("entry %d: id %q (want %q), intent %v, key %q", i, env.Meta.ID, ids[i], out.Intent, out.Key)
		}
		if out.Headers["traceparent"] != "00-hook" {
			t.Errorf("entry %d: hook header missing: %v", i, out.Headers)
		}
	}
	if q := tr.batches[0][2].Queue; q != "audit" || tr.batches[0][0].Queue != "orders" {
		t.Errorf("queues %q, %q; want the per-message ToQueue to win", tr.batches[0][0].Queue, q)
	}
	if tr.batches[0][2].Headers["x-tenant"] != "t1" || msgs[2].Headers["traceparent"] != "" {
		t.Errorf("headers %v; caller's map %v (must stay untouched)", tr.batches[0][2].Headers, msgs[2].Headers)
	}
	if hook.before != 3 || len(hook.published) != 3 {
		t.Errorf("hooks ran %d/%d times; want 3 each", hook.before, len(hook.published))
	}
}

func TestPublishBatchRefusesABadMessageBeforeWriting(t *testing.T) {
	tr := &batchTransport{}
	app := testApp(tr, WithDefaultQueue("orders"))
	msgs := batchOf(3)
	msgs[1].Data = func() {} // does not encode
	ids, err := app.PublishBatch(context.Background(), msgs)
	if err == nil || ids != nil || len(tr.batches) != 0 {
		t.Fatalf("publish = %v, %v after %d batches; want a refusal writing nothing", ids, err, len(tr.batches))
	}
	var be *BatchPublishError
	if errors.As(err, &be) {
		t.Fatalf("a refusal before writing is not a BatchPublishError: %v", err)
	}
}

// TestPublishBatchRefusesAnInvalidURN: a batch checks each URN as Publish
// does, before anything is written.
func TestPublishBatchRefusesAnInvalidURN(t *testing.T) {
	tr := &batchTransport{}
	app := testApp(tr, WithDefaultQueue("orders"))
	msgs := batchOf(3)
	msgs[2].URN = "not a urn"
	ids, err := app.PublishBatch(context.Background(), msgs)
	if !errors.Is(err, ErrInvalidURN) || errors.Is(err, ErrInvalidOption) || ids != nil || len(tr.batches) != 0 {
		t.Fatalf("publish = %v, %v after %d batches; want ErrInvalidURN (an argument, not an option), nothing written", ids, err, len(tr.batches))
	}
	const want = `babelqueue: publish batch message 2: invalid URN "not a urn": contains a space or control character (want urn:<namespace>:<name>)`
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestPublishBatchBodiesAreTheirEnvelopes: each body is its own envelope
// (the bodies share one buffer), projected as the binding would parse it.
func TestPublishBatchBodiesAreTheirEnvelopes(t *testing.T) {
	tr := &batchTransport{}
	app := testApp(tr, WithDefaultQueue("orders"))
	msgs := batchOf(40)
	ids, err := app.PublishBatch(context.Background(), msgs)
	if err != nil || len(tr.batches) != 1 {
		t.Fatalf("publish: %v, %d batches", err, len(tr.batches))
	}
	for i, out := range tr.batches[0] {
		env, err := wire.Decode([]byte(out.Body))
		if err != nil || env.Meta.ID != ids[i] {
			t.Fatalf("body %d: %v, id %v; want meta.id %s", i, err, env, ids[i])
		}
		if got, want := out.Projection(), wire.ProjectBody([]byte(out.Body)); got != want {
			t.Fatalf("body %d: projection %+v; parsing gives %+v", i, got, want)
		}
	}
}

func TestPublishBatchReportsEachOutcome(t *testing.T) {
	refused := errors.New("leader not available")
	tr := &batchTransport{batchErr: func(n int) error {
		return driver.SendErrors{nil, errors.Join(ErrPublishUnknown, io.ErrUnexpectedEOF), refused}
	}}
	app := testApp(tr, WithDefaultQueue("orders"))
	ids, err := app.PublishBatch(context.Background(), batchOf(3))
	var be *BatchPublishError
	if !errors.As(err, &be) || len(be.Errs) != 3 || len(ids) != 3 {
		t.Fatalf("publish = %v, %v; want a BatchPublishError of 3 with ids", ids, err)
	}
	if be.Errs[0] != nil || !errors.Is(be.Errs[2], refused) || errors.Is(be.Errs[2], ErrPublishUnknown) {
		t.Errorf("errs %v; want written, unknown, refused", be.Errs)
	}
	var u *UnknownPublishError
	if !errors.As(be.Errs[1], &u) || u.ID != ids[1] {
		t.Fatalf("entry 1: %v; want an UnknownPublishError of %s", be.Errs[1], ids[1])
	}
	if !errors.Is(err, ErrPublishUnknown) {
		t.Errorf("the batch error must match ErrPublishUnknown when an entry may be stored")
	}
	// The unknown one is republished byte for byte through Send.
	if _, err := app.Republish(context.Background(), be.Errs[1]); err != nil {
		t.Fatal(err)
	}
	if len(tr.sent) != 1 || tr.sent[0].Body != tr.batches[0][1].Body || string(tr.sent[0].Key) != "b" {
		t.Errorf("republished %+v; want entry 1 again", tr.sent)
	}
}

func TestPublishBatchWholeBatchError(t *testing.T) {
	tr := &batchTransport{batchErr: func(int) error { return errors.Join(ErrPublishUnknown, io.ErrUnexpectedEOF) }}
	hook := &countingHook{}
	app := testApp(tr, WithDefaultQueue("orders"), WithHooks(hook))
	_, err := app.PublishBatch(context.Background(), batchOf(2))
	var be *BatchPublishError
	if !errors.As(err, &be) || !errors.Is(be.Errs[0], ErrPublishUnknown) || !errors.Is(be.Errs[1], ErrPublishUnknown) {
		t.Fatalf("publish = %v; want every entry unknown", err)
	}
	if len(hook.published) != 2 || !errors.Is(hook.published[1], ErrPublishUnknown) {
		t.Errorf("published hooks saw %v", hook.published)
	}
}

func TestPublishBatchFallsBackToSendInOrder(t *testing.T) {
	refused := errors.New("refused")
	tr := &outcomeTransport{}
	app := testApp(tr, WithDefaultQueue("orders"))
	ids, err := app.PublishBatch(context.Background(), batchOf(3))
	if err != nil || len(ids) != 3 || len(tr.sent) != 3 {
		t.Fatalf("publish = %v, %v, %d sends", ids, err, len(tr.sent))
	}
	for i, out := range tr.sent {
		if string(out.Key) != string(rune('a'+i)) {
			t.Errorf("send %d has key %q; want the batch order", i, out.Key)
		}
	}
	tr = &outcomeTransport{fail: []error{nil, refused}} // the first send succeeds, the second is refused
	app = testApp(tr, WithDefaultQueue("orders"))
	_, err = app.PublishBatch(context.Background(), batchOf(3))
	var be *BatchPublishError
	if !errors.As(err, &be) || be.Errs[0] != nil || !errors.Is(be.Errs[1], refused) || !errors.Is(be.Errs[2], ErrBatchAborted) {
		t.Fatalf("publish = %v; want written, refused, aborted", err)
	}
	if len(tr.sent) != 2 {
		t.Errorf("%d sends; want the fallback to stop at the failure", len(tr.sent))
	}
}
