package orderstatus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// fakeFetcher hands out msgs, then blocks until ctx ends.
type fakeFetcher struct {
	mu        sync.Mutex
	msgs      []kafka.Message
	committed []int64
}

func (f *fakeFetcher) FetchMessage(ctx context.Context) (kafka.Message, error) {
	f.mu.Lock()
	if len(f.msgs) > 0 {
		m := f.msgs[0]
		f.msgs = f.msgs[1:]
		f.mu.Unlock()
		return m, nil
	}
	f.mu.Unlock()
	<-ctx.Done()
	return kafka.Message{}, ctx.Err()
}

func (f *fakeFetcher) CommitMessages(_ context.Context, msgs ...kafka.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range msgs {
		f.committed = append(f.committed, m.Offset)
	}
	return nil
}

func (f *fakeFetcher) offsets() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.committed...)
}

func TestRunCommitsSettledRecordsAndStopsOnAnUnsettledOne(t *testing.T) {
	s := testSettings()
	good := envelope(t, URNCreated, map[string]any{"order_id": 1})
	f := &fakeFetcher{msgs: []kafka.Message{
		{Topic: s.EventsTopic, Offset: 0, Value: good},
		{Topic: s.EventsTopic, Offset: 1, Value: []byte("garbage")}, // dead letter write fails
		{Topic: s.EventsTopic, Offset: 2, Value: good},
	}}
	boom := errors.New("dlq down")
	p, _ := NewProjector(s, &fakeStore{result: Projected}, &fakeProducer{fail: map[string]error{s.DeadLetterTopic: boom}},
		WithClock(bqtest.NewFakeClock(t0)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Run(ctx, p, f)
	if !errors.Is(err, ErrNotSettled) || !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want ErrNotSettled wrapping the write error", err)
	}
	if got := f.offsets(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("committed offsets %v, want only [0]", got)
	}
}

func TestRunStopsGracefullyLeavingAWaitingRecord(t *testing.T) {
	s := testSettings()
	clock := bqtest.NewFakeClock(t0)
	value := envelope(t, URNCreated, map[string]any{"order_id": 1})
	f := &fakeFetcher{msgs: []kafka.Message{
		{Topic: s.EventsTopic, Offset: 0, Value: value},
		{Topic: s.RetryTopic, Offset: 0, Value: value, Headers: retryHeaders(1, 0, 0), Time: t0},
	}}
	p, _ := NewProjector(s, &fakeStore{result: Projected}, &fakeProducer{}, WithClock(clock))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p, f) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := clock.WaitForTimers(wctx, 1); err != nil { // the retry record is waiting
		t.Fatal(err)
	}
	for len(f.offsets()) == 0 { // the events record settles on its own partition
		if wctx.Err() != nil {
			t.Fatal("the events record was never committed")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after shutdown = %v, want nil", err)
	}
	if got := f.offsets(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("committed offsets %v, want only the events record", got)
	}
}
