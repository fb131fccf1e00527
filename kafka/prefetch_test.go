package kafka

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// prefetchRig is a rig whose readers are prefetchReaders in front of the
// fake group readers, as the transport builds them in front of kafka-go's.
func prefetchRig(t *testing.T) *rig {
	t.Helper()
	rg := newRig(t)
	tr, err := New(WithWriter(rg.writer), WithClock(rg.clock), WithReaderFactory(func(q string) Reader {
		r := newFakeReader(rg.log, rg.offsets, q)
		rg.readers = append(rg.readers, r)
		return newPrefetchReader(rg.tr, q, r)
	}))
	if err != nil {
		t.Fatal(err)
	}
	_ = rg.tr.Close()
	rg.tr = tr
	t.Cleanup(func() { _ = tr.Close() })
	return rg
}

func TestPrefetchDeliversInOrderAndCommitsWhatWasAcked(t *testing.T) {
	rg := prefetchRig(t)
	ctx := context.Background()
	body := envelope(t, 0)
	const n = 600 // more than the buffer holds
	for i := 0; i < n; i++ {
		rg.log.append("orders", 0, kafkago.Message{Value: []byte(body)})
	}
	for i := 0; i < n; i++ {
		m, err := rg.tr.Pop(ctx, "orders", time.Second)
		if err != nil || m == nil {
			t.Fatalf("Pop %d = %v, %v", i, m, err)
		}
		d, _ := recordOf(m)
		if d.msg.Offset != int64(i) {
			t.Fatalf("Pop %d returned offset %d", i, d.msg.Offset)
		}
		if i < n/2 {
			if err := rg.tr.Ack(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Nothing more: an empty poll.
	if m, err := rg.tr.Pop(ctx, "orders", 20*time.Millisecond); m != nil || err != nil {
		t.Fatalf("Pop of an empty topic = %v, %v", m, err)
	}
	// Close hands over the commits still gathered.
	if err := rg.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rg.offsets.get("orders", 0); got != n/2 {
		t.Fatalf("committed next offset %d, want %d (only what was acknowledged)", got, n/2)
	}
}

// countingReader counts the records fetched through it.
type countingReader struct {
	*fakeReader
	fetched atomic.Int64
}

func (r *countingReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	m, err := r.fakeReader.FetchMessage(ctx)
	if err == nil {
		r.fetched.Add(1)
	}
	return m, err
}

func TestPrefetchBufferIsBoundedAndDroppedOnClose(t *testing.T) {
	log, offsets := newFakeLog(), newFakeOffsets()
	body := envelope(t, 0)
	for i := 0; i < 3*prefetchBuffer; i++ {
		log.append("orders", 0, kafkago.Message{Value: []byte(body)})
	}
	tr, err := New(WithWriter(&fakeWriter{log: log}), WithReaderFactory(func(string) Reader { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	inner := &countingReader{fakeReader: newFakeReader(log, offsets, "orders")}
	p := newPrefetchReader(tr, "orders", inner)
	// It reads nothing ahead before the first pop.
	time.Sleep(50 * time.Millisecond)
	if got := inner.fetched.Load(); got != 0 {
		t.Fatalf("fetched %d records before the first pop", got)
	}
	p.begin(false)
	// Nobody takes: the goroutine stops once the buffer is full (plus the
	// one record it holds while it waits for room).
	deadline := time.Now().Add(5 * time.Second)
	for inner.fetched.Load() < prefetchBuffer && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if got := inner.fetched.Load(); got < prefetchBuffer || got > prefetchBuffer+1 {
		t.Fatalf("fetched %d records ahead, want the buffer's %d (+1)", got, prefetchBuffer)
	}
	// Taking makes room for more.
	for i := 0; i < prefetchBuffer; i++ {
		if _, err := p.fetch(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	deadline = time.Now().Add(5 * time.Second)
	for inner.fetched.Load() <= prefetchBuffer+1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := inner.fetched.Load(); got <= prefetchBuffer+1 {
		t.Fatalf("fetched %d after the buffer was taken; the goroutine did not resume", got)
	}
	// Close stops the goroutine, closes the group reader, commits nothing
	// that was only buffered, and the reader then reports io.EOF.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	default:
		t.Fatal("Close returned before the goroutine ended")
	}
	if !inner.closed {
		t.Fatal("the group reader was not closed")
	}
	if got := offsets.get("orders", 0); got != 0 {
		t.Fatalf("committed %d, want nothing", got)
	}
	if _, err := p.FetchMessage(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("FetchMessage after Close = %v, want io.EOF", err)
	}
}

func TestPrefetchRewindRereadsFromTheCommittedOffset(t *testing.T) {
	rg := prefetchRig(t)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		rg.log.append("orders", 0, kafkago.Message{Value: []byte(envelope(t, 0))})
	}
	first, err := rg.tr.Pop(ctx, "orders", time.Second)
	if err != nil || first == nil {
		t.Fatal(first, err)
	}
	if err := rg.tr.Ack(ctx, first); err != nil {
		t.Fatal(err)
	}
	second, err := rg.tr.Pop(ctx, "orders", time.Second)
	if err != nil || second == nil {
		t.Fatal(second, err)
	}
	if err := rg.tr.Rewind(ctx, second); err != nil {
		t.Fatal(err)
	}
	// The records prefetched behind the rewound one are dropped; the new
	// reader starts again at the rewound record.
	again, err := rg.tr.Pop(ctx, "orders", time.Second)
	if err != nil || again == nil {
		t.Fatal(again, err)
	}
	if d, _ := recordOf(again); d.msg.Offset != 1 {
		t.Fatalf("after Rewind Pop returned offset %d, want 1", d.msg.Offset)
	}
	// An Ack of a record of the dropped reader is refused.
	if err := rg.tr.Ack(ctx, second); err == nil {
		t.Fatal("Ack through a rewound reader succeeded")
	}
}

// flakyReader fails its first fetches with err, then reads the fake log.
type flakyReader struct {
	*fakeReader
	fails atomic.Int64
	err   error
}

func (r *flakyReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	if r.fails.Add(-1) >= 0 {
		return kafkago.Message{}, r.err
	}
	return r.fakeReader.FetchMessage(ctx)
}

func TestPrefetchReportsFetchErrorsLikeASynchronousFetch(t *testing.T) {
	for _, c := range []struct {
		err       error
		permanent bool
	}{{kafkago.GroupCoordinatorNotAvailable, false}, {kafkago.SASLAuthenticationFailed, true}} {
		log, offsets := newFakeLog(), newFakeOffsets()
		log.append("orders", 0, kafkago.Message{Value: []byte(envelope(t, 0))})
		var tr *Transport
		tr, err := New(WithWriter(&fakeWriter{log: log}), WithReaderFactory(func(q string) Reader {
			r := &flakyReader{fakeReader: newFakeReader(log, offsets, q), err: c.err}
			r.fails.Store(1)
			return newPrefetchReader(tr, q, r)
		}))
		if err != nil {
			t.Fatal(err)
		}
		m, err := tr.Pop(context.Background(), "orders", time.Second)
		if m != nil || (err != nil) != c.permanent || (c.permanent && !errors.Is(err, c.err)) {
			t.Fatalf("%v: Pop = %v, %v; want an error: %v", c.err, m, err, c.permanent)
		}
		// The reader goes on after the error.
		if m, err = tr.Pop(context.Background(), "orders", 5*time.Second); m == nil || err != nil {
			t.Fatalf("%v: Pop after the error = %v, %v; want the record", c.err, m, err)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Pop(context.Background(), "orders", time.Second); !errors.Is(err, ErrClosed) {
			t.Fatalf("Pop after Close = %v, want ErrClosed", err)
		}
	}
}

func TestPrefetchPopWaitsAndHonoursCancellation(t *testing.T) {
	rg := prefetchRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	// An empty poll ends at its timeout.
	if m, err := rg.tr.Pop(ctx, "orders", 20*time.Millisecond); m != nil || err != nil {
		t.Fatalf("empty poll = %v, %v", m, err)
	}
	// A record arriving while Pop waits is delivered.
	go func() {
		time.Sleep(20 * time.Millisecond)
		rg.log.append("orders", 1, kafkago.Message{Value: []byte(envelope(t, 0))})
	}()
	if m, err := rg.tr.Pop(ctx, "orders", 5*time.Second); m == nil || err != nil {
		t.Fatalf("Pop = %v, %v; want the record", m, err)
	}
	// A cancelled caller ends the wait with its error.
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	if m, err := rg.tr.Pop(ctx, "orders", time.Hour); m != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop after cancel = %v, %v; want context.Canceled", m, err)
	}
}

func TestPrefetchPreparesDeliveriesAndGatesAtPop(t *testing.T) {
	log, offsets := newFakeLog(), newFakeOffsets()
	body := envelope(t, 0)
	// A record whose bq-attempts header says 2: the body is reconciled
	// ahead, then decoded ahead.
	log.append("orders", 0, kafkago.Message{Value: []byte(body), Headers: []kafkago.Header{{Key: "bq-attempts", Value: []byte("2")}}})
	// A record the version gate rejects: left untouched until Pop.
	log.append("orders", 0, kafkago.Message{Value: []byte(body), Headers: []kafkago.Header{{Key: "bq-schema-version", Value: []byte("2")}}})
	var hooked atomic.Int64
	var tr *Transport
	tr, err := New(WithWriter(&fakeWriter{log: log}),
		WithOnSchemaVersionRejected(func(string, string) { hooked.Add(1) }),
		WithReaderFactory(func(q string) Reader { return newPrefetchReader(tr, q, newFakeReader(log, offsets, q)) }))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	m, err := tr.Pop(ctx, "orders", 5*time.Second)
	if err != nil || m == nil {
		t.Fatal(m, err)
	}
	if d, _ := recordOf(m); !d.prepared || m.Body != envelope(t, 2) {
		t.Fatalf("prepared=%v body %s; want a prepared delivery with attempts 2", d.prepared, m.Body)
	}
	// The gated record was fetched ahead too, but its hook runs only when
	// Pop hands it out.
	time.Sleep(20 * time.Millisecond)
	if hooked.Load() != 0 {
		t.Fatal("the version hook ran before Pop handed the record out")
	}
	g, err := tr.Pop(ctx, "orders", 5*time.Second)
	if err != nil || g == nil {
		t.Fatal(g, err)
	}
	if d, _ := recordOf(g); d.prepared || g.Body != body || hooked.Load() != 1 {
		t.Fatalf("gated record: prepared=%v, body changed=%v, hook calls %d; want untouched and one call", d.prepared, g.Body != body, hooked.Load())
	}
}

func TestPrefetchReaderClosedBeforeItsFirstPop(t *testing.T) {
	log, offsets := newFakeLog(), newFakeOffsets()
	log.append("orders", 0, kafkago.Message{Value: []byte(envelope(t, 0))})
	tr, err := New(WithWriter(&fakeWriter{log: log}), WithReaderFactory(func(string) Reader { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	inner := &countingReader{fakeReader: newFakeReader(log, offsets, "orders")}
	p := newPrefetchReader(tr, "orders", inner)
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close of a reader never popped did not return")
	}
	if !inner.closed || inner.fetched.Load() != 0 {
		t.Fatalf("group reader closed %v, fetched %d; want closed, nothing fetched", inner.closed, inner.fetched.Load())
	}
	if _, err := p.FetchMessage(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("FetchMessage after Close = %v, want io.EOF", err)
	}
}
