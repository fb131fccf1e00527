package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

type reinjectRig struct {
	t       *testing.T
	log     *fakeLog
	offsets *fakeOffsets
	clock   *bqtest.FakeClock
	writer  *fakeWriter
	group   *fakeGroup
	tr      *Transport
	r       *Reinjector
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func newReinjectRig(t *testing.T, partitions int, tiers ...time.Duration) *reinjectRig {
	t.Helper()
	return newReinjectRigWith(t, partitions, tiers, nil)
}

// newReinjectRigWith is newReinjectRig with extra transport options.
func newReinjectRigWith(t *testing.T, partitions int, tiers []time.Duration, opts []Option) *reinjectRig {
	t.Helper()
	rg := &reinjectRig{t: t, log: newFakeLog(), offsets: newFakeOffsets(), clock: bqtest.NewFakeClock(t0), group: newFakeGroup()}
	rg.writer = &fakeWriter{log: rg.log}
	rg.log.create("orders", partitions)
	for i := range tiers {
		rg.log.create(RetryTopic("orders", i+1), partitions)
	}
	tr, err := New(WithWriter(rg.writer), WithReaderFactory(func(q string) Reader { return newFakeReader(rg.log, rg.offsets, q) }),
		WithGroupID("reinject"), WithRetryTiers(tiers...), WithClock(rg.clock), WithCommitInterval(0),
		func(c *config) { c.groupFactory = func(string, []string) groupMember { return rg.group } }, func(c *config) {
			for _, o := range opts {
				o(c)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	rg.tr = tr
	rg.r, err = tr.NewReinjector("orders")
	if err != nil {
		t.Fatal(err)
	}
	rg.ctx, rg.cancel = context.WithCancel(context.Background())
	rg.done = make(chan error, 1)
	go func() { rg.done <- rg.r.Run(rg.ctx) }()
	t.Cleanup(rg.stop)
	return rg
}

// stop cancels Run and checks that it returns nil.
func (rg *reinjectRig) stop() {
	if rg.stopped {
		return
	}
	rg.stopped = true
	rg.cancel()
	select {
	case err := <-rg.done:
		if err != nil {
			rg.t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		rg.t.Error("Run did not return after cancel")
	}
}

// start hands the re-injector a generation owning every partition of the
// retry topics.
func (rg *reinjectRig) start(partitions []int) *fakeGen {
	topics := map[string][]int{}
	for i := range rg.tr.cfg.tiers {
		topics[RetryTopic("orders", i+1)] = partitions
	}
	gen := newFakeGen(rg.log, rg.offsets, topics)
	rg.group.gens <- gen
	return gen
}

func (rg *reinjectRig) waitTimers(n int) {
	rg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rg.clock.WaitForTimers(ctx, n); err != nil {
		rg.t.Fatalf("waiting for %d timers (have %d): %v", n, rg.clock.Timers(), err)
	}
}

// waitRecords waits until topic holds n records and returns them.
func (rg *reinjectRig) waitRecords(topic string, n int) []kafkago.Message {
	rg.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := rg.log.records(topic)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			rg.t.Fatalf("%s holds %d records, want %d", topic, len(got), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (rg *reinjectRig) waitCommitted(topic string, p int, next int64) {
	rg.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rg.offsets.get(topic, p) != next {
		if time.Now().After(deadline) {
			rg.t.Fatalf("%s/%d committed %d, want %d", topic, p, rg.offsets.get(topic, p), next)
		}
		time.Sleep(time.Millisecond)
	}
}

func h(k, v string) kafkago.Header { return kafkago.Header{Key: k, Value: []byte(v)} }

func TestReinjectorCarriesRecordAfterTierByteForByte(t *testing.T) {
	rg := newReinjectRig(t, 3, 5*time.Second, 30*time.Second)
	key := []byte{0x00, 'k', 0xff, 0x10}
	value := []byte("{not json \xff")
	rg.log.append("orders.retry.1", 1, kafkago.Message{Key: key, Value: value, Time: t0, Headers: []kafkago.Header{
		h("bq-job", "urn:x"), h("bq-attempts", "2"), h("bq-delay", "5000"), h("bq-original-topic", "orders"),
		h("traceparent", "00-abc-def-01"), h("x-custom", "kept"),
	}})
	rg.start([]int{0, 1, 2})
	rg.waitTimers(1)
	rg.clock.Advance(5*time.Second - time.Millisecond)
	if got := rg.log.records("orders"); len(got) != 0 {
		t.Fatalf("carried %d records before the tier elapsed", len(got))
	}
	if got := rg.offsets.get("orders.retry.1", 1); got != 0 {
		t.Fatalf("committed %d before writing", got)
	}
	rg.clock.Advance(time.Millisecond)
	out := rg.waitRecords("orders", 1)[0]
	if !cmp.Equal(out.Key, key) || !cmp.Equal(out.Value, value) {
		t.Fatalf("key/value changed: %q %q", out.Key, out.Value)
	}
	want := []kafkago.Header{h("bq-job", "urn:x"), h("bq-attempts", "2"), h("traceparent", "00-abc-def-01"), h("x-custom", "kept")}
	if diff := cmp.Diff(want, out.Headers); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
	if out.Partition != PartitionForKey(key, 3) {
		t.Fatalf("partition %d, want the key's %d", out.Partition, PartitionForKey(key, 3))
	}
	rg.waitCommitted("orders.retry.1", 1, 1)
}

func TestReinjectorWaitIsClamped(t *testing.T) {
	rg := newReinjectRig(t, 1, 5*time.Second)
	// Old record: carried at once. Future record: waits one tier at most.
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("old"), Time: t0.Add(-time.Hour)})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("future"), Time: t0.Add(time.Hour)})
	rg.start([]int{0})
	if got := rg.waitRecords("orders", 1); string(got[0].Value) != "old" {
		t.Fatalf("first carried %q", got[0].Value)
	}
	rg.waitTimers(1)
	rg.clock.Advance(5*time.Second - time.Millisecond)
	if n := len(rg.log.records("orders")); n != 1 {
		t.Fatalf("future record carried early (%d records)", n)
	}
	rg.clock.Advance(time.Millisecond)
	rg.waitRecords("orders", 2)
	rg.waitCommitted("orders.retry.1", 0, 2)
}

func TestReinjectorPartitionsWaitIndependentlyInOffsetOrder(t *testing.T) {
	rg := newReinjectRig(t, 2, 5*time.Second)
	// Partition 0: A waits the full tier, B behind it is already due but
	// must not overtake A. Partition 1: C is due after one second.
	rg.log.append("orders.retry.1", 0, kafkago.Message{Key: []byte("k"), Value: []byte("A"), Time: t0})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Key: []byte("k"), Value: []byte("B"), Time: t0.Add(-time.Hour)})
	rg.log.append("orders.retry.1", 1, kafkago.Message{Value: []byte("C"), Time: t0.Add(-4 * time.Second)})
	rg.start([]int{0, 1})
	rg.waitTimers(2)
	rg.clock.Advance(time.Second)
	got := rg.waitRecords("orders", 1)
	if string(got[0].Value) != "C" {
		t.Fatalf("carried %q first, want C", got[0].Value)
	}
	rg.waitCommitted("orders.retry.1", 1, 1)
	if rg.offsets.get("orders.retry.1", 0) != 0 {
		t.Fatal("partition 0 committed while A waits")
	}
	rg.clock.Advance(4 * time.Second)
	got = rg.waitRecords("orders", 3)
	var order []string
	for _, m := range got {
		order = append(order, string(m.Value))
	}
	if diff := cmp.Diff([]string{"C", "A", "B"}, order); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	rg.waitCommitted("orders.retry.1", 0, 2)
}

func TestReinjectorCommitsOnlyAfterAcknowledgedWrite(t *testing.T) {
	rg := newReinjectRig(t, 1, time.Second)
	failures := 0
	rg.writer.setFail(func([]kafkago.Message) error {
		failures++
		return errors.New("broker down")
	})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("v"), Time: t0.Add(-time.Minute)})
	rg.start([]int{0})
	for i := 0; i < 3; i++ {
		rg.waitTimers(1) // backing off after a failed write
		if got := rg.offsets.get("orders.retry.1", 0); got != 0 {
			t.Fatalf("committed %d although the write failed", got)
		}
		if n := len(rg.log.records("orders")); n != 0 {
			t.Fatalf("%d records written by a failing writer", n)
		}
		if i == 2 {
			rg.writer.setFail(nil)
		}
		rg.clock.Advance(5 * time.Second)
	}
	rg.waitRecords("orders", 1)
	rg.waitCommitted("orders.retry.1", 0, 1)
	if failures < 3 {
		t.Fatalf("write attempted %d times", failures)
	}
}

func TestReinjectorRevokeMidWaitCommitsNothingAndNextOwnerCarries(t *testing.T) {
	rg := newReinjectRig(t, 1, 10*time.Second)
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("done"), Time: t0.Add(-time.Hour)})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("waiting"), Time: t0})
	gen := rg.start([]int{0})
	rg.waitRecords("orders", 1)
	rg.waitTimers(1)
	rg.clock.Advance(4 * time.Second)
	gen.End() // partition revoked while "waiting" sleeps
	if got := rg.offsets.get("orders.retry.1", 0); got != 1 {
		t.Fatalf("after revoke committed %d, want 1 (only the written record)", got)
	}
	if n := len(rg.log.records("orders")); n != 1 {
		t.Fatalf("revoked record was written (%d records)", n)
	}
	// The next owner resumes at the committed offset and waits the rest of
	// the tier, counted from the record's timestamp.
	rg.start([]int{0})
	rg.waitTimers(1)
	rg.clock.Advance(6*time.Second - time.Millisecond)
	if n := len(rg.log.records("orders")); n != 1 {
		t.Fatalf("carried before the tier elapsed (%d records)", n)
	}
	rg.clock.Advance(time.Millisecond)
	got := rg.waitRecords("orders", 2)
	if string(got[1].Value) != "waiting" || len(got) != 2 {
		t.Fatalf("records %v", got)
	}
	rg.waitCommitted("orders.retry.1", 0, 2)
}

func TestReinjectorUsesTierOfItsTopicAndBoundedBuffer(t *testing.T) {
	rg := newReinjectRig(t, 1, time.Second, 3*time.Second)
	rg.log.append("orders.retry.2", 0, kafkago.Message{Value: []byte("t2"), Time: t0,
		Headers: []kafkago.Header{h("bq-original-topic", "orders")}})
	gen := rg.start([]int{0})
	rg.waitTimers(1)
	rg.clock.Advance(3*time.Second - time.Millisecond)
	if n := len(rg.log.records("orders")); n != 0 {
		t.Fatal("tier 2 record carried after less than its tier")
	}
	rg.clock.Advance(time.Millisecond)
	rg.waitRecords("orders", 1)
	gen.mu.Lock()
	defer gen.mu.Unlock()
	for _, b := range gen.buffers {
		if b != DefaultReinjectBuffer {
			t.Fatalf("partition buffer %d, want %d", b, DefaultReinjectBuffer)
		}
	}
	if len(gen.buffers) != 2 {
		t.Fatalf("opened %d partitions, want 2 (one per tier topic)", len(gen.buffers))
	}
}

func TestReinjectorMissingOriginalTopicFallsBackToWorkTopic(t *testing.T) {
	rg := newReinjectRig(t, 1, time.Second)
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("x"), Time: t0.Add(-time.Hour)})
	rg.start([]int{0})
	if got := rg.waitRecords("orders", 1); string(got[0].Value) != "x" {
		t.Fatalf("got %q", got[0].Value)
	}
}

func TestNewReinjectorErrors(t *testing.T) {
	w := &fakeWriter{log: newFakeLog()}
	rf := WithReaderFactory(func(string) Reader { return nil })
	cases := []struct {
		name   string
		opts   []Option
		topics []string
		want   error
	}{
		{"no tiers", []Option{WithWriter(w), rf, WithGroupID("g")}, []string{"orders"}, babelqueue.ErrDelayUnsupported},
		{"no topics", []Option{WithWriter(w), rf, WithGroupID("g"), WithRetryTiers(time.Second)}, nil, ErrEmptyTopic},
		{"blank topic", []Option{WithWriter(w), rf, WithGroupID("g"), WithRetryTiers(time.Second)}, []string{" "}, ErrEmptyTopic},
		{"no group", []Option{WithWriter(w), rf, WithRetryTiers(time.Second)}, []string{"orders"}, ErrNoGroupID},
		{"no brokers", []Option{WithWriter(w), rf, WithGroupID("g"), WithRetryTiers(time.Second)}, []string{"orders"}, ErrNoBrokers},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := New(c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.NewReinjector(c.topics...)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

func TestReinjectorShutdownMidWaitCommitsNothing(t *testing.T) {
	rg := newReinjectRig(t, 1, time.Second)
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("w"), Time: t0})
	gen := rg.start([]int{0})
	rg.waitTimers(1)
	rg.stop()
	gen.mu.Lock()
	commits := fmt.Sprint(gen.commitLog)
	gen.mu.Unlock()
	if commits != "[]" || rg.offsets.get("orders.retry.1", 0) != 0 {
		t.Fatalf("commits at shutdown: %s", commits)
	}
}

func TestReinjectorCarriesDueRecordsInOneWrite(t *testing.T) {
	rg := newReinjectRig(t, 1, 5*time.Second)
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("head"), Time: t0})
	for i := 0; i < 4; i++ {
		rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte(fmt.Sprint("due-", i)), Time: t0.Add(-time.Hour)})
	}
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("later"), Time: t0.Add(time.Second)})
	gen := rg.start([]int{0})
	rg.waitTimers(1)
	// Every record is buffered (the fetcher then blocks fetching offset 6)
	// before the head becomes due.
	deadline := time.Now().Add(5 * time.Second)
	for !gen.fetchedUpTo("orders.retry.1", 0, 6) {
		if time.Now().After(deadline) {
			t.Fatal("the fetcher did not buffer the records")
		}
		time.Sleep(time.Millisecond)
	}
	rg.clock.Advance(5 * time.Second)
	got := rg.waitRecords("orders", 5)
	var order []string
	for _, m := range got {
		order = append(order, string(m.Value))
	}
	if diff := cmp.Diff([]string{"head", "due-0", "due-1", "due-2", "due-3"}, order); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	rg.waitCommitted("orders.retry.1", 0, 5)
	rg.writer.mu.Lock()
	calls := append([]int(nil), rg.writer.calls...)
	rg.writer.mu.Unlock()
	if diff := cmp.Diff([]int{5}, calls); diff != "" {
		t.Fatalf("writes (-want +got):\n%s", diff)
	}
	rg.waitTimers(1) // "later" waits its own second
	rg.clock.Advance(time.Second)
	rg.waitRecords("orders", 6)
	rg.waitCommitted("orders.retry.1", 0, 6)
}

func TestReinjectorKeepsFailedCommitsForTheNextFlush(t *testing.T) {
	rg := newReinjectRig(t, 1, time.Second)
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("a"), Time: t0.Add(-time.Hour)})
	gen := newFakeGen(rg.log, rg.offsets, map[string][]int{"orders.retry.1": {0}})
	gen.commitErr = errors.New("coordinator moving")
	rg.group.gens <- gen
	rg.waitRecords("orders", 1)
	time.Sleep(20 * time.Millisecond)
	if got := rg.offsets.get("orders.retry.1", 0); got != 0 {
		t.Fatalf("committed %d through a failing coordinator", got)
	}
	gen.mu.Lock()
	gen.commitErr = nil
	gen.mu.Unlock()
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("b"), Time: t0.Add(-time.Hour)})
	rg.waitRecords("orders", 2)
	rg.waitCommitted("orders.retry.1", 0, 2)
}

// erroringPartition returns errs queued errors, as kafka-go's partition
// reader does after failed reconnections to a dead leader, then a record.
type erroringPartition struct {
	mu   sync.Mutex
	errs int
}

func (p *erroringPartition) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.errs > 0 {
		p.errs--
		return kafkago.Message{}, errors.New("failed to dial: connection refused")
	}
	return kafkago.Message{Topic: "orders.retry.1", Offset: 7}, nil
}

func (p *erroringPartition) Close() error { return nil }

// After a leader loss the partition reader hands back the errors it queued
// while the leader was down. The worker must drain them at the reader's
// own pace, not its write backoff's: 40 queued errors may cost at most
// 40 × 250ms of waiting, where a 5 s backoff would stall the partition for
// minutes after the new leader is up.
func TestReinjectorFetchDrainsQueuedErrorsQuickly(t *testing.T) {
	clock := bqtest.NewFakeClock(t0)
	w := &partitionWorker{r: &Reinjector{clock: clock, log: slog.New(slog.NewTextHandler(io.Discard, nil))}, topic: "orders.retry.1"}
	src := &erroringPartition{errs: 40}
	out := make(chan kafkago.Message, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.fetch(ctx, src, out)
	var waited time.Duration
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-out:
			if m.Offset != 7 {
				t.Fatalf("fetched offset %d, want 7", m.Offset)
			}
			if limit := 40 * 250 * time.Millisecond; waited > limit {
				t.Fatalf("40 queued errors cost %v of waiting, want at most %v", waited, limit)
			}
			return
		case <-deadline:
			t.Fatalf("no record after %v of fake time", waited)
		default:
		}
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Millisecond)
		if clock.WaitForTimers(wctx, 1) == nil {
			clock.Advance(250 * time.Millisecond)
			waited += 250 * time.Millisecond
		}
		wcancel()
	}
}

func TestReinjectorCommitsAtMostOncePerCommitIntervalAndFlushesAtRevoke(t *testing.T) {
	rg := newReinjectRigWith(t, 1, []time.Duration{2 * time.Second}, []Option{WithCommitInterval(time.Second)})
	for _, r := range []struct {
		v  string
		ts time.Duration // due 2s later
	}{{"a", -time.Hour}, {"b", -1500 * time.Millisecond}, {"c", -1200 * time.Millisecond}, {"d", -500 * time.Millisecond}} {
		rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte(r.v), Time: t0.Add(r.ts)})
	}
	gen := rg.start([]int{0})
	// "a" is due: written and committed at once; the committer then waits
	// its interval (to t0+1s) while "b" waits out its tier.
	rg.waitRecords("orders", 1)
	rg.waitCommitted("orders.retry.1", 0, 1)
	rg.waitTimers(2)
	rg.clock.Advance(500 * time.Millisecond) // t0+0.5s: "b"
	rg.waitRecords("orders", 2)
	rg.waitTimers(2)
	rg.clock.Advance(300 * time.Millisecond) // t0+0.8s: "c"
	rg.waitRecords("orders", 3)
	rg.waitTimers(2)
	time.Sleep(20 * time.Millisecond)
	if got := rg.offsets.get("orders.retry.1", 0); got != 1 {
		t.Fatalf("committed %d within the commit interval, want 1", got)
	}
	rg.clock.Advance(200 * time.Millisecond) // t0+1s: "b" and "c" in one commit
	rg.waitCommitted("orders.retry.1", 0, 3)
	rg.waitTimers(2)
	rg.clock.Advance(500 * time.Millisecond) // t0+1.5s: "d", inside the next interval
	rg.waitRecords("orders", 4)
	time.Sleep(20 * time.Millisecond)
	if got := rg.offsets.get("orders.retry.1", 0); got != 3 {
		t.Fatalf("committed %d within the commit interval, want 3", got)
	}
	gen.End() // the end of the generation commits it without waiting
	if got := rg.offsets.get("orders.retry.1", 0); got != 4 {
		t.Fatalf("after revoke committed %d, want 4 (every written record)", got)
	}
	if diff := cmp.Diff("[map[orders.retry.1:map[0:1]] map[orders.retry.1:map[0:3]] map[orders.retry.1:map[0:4]]]", fmt.Sprint(gen.commitLog)); diff != "" {
		t.Fatalf("commits (-want +got):\n%s", diff)
	}
}
