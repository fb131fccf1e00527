package kafka

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// handOverReader records what a commitBatcher hands to it, call by call.
type handOverReader struct {
	mu    sync.Mutex
	calls [][]kafkago.Message
	err   error
}

func (r *handOverReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	<-ctx.Done()
	return kafkago.Message{}, ctx.Err()
}

func (r *handOverReader) CommitMessages(_ context.Context, msgs ...kafkago.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.calls = append(r.calls, append([]kafkago.Message(nil), msgs...))
	return nil
}

func (r *handOverReader) handedOver() [][]kafkago.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]kafkago.Message(nil), r.calls...)
}

// committed returns the highest offset handed over per partition of topic.
func (r *handOverReader) committed(topic string) map[int]int64 {
	out := map[int]int64{}
	for _, call := range r.handedOver() {
		for _, m := range call {
			if m.Topic == topic && m.Offset >= out[m.Partition] {
				out[m.Partition] = m.Offset
			}
		}
	}
	return out
}

func rec(topic string, partition int, offset int64) []kafkago.Message {
	return []kafkago.Message{{Topic: topic, Partition: partition, Offset: offset, Value: []byte("v")}}
}

// waitFor polls cond until it holds or a generous bound passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCommitBatcherHandsOverAFullBatchAsOneCallWithTheHighestOffsets(t *testing.T) {
	r := &handOverReader{}
	b := newCommitBatcher(r, slog.Default())
	defer b.close()
	ctx := context.Background()
	// commitBatchSize acknowledgements over two partitions, each in order.
	for i := 0; i < commitBatchSize; i++ {
		if err := b.commit(ctx, rec("orders", i%2, int64(i/2))); err != nil {
			t.Fatal(err)
		}
	}
	calls := r.handedOver()
	if len(calls) != 1 {
		t.Fatalf("%d hand-overs, want the full batch in 1", len(calls))
	}
	if len(calls[0]) != 2 {
		t.Fatalf("the batch holds %d commits, want one per partition: %v", len(calls[0]), calls[0])
	}
	want := map[int]int64{0: commitBatchSize/2 - 1, 1: commitBatchSize/2 - 1}
	for _, m := range calls[0] {
		if m.Topic != "orders" || m.Offset != want[m.Partition] {
			t.Fatalf("handed over %s/%d@%d, want offset %d", m.Topic, m.Partition, m.Offset, want[m.Partition])
		}
		if m.Value != nil {
			t.Fatalf("a handed-over commit keeps the record's value")
		}
	}
}

func TestCommitBatcherHandsOverALoneAcknowledgementWithoutMoreTraffic(t *testing.T) {
	r := &handOverReader{}
	b := newCommitBatcher(r, slog.Default())
	defer b.close()
	if err := b.commit(context.Background(), rec("orders", 3, 41)); err != nil {
		t.Fatal(err)
	}
	// No other acknowledgement, no Close: the delayed hand-over must do it.
	waitFor(t, "the delayed hand-over", func() bool { return r.committed("orders")[3] == 41 })
}

func TestCommitBatcherNeverHandsOverAnOffsetLowerThanOneBefore(t *testing.T) {
	r := &handOverReader{}
	b := newCommitBatcher(r, slog.Default())
	ctx := context.Background()
	// Acknowledgements arrive from several goroutines at once, each
	// partition's in order, while delayed hand-overs run in between.
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := int64(0); off < 2000; off++ {
				if err := b.commit(ctx, rec("orders", p, off)); err != nil {
					t.Error(err)
					return
				}
				if off%300 == 0 {
					time.Sleep(3 * commitHandOverDelay)
				}
			}
		}()
	}
	wg.Wait()
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
	last := map[int]int64{}
	for _, call := range r.handedOver() {
		for _, m := range call {
			if prev, ok := last[m.Partition]; ok && m.Offset < prev {
				t.Fatalf("partition %d: offset %d handed over after %d", m.Partition, m.Offset, prev)
			}
			last[m.Partition] = m.Offset
		}
	}
	for p := 0; p < 4; p++ {
		if last[p] != 1999 {
			t.Fatalf("partition %d: last handed over %d, want 1999 (every acknowledgement settled by close)", p, last[p])
		}
	}
}

func TestCommitBatcherCloseHandsOverWhatIsPendingAndRefusesLaterCommits(t *testing.T) {
	r := &handOverReader{}
	b := newCommitBatcher(r, slog.Default())
	ctx := context.Background()
	for _, off := range []int64{0, 1, 4, 2, 3} { // an acknowledgement may come late
		if err := b.commit(ctx, rec("orders", 0, off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
	if got := r.committed("orders")[0]; got != 4 {
		t.Fatalf("after close the group reader has offset %d, want 4", got)
	}
	if err := b.commit(ctx, rec("orders", 0, 5)); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("commit after close = %v, want io.ErrClosedPipe", err)
	}
	if got := r.committed("orders")[0]; got != 4 {
		t.Fatalf("a refused commit reached the group reader: offset %d", got)
	}
}

func TestCommitBatcherReportsAFailedHandOver(t *testing.T) {
	cause := errors.New("reader gone")
	r := &handOverReader{err: cause}
	logged := &syncBuffer{}
	b := newCommitBatcher(r, slog.New(slog.NewTextHandler(logged, nil)))
	ctx := context.Background()
	// The acknowledgement that fills the batch gets the error.
	var err error
	for i := 0; i < commitBatchSize && err == nil; i++ {
		err = b.commit(ctx, rec("orders", 0, int64(i)))
	}
	if !errors.Is(err, cause) {
		t.Fatalf("the acknowledgement that filled the batch returned %v, want %v", err, cause)
	}
	// A delayed hand-over has no caller to return it to: it is logged.
	if err := b.commit(ctx, rec("orders", 0, 1000)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed delayed hand-over to be logged", func() bool {
		return strings.Contains(logged.String(), "reader gone")
	})
	if err := b.close(); err != nil {
		t.Fatalf("close with nothing pending = %v", err)
	}
}

func TestAckAfterCloseOfABatchingReaderSaysTheRecordComesAgain(t *testing.T) {
	rg := prefetchRig(t)
	ctx := context.Background()
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(envelope(t, 0))})
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(envelope(t, 0))})
	first, err := rg.tr.Pop(ctx, "orders", 5*time.Second)
	if err != nil || first == nil {
		t.Fatalf("Pop = %v, %v", first, err)
	}
	second, err := rg.tr.Pop(ctx, "orders", 5*time.Second)
	if err != nil || second == nil {
		t.Fatalf("Pop = %v, %v", second, err)
	}
	if err := rg.tr.Ack(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Rewind closes the reader: the acknowledgement before it is
	// committed, the record rewound is not.
	if err := rg.tr.Rewind(ctx, second); err != nil {
		t.Fatal(err)
	}
	if got := rg.offsets.get("orders", 0); got != 1 {
		t.Fatalf("after Rewind the committed next offset is %d, want 1", got)
	}
	err = rg.tr.Ack(ctx, second)
	if !errors.Is(err, io.ErrClosedPipe) || !strings.Contains(err.Error(), "delivered again") {
		t.Fatalf("Ack of a rewound record = %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger on another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
