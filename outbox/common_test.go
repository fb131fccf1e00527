package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/outbox"
)

// sent is one message a recordingSender got.
type sent struct {
	queue   string
	key     []byte
	body    []byte
	headers map[string]string
}

// recordingSender records every send; fail, when set, decides failures.
type recordingSender struct {
	mu   sync.Mutex
	got  []sent
	fail func(body []byte) error
}

func (s *recordingSender) Send(_ context.Context, queue string, key, body []byte, headers map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(body); err != nil {
			return err
		}
	}
	s.got = append(s.got, sent{queue, bytes.Clone(key), bytes.Clone(body), maps.Clone(headers)})
	return nil
}

// bodiesOf returns the bodies s sent, in order.
func bodiesOf(s *recordingSender) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, g := range s.got {
		out = append(out, string(g.body))
	}
	return out
}

// batchingSender is a recordingSender with a batch path: each SendBatch
// is recorded as one call and its messages sent in order.
type batchingSender struct {
	*recordingSender
	mu    sync.Mutex
	calls []int
}

func (b *batchingSender) SendBatch(ctx context.Context, msgs []outbox.Message) []error {
	b.mu.Lock()
	b.calls = append(b.calls, len(msgs))
	b.mu.Unlock()
	var errs []error
	for i, m := range msgs {
		if err := b.Send(ctx, m.Queue, m.Key, m.Body, m.Headers); err != nil {
			if errs == nil {
				errs = make([]error, len(msgs))
			}
			errs[i] = err
		}
	}
	return errs
}

// senderKinds runs a test with a sender sending one message at a time and
// with one sending whole batches.
var senderKinds = map[string]func(*recordingSender) outbox.Sender{
	"Each":  func(s *recordingSender) outbox.Sender { return s },
	"Batch": func(s *recordingSender) outbox.Sender { return &batchingSender{recordingSender: s} },
}

// relayOpts are added to every relay of a test run (runOutboxTests).
var relayOpts []outbox.RelayOption

func newRelay(t *testing.T, db *sql.DB, ob *outbox.Outbox, s outbox.Sender, opts ...outbox.RelayOption) *outbox.Relay {
	t.Helper()
	r, err := outbox.NewRelay(db, ob, s, append(slices.Clone(relayOpts), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newOutbox(t *testing.T, db *sql.DB, d outbox.Dialect, opts ...outbox.Option) *outbox.Outbox {
	t.Helper()
	ob, err := outbox.New(d, append([]outbox.Option{outbox.WithTable(fmt.Sprintf("bq_outbox_%d", time.Now().UnixNano()))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP TABLE "+ob.Table()) })
	return ob
}

func write(t *testing.T, db *sql.DB, ob *outbox.Outbox, commit bool, msgs ...outbox.Message) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := ob.Write(ctx, tx, m); err != nil {
			t.Fatal(err)
		}
	}
	if commit {
		err = tx.Commit()
	} else {
		err = tx.Rollback()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func drain(t *testing.T, r *outbox.Relay) {
	t.Helper()
	for range 1000 {
		n, err := r.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("relay did not finish")
}

// runOutboxTests is the behaviour every dialect must show.
func runOutboxTests(t *testing.T, db *sql.DB, d outbox.Dialect) {
	ctx := context.Background()
	t.Run("ByteIdenticalAndOnlyCommitted", func(t *testing.T) {
		ob := newOutbox(t, db, d)
		env, err := babelqueue.Make("urn:babel:orders:created", map[string]any{"order_id": 7}, babelqueue.WithQueue("orders"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := env.Encode()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ob.WriteEnvelope(ctx, tx, env, []byte("k1"), map[string]string{"x-tenant": "t1"}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		write(t, db, ob, false, outbox.Message{Queue: "orders", Body: []byte(`{"rolled":"back"}`)})
		s := &recordingSender{}
		drain(t, newRelay(t, db, ob, s))
		if len(s.got) != 1 {
			t.Fatalf("%d sent, want 1 (the rolled-back row must not exist)", len(s.got))
		}
		g := s.got[0]
		if g.queue != "orders" || string(g.key) != "k1" || !bytes.Equal(g.body, body) || g.headers["x-tenant"] != "t1" {
			t.Fatalf("sent %q %q %s %v; want orders, k1, the encoded envelope, the header", g.queue, g.key, g.body, g.headers)
		}
		back, err := babelqueue.Decode(g.body)
		if err != nil || back.Meta.CreatedAt != env.Meta.CreatedAt || back.Meta.ID != env.Meta.ID {
			t.Fatalf("decoded %+v (%v): meta must be kept", back, err)
		}
		st, err := ob.Stats(ctx, db)
		if err != nil || st.Pending != 0 {
			t.Fatalf("stats %+v (%v)", st, err)
		}
		var left int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+ob.Table()).Scan(&left); err != nil || left != 0 {
			t.Fatalf("%d rows left (%v): a published row is deleted", left, err)
		}
	})
	for kind, wrap := range senderKinds {
		t.Run(kind, func(t *testing.T) { runRelayTests(t, db, d, wrap) })
	}
	t.Run("TransportSender", func(t *testing.T) {
		ob := newOutbox(t, db, d)
		env, _ := babelqueue.Make("urn:x", map[string]any{"a": 1}, babelqueue.WithQueue("q"))
		body, _ := env.Encode()
		write(t, db, ob, true, outbox.Message{Queue: "q", Key: []byte("k"), Body: body, Headers: map[string]string{"h": "v"}})
		tr := bqtest.NewInMemoryTransport()
		drain(t, newRelay(t, db, ob, outbox.TransportSender{Transport: tr}))
		got := tr.Messages("q")
		if len(got) != 1 || got[0].Body != string(body) || string(got[0].Key) != "k" || got[0].Headers["h"] != "v" {
			t.Fatalf("transport got %+v", got)
		}
	})
}

// runRelayTests is the relay's behaviour with a sender of each kind.
func runRelayTests(t *testing.T, db *sql.DB, d outbox.Dialect, wrap func(*recordingSender) outbox.Sender) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, *sql.DB, outbox.Dialect, func(*recordingSender) outbox.Sender)
	}{
		{"FailureRetriedWithBackoffAndOrderKept", testFailureRetriedWithBackoffAndOrderKept},
		{"FailedHeadHoldsBackItsKeyOnly", testFailedHeadHoldsBackItsKeyOnly},
		{"AClaimSendsAKeysRowsInRounds", testAClaimSendsAKeysRowsInRounds},
		{"AFailedRoundHoldsBackTheLaterOnes", testAFailedRoundHoldsBackTheLaterOnes},
		{"ConcurrentRelaysNoDuplicateAndOrder", testConcurrentRelaysNoDuplicateAndOrder},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, db, d, wrap) })
	}
}

// keyRows writes rows a0 b0 a1 b1 ... of keys a and b, n of each.
func keyRows(t *testing.T, db *sql.DB, ob *outbox.Outbox, n int) {
	var msgs []outbox.Message
	for i := range n {
		for _, k := range []string{"a", "b"} {
			msgs = append(msgs, outbox.Message{Queue: "q", Key: []byte(k), Body: []byte(k + strconv.Itoa(i))})
		}
	}
	write(t, db, ob, true, msgs...)
}

func testFailureRetriedWithBackoffAndOrderKept(t *testing.T, db *sql.DB, d outbox.Dialect, wrap func(*recordingSender) outbox.Sender) {
	ctx := context.Background()
	ob := newOutbox(t, db, d)
	var msgs []outbox.Message
	for i := range 30 {
		msgs = append(msgs, outbox.Message{Queue: "q", Key: []byte("k" + strconv.Itoa(i%3)), Body: []byte(strconv.Itoa(i))})
	}
	write(t, db, ob, true, msgs...)
	fails := map[string]int{"1": 2, "10": 1}
	s := &recordingSender{fail: func(body []byte) error {
		if fails[string(body)] > 0 {
			fails[string(body)]--
			return errors.New("broker said no")
		}
		return nil
	}}
	r := newRelay(t, db, ob, wrap(s), outbox.WithBackoff(time.Millisecond, 5*time.Millisecond), outbox.WithBatchSize(7))
	n, err := r.RunOnce(ctx)
	if err != nil || n == 0 {
		t.Fatalf("first pass: %d, %v", n, err)
	}
	st, err := ob.Stats(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if st.Failing != 1 || st.Attempts != 1 || st.LastError == "" {
		t.Fatalf("after a failed send: %+v, want one failing row with its error", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err = ob.Stats(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending == 0 || time.Now().After(deadline) {
			break
		}
		if _, err := r.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if st.Pending != 0 || len(s.got) != 30 {
		t.Fatalf("pending %d, sent %d; want 0 and 30", st.Pending, len(s.got))
	}
	last := map[string]int{}
	for _, g := range s.got {
		i, _ := strconv.Atoi(string(g.body))
		if p, ok := last[string(g.key)]; ok && i < p {
			t.Fatalf("key %s: %d sent after %d", g.key, i, p)
		}
		last[string(g.key)] = i
	}
}

func testFailedHeadHoldsBackItsKeyOnly(t *testing.T, db *sql.DB, d outbox.Dialect, wrap func(*recordingSender) outbox.Sender) {
	ctx := context.Background()
	ob := newOutbox(t, db, d)
	write(t, db, ob, true,
		outbox.Message{Queue: "q", Key: []byte("a"), Body: []byte("a0")},
		outbox.Message{Queue: "q", Key: []byte("b"), Body: []byte("b0")},
		outbox.Message{Queue: "q", Key: []byte("a"), Body: []byte("a1")},
		outbox.Message{Queue: "q", Key: []byte("b"), Body: []byte("b1")})
	s := &recordingSender{fail: func(body []byte) error {
		if string(body) == "a0" {
			return errors.New("broker said no")
		}
		return nil
	}}
	r := newRelay(t, db, ob, wrap(s), outbox.WithBackoff(time.Hour, time.Hour))
	drain(t, r)
	var got []string
	for _, g := range s.got {
		got = append(got, string(g.body))
	}
	if fmt.Sprint(got) != "[b0 b1]" {
		t.Fatalf("sent %v, want [b0 b1]: a1 must wait behind a0, which waits out its backoff", got)
	}
	st, err := ob.Stats(ctx, db)
	if err != nil || st.Pending != 2 || st.Failing != 1 || st.LastError == "" {
		t.Fatalf("stats %+v (%v), want 2 pending, 1 failing", st, err)
	}
}

func testAClaimSendsAKeysRowsInRounds(t *testing.T, db *sql.DB, d outbox.Dialect, wrap func(*recordingSender) outbox.Sender) {
	ctx := context.Background()
	ob := newOutbox(t, db, d)
	keyRows(t, db, ob, 3)
	s := &recordingSender{}
	sender := wrap(s)
	r := newRelay(t, db, ob, sender)
	n, err := r.RunOnce(ctx)
	// PostgreSQL: every row in one claim; SQLite: each key's head.
	want := 6
	if d == outbox.SQLite {
		want = 2
	}
	if err != nil || n != want {
		t.Fatalf("first claim: %d rows (%v), want %d", n, err, want)
	}
	drain(t, r)
	got := bodiesOf(s)
	slices.Sort(got)
	if fmt.Sprint(got) != "[a0 a1 a2 b0 b1 b2]" {
		t.Fatalf("sent %v, want every row once", got)
	}
	next := map[byte]int{}
	for _, b := range bodiesOf(s) {
		if i := int(b[1] - '0'); i != next[b[0]] {
			t.Fatalf("sent %v: %s out of its key's order", bodiesOf(s), b)
		}
		next[b[0]]++
	}
	if bs, ok := sender.(*batchingSender); ok && fmt.Sprint(bs.calls) != "[2 2 2]" {
		t.Fatalf("SendBatch calls of %v rows, want [2 2 2]: one row a key in each", bs.calls)
	}
}

func testAFailedRoundHoldsBackTheLaterOnes(t *testing.T, db *sql.DB, d outbox.Dialect, wrap func(*recordingSender) outbox.Sender) {
	ctx := context.Background()
	ob := newOutbox(t, db, d)
	keyRows(t, db, ob, 3)
	s := &recordingSender{fail: func(body []byte) error {
		if string(body) == "a1" {
			return errors.New("broker said no")
		}
		return nil
	}}
	r := newRelay(t, db, ob, wrap(s), outbox.WithBackoff(time.Hour, time.Hour))
	if _, err := r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got := bodiesOf(s)
	slices.Sort(got)
	// PostgreSQL: a1 fails in the second round, b1 beside it is
	// acknowledged, and the third round (a2, b2) is not sent.
	want := "[a0 b0 b1]"
	if d == outbox.SQLite {
		want = "[a0 b0]"
	}
	if fmt.Sprint(got) != want {
		t.Fatalf("first claim sent %v, want %v", got, want)
	}
	drain(t, r)
	got = bodiesOf(s)
	slices.Sort(got)
	if fmt.Sprint(got) != "[a0 b0 b1 b2]" {
		t.Fatalf("sent %v, want [a0 b0 b1 b2]: a2 waits behind a1", got)
	}
	// The rows held back count no attempt: a1's is the only one.
	st, err := ob.Stats(ctx, db)
	if err != nil || st.Pending != 2 || st.Failing != 1 || st.Attempts != 1 {
		t.Fatalf("stats %+v (%v), want 2 pending, 1 failing, 1 attempt", st, err)
	}
}

func testConcurrentRelaysNoDuplicateAndOrder(t *testing.T, db *sql.DB, d outbox.Dialect, wrap func(*recordingSender) outbox.Sender) {
	ctx := context.Background()
	ob := newOutbox(t, db, d)
	const rows = 600
	var msgs []outbox.Message
	for i := range rows {
		msgs = append(msgs, outbox.Message{Queue: "q", Key: []byte("k" + strconv.Itoa(i%20)), Body: []byte(strconv.Itoa(i))})
	}
	write(t, db, ob, true, msgs...)
	s := &recordingSender{}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 4 {
		r := newRelay(t, db, ob, wrap(s), outbox.WithBatchSize(25), outbox.WithPoll(5*time.Millisecond), outbox.WithRelayID("r"+strconv.Itoa(i)))
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(rctx) }()
	}
	// The bound is generous: with the race detector on a busy host
	// (three spinning processes on two cores) one run took 22-32 s.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		st, err := ob.Stats(ctx, db)
		if err == nil && st.Pending == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	onceInKeyOrder(t, s, rows)
}

// onceInKeyOrder checks that s published rows 0..n-1 (each with body
// "<i>", of any key) once each, every key's rows in the order of i.
func onceInKeyOrder(t *testing.T, s *recordingSender, n int) {
	t.Helper()
	seen := map[string]bool{}
	last := map[string]int{}
	for _, g := range s.got {
		if seen[string(g.body)] {
			t.Fatalf("row %s published twice", g.body)
		}
		seen[string(g.body)] = true
		i, _ := strconv.Atoi(string(g.body))
		if p, ok := last[string(g.key)]; ok && i < p {
			t.Fatalf("key %s: row %d published after row %d", g.key, i, p)
		}
		last[string(g.key)] = i
	}
	if len(seen) != n {
		t.Fatalf("%d rows published, want %d", len(seen), n)
	}
}
