package orderstatus

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testSettings() Settings {
	return Settings{
		Brokers:     []string{"127.0.0.1:9092"},
		EventsTopic: "orders.events", RetryTopic: "orders.retry", DeadLetterTopic: "orders.dlq",
		GroupID: "g", StorePath: "x.db",
		Attempts: 3, MinDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond,
	}
}

// fakeProducer records what it is given and fails for the topics in fail.
type fakeProducer struct {
	mu      sync.Mutex
	records []Record
	fail    map[string]error
}

func (f *fakeProducer) Produce(_ context.Context, r Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[r.Topic]; err != nil {
		return err
	}
	f.records = append(f.records, r)
	return nil
}

// fakeStore answers Apply with err, or with result when err is nil.
type fakeStore struct {
	result Applied
	err    error
	calls  []Event
}

func (f *fakeStore) Apply(_ context.Context, e Event) (Applied, error) {
	f.calls = append(f.calls, e)
	if f.err != nil {
		return 0, f.err
	}
	return f.result, nil
}
func (f *fakeStore) Orders(context.Context) ([]Order, error)        { return nil, nil }
func (f *fakeStore) HasEvent(context.Context, string) (bool, error) { return false, nil }
func (f *fakeStore) Close() error                                   { return nil }

func envelope(t *testing.T, urn string, data any) []byte {
	t.Helper()
	e, err := babelqueue.Make(urn, data, babelqueue.WithQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hdr(kv ...string) []kafka.Header {
	var hs []kafka.Header
	for i := 0; i < len(kv); i += 2 {
		hs = append(hs, kafka.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return hs
}

func retryHeaders(attempt, partition, offset int) []kafka.Header {
	return hdr(HeaderAttempt, strconv.Itoa(attempt), HeaderReason, "unavailable", HeaderError, "old",
		HeaderPartition, strconv.Itoa(partition), HeaderOffset, strconv.Itoa(offset))
}

func headerMap(hs []kafka.Header) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		m[h.Key] = string(h.Value)
	}
	return m
}

func TestProcessOutcomeTable(t *testing.T) {
	s := testSettings()
	created := func(t *testing.T) []byte { return envelope(t, URNCreated, map[string]any{"order_id": 7}) }
	boom := errors.New("disk gone")
	tests := []struct {
		name      string
		topic     string
		value     func(*testing.T) []byte
		headers   []kafka.Header
		store     *fakeStore
		wantTopic string // "" when nothing is produced
		want      map[string]string
		wantApply int
	}{
		{name: "projected", topic: s.EventsTopic, value: created, store: &fakeStore{result: Projected}, wantApply: 1},
		{name: "already applied", topic: s.EventsTopic, value: created, store: &fakeStore{result: AlreadyApplied}, wantApply: 1},
		{name: "not json is malformed", topic: s.EventsTopic, value: func(*testing.T) []byte { return []byte("{not json") },
			store: &fakeStore{}, wantTopic: s.DeadLetterTopic,
			want: map[string]string{DLQHeaderReason: ReasonMalformed, DLQHeaderTopic: s.EventsTopic, DLQHeaderPartition: "2", DLQHeaderOffset: "41"}},
		{name: "no order id is malformed", topic: s.EventsTopic, value: func(t *testing.T) []byte { return envelope(t, URNPaid, map[string]any{"x": 1}) },
			store: &fakeStore{}, wantTopic: s.DeadLetterTopic,
			want: map[string]string{DLQHeaderReason: ReasonMalformed, DLQHeaderTopic: s.EventsTopic, DLQHeaderPartition: "2", DLQHeaderOffset: "41"}},
		{name: "unknown type", topic: s.EventsTopic, value: func(t *testing.T) []byte {
			return envelope(t, "urn:babel:orders:refunded", map[string]any{"order_id": 7})
		},
			store: &fakeStore{}, wantTopic: s.DeadLetterTopic,
			want: map[string]string{DLQHeaderReason: ReasonUnknownType, DLQHeaderTopic: s.EventsTopic, DLQHeaderPartition: "2", DLQHeaderOffset: "41"}},
		{name: "unavailable on first attempt is retried", topic: s.EventsTopic, value: created,
			store: &fakeStore{err: boom}, wantTopic: s.RetryTopic, wantApply: 1,
			want: map[string]string{HeaderAttempt: "1", HeaderReason: ReasonUnavailable, HeaderError: "disk gone", HeaderPartition: "2", HeaderOffset: "41"}},
		{name: "invalid transition on a retry is retried one higher", topic: s.RetryTopic, value: created, headers: retryHeaders(1, 5, 9),
			store: &fakeStore{err: ErrInvalidTransition}, wantTopic: s.RetryTopic, wantApply: 1,
			want: map[string]string{HeaderAttempt: "2", HeaderReason: ReasonInvalidTransition, HeaderPartition: "5", HeaderOffset: "9"}},
		{name: "last attempt is a dead letter with its reason", topic: s.RetryTopic, value: created, headers: retryHeaders(2, 5, 9),
			store: &fakeStore{err: ErrInvalidTransition}, wantTopic: s.DeadLetterTopic, wantApply: 1,
			want: map[string]string{DLQHeaderReason: ReasonInvalidTransition, DLQHeaderTopic: s.EventsTopic, DLQHeaderPartition: "5", DLQHeaderOffset: "9", DLQHeaderAttempts: "3"}},
		{name: "bad retry header is malformed from its own place", topic: s.RetryTopic, value: created,
			headers: hdr(HeaderAttempt, "0", HeaderPartition, "1", HeaderOffset, "2"),
			store:   &fakeStore{}, wantTopic: s.DeadLetterTopic,
			want: map[string]string{DLQHeaderReason: ReasonMalformed, DLQHeaderTopic: s.RetryTopic, DLQHeaderPartition: "2", DLQHeaderOffset: "41"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := bqtest.NewFakeClock(t0.Add(time.Hour)) // every backoff has elapsed
			prod := &fakeProducer{}
			p, err := NewProjector(s, tc.store, prod, WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			value := tc.value(t)
			m := kafka.Message{Topic: tc.topic, Partition: 2, Offset: 41, Key: []byte("7"), Value: value, Headers: tc.headers, Time: t0}
			if err := p.Process(context.Background(), m); err != nil {
				t.Fatalf("Process: %v", err)
			}
			if len(tc.store.calls) != tc.wantApply {
				t.Errorf("store applied %d times, want %d", len(tc.store.calls), tc.wantApply)
			}
			if tc.wantTopic == "" {
				if len(prod.records) != 0 {
					t.Fatalf("produced %d records, want none", len(prod.records))
				}
				return
			}
			if len(prod.records) != 1 {
				t.Fatalf("produced %d records, want 1", len(prod.records))
			}
			r := prod.records[0]
			if r.Topic != tc.wantTopic || string(r.Key) != "7" || string(r.Value) != string(value) {
				t.Errorf("produced topic %q key %q, want %q key 7 and the value unchanged", r.Topic, r.Key, tc.wantTopic)
			}
			got := headerMap(r.Headers)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("header %s = %q, want %q", k, got[k], v)
				}
			}
			if _, ok := got[DLQHeaderAttempts]; ok && tc.want[DLQHeaderAttempts] == "" {
				t.Errorf("dlq.attempts present on a record dead-lettered at once")
			}
		})
	}
}

func TestProcessFailedWriteIsNotSettled(t *testing.T) {
	s := testSettings()
	boom := errors.New("broker down")
	for _, topic := range []string{s.RetryTopic, s.DeadLetterTopic} {
		prod := &fakeProducer{fail: map[string]error{topic: boom}}
		store := &fakeStore{err: ErrUnavailable}
		p, _ := NewProjector(s, store, prod, WithClock(bqtest.NewFakeClock(t0)))
		value := envelope(t, URNCreated, map[string]any{"order_id": "a"})
		if topic == s.DeadLetterTopic {
			value = []byte("garbage")
		}
		err := p.Process(context.Background(), kafka.Message{Topic: s.EventsTopic, Value: value, Time: t0})
		if !errors.Is(err, boom) {
			t.Errorf("%s write failing: Process = %v, want the write error", topic, err)
		}
	}
}

func TestProcessWaitsOutTheBackoff(t *testing.T) {
	s := testSettings()
	clock := bqtest.NewFakeClock(t0)
	store := &fakeStore{result: Projected}
	p, _ := NewProjector(s, store, &fakeProducer{}, WithClock(clock))
	m := kafka.Message{Topic: s.RetryTopic, Value: envelope(t, URNCreated, map[string]any{"order_id": 1}),
		Headers: retryHeaders(2, 0, 3), Time: t0.Add(-50 * time.Millisecond)}
	done := make(chan error, 1)
	go func() { done <- p.Process(context.Background(), m) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Attempt 2 waits 200ms after the timestamp: 150ms from now.
	clock.Advance(149 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Process returned %v before the backoff elapsed", err)
	case <-time.After(20 * time.Millisecond):
	}
	if len(store.calls) != 0 {
		t.Fatal("projected before the backoff elapsed")
	}
	clock.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("Process: %v", err)
	}
	if len(store.calls) != 1 {
		t.Fatalf("store applied %d times, want 1", len(store.calls))
	}
}

func TestProcessShutdownWhileWaitingLeavesTheRecord(t *testing.T) {
	s := testSettings()
	clock := bqtest.NewFakeClock(t0)
	store := &fakeStore{result: Projected}
	prod := &fakeProducer{}
	p, _ := NewProjector(s, store, prod, WithClock(clock))
	m := kafka.Message{Topic: s.RetryTopic, Value: envelope(t, URNCreated, map[string]any{"order_id": 1}),
		Headers: retryHeaders(1, 0, 3), Time: t0}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Process(ctx, m) }()
	if err := clock.WaitForTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Process = %v, want context.Canceled", err)
	}
	if len(store.calls) != 0 || len(prod.records) != 0 {
		t.Fatalf("record was settled (%d applies, %d writes), want it left alone", len(store.calls), len(prod.records))
	}
}

func TestRetryHeadersReplaceOldOnesAndKeepOthers(t *testing.T) {
	in := append(hdr("bq-job", URNPaid, "traceparent", "00-x"), retryHeaders(1, 4, 8)...)
	got := RetryHeaders(in, 2, ReasonInvalidTransition, errors.New("no"), Place{Topic: "e", Partition: 4, Offset: 8})
	want := hdr("bq-job", URNPaid, "traceparent", "00-x",
		HeaderAttempt, "2", HeaderReason, ReasonInvalidTransition, HeaderError, "no", HeaderPartition, "4", HeaderOffset, "8")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RetryHeaders (-want +got):\n%s", diff)
	}
}

func TestDeadLetterHeadersKeepEverything(t *testing.T) {
	in := append(hdr("bq-job", URNPaid), retryHeaders(1, 4, 8)...)
	got := DeadLetterHeaders(in, ReasonUnavailable, errors.New("down"), Place{Topic: "e", Partition: 4, Offset: 8}, 0)
	want := append(append(hdr(), in...), hdr(DLQHeaderReason, ReasonUnavailable, DLQHeaderError, "down",
		DLQHeaderTopic, "e", DLQHeaderPartition, "4", DLQHeaderOffset, "8")...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DeadLetterHeaders (-want +got):\n%s", diff)
	}
	got = DeadLetterHeaders(nil, ReasonUnavailable, errors.New("down"), Place{Topic: "e"}, 5)
	if v, _ := Header(got, DLQHeaderAttempts); v != "5" {
		t.Errorf("dlq.attempts = %q, want 5", v)
	}
}
