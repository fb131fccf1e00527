//go:build integration

package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/outbox"
)

// runUntilDrained runs relays until ob has no pending row (at most
// bound), then stops them.
func runUntilDrained(t *testing.T, db *sql.DB, ob *outbox.Outbox, bound time.Duration, relays ...*outbox.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range relays {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	for deadline := time.Now().Add(bound); ; time.Sleep(10 * time.Millisecond) {
		st, err := ob.Stats(context.Background(), db)
		if err == nil && st.Pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rows still pending after %v: %+v (%v)", bound, st, err)
		}
	}
}

// keyedRows writes n rows, row i of key "k<i % keys>" with body "<i>".
func keyedRows(t *testing.T, db *sql.DB, ob *outbox.Outbox, n, keys int) {
	t.Helper()
	for i := 0; i < n; i += 500 {
		var msgs []outbox.Message
		for j := i; j < min(i+500, n); j++ {
			msgs = append(msgs, outbox.Message{Queue: "q", Key: []byte("k" + strconv.Itoa(j%keys)), Body: []byte(strconv.Itoa(j))})
		}
		write(t, db, ob, true, msgs...)
	}
}

func claimsAhead(relays []*outbox.Relay) (n int64) {
	for _, r := range relays {
		n += r.ClaimsAhead()
	}
	return n
}

// TestPostgresClaimAheadEachRowOnceInOrder drains 3,500 rows of 70 keys
// with claims of 50 rows made ahead (so each claim holds 50 keys, about
// half of them keys of the claim before it, whose rows go only once that
// claim's deletion is known), by one relay and by three at once: every
// row is published once, each key's rows in order.
func TestPostgresClaimAheadEachRowOnceInOrder(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d relays", n), func(t *testing.T) {
			const rows, keys = 3500, 70
			ob := newOutbox(t, db, outbox.Postgres)
			keyedRows(t, db, ob, rows, keys)
			s := &recordingSender{}
			var relays []*outbox.Relay
			for i := range n {
				relays = append(relays, newRelay(t, db, ob, &batchingSender{recordingSender: s}, outbox.WithBatchSize(50), outbox.WithInFlight(1),
					outbox.WithClaimAhead(4), outbox.WithPoll(5*time.Millisecond), outbox.WithRelayID("r"+strconv.Itoa(i))))
			}
			runUntilDrained(t, db, ob, time.Minute, relays...)
			onceInKeyOrder(t, s, rows)
			if claimsAhead(relays) == 0 {
				t.Fatal("no claim was made ahead")
			}
		})
	}
}

// TestPostgresClaimAheadHoldsBackAFailedKey fails row 40 (key k0) once,
// in a run whose claims of 5 rows of 8 keys are made ahead: the claim
// ahead of row 40's holds k0's next row (48), which must wait for row
// 40's retry, and k1's (49), which goes once row 41 is deleted.
func TestPostgresClaimAheadHoldsBackAFailedKey(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	const rows, keys = 200, 8
	ob := newOutbox(t, db, outbox.Postgres)
	keyedRows(t, db, ob, rows, keys)
	var failures atomic.Int32
	s := &recordingSender{fail: func(b []byte) error {
		if string(b) == "40" && failures.Add(1) == 1 {
			return errors.New("refused once")
		}
		return nil
	}}
	r := newRelay(t, db, ob, &batchingSender{recordingSender: s}, outbox.WithBatchSize(5), outbox.WithInFlight(1),
		outbox.WithClaimAhead(100), outbox.WithBackoff(10*time.Millisecond, 10*time.Millisecond), outbox.WithPoll(5*time.Millisecond))
	// Well within the floors' lifetime (30 s): floors raised past row 40
	// while it waits would pass it over that long.
	runUntilDrained(t, db, ob, 10*time.Second, r)
	onceInKeyOrder(t, s, rows)
	if failures.Load() < 2 {
		t.Fatalf("row 40 was tried %d times, want a failure and a retry", failures.Load())
	}
	if r.ClaimsAhead() == 0 {
		t.Fatal("no claim was made ahead")
	}
}

// TestPostgresClaimAheadBehindAMovedRow has the relay claim k1 and, ahead
// of it, k2 (of one key), with a horizon past both, and the test update k1
// while it is sent: the deletion finds nothing, so k1 stays pending and
// k2, claimed ahead, must not be sent before k1 goes again.
func TestPostgresClaimAheadBehindAMovedRow(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ob := newOutbox(t, db, outbox.Postgres)
	s, moved := movingSender(t, db, ob, "k1")
	r := newRelay(t, db, ob, s, outbox.WithBatchSize(1), outbox.WithInFlight(1), outbox.WithClaimAhead(4), outbox.WithPoll(5*time.Millisecond))
	k1AndK2BelowAHorizon(t, db, ob, r)
	runUntilDrained(t, db, ob, 10*time.Second, r)
	if !moved() {
		t.Fatal("k1 was not sent")
	}
	if got := bodiesOf(s); !slices.Equal(got, []string{"a", "k1", "k1", "k2"}) {
		t.Fatalf("sent %v, want a, then k1 twice (once more after it moved), then k2", got)
	}
	if r.ClaimsAhead() == 0 {
		t.Fatal("k2 was not claimed ahead")
	}
}

// stoppingSender is a batchingSender that ends the relay's context once
// it has sent at least after messages.
type stoppingSender struct {
	*batchingSender
	after int
	sent  atomic.Int64
	stop  context.CancelFunc
}

func (s *stoppingSender) SendBatch(ctx context.Context, msgs []outbox.Message) []error {
	errs := s.batchingSender.SendBatch(ctx, msgs)
	if s.sent.Add(int64(len(msgs))) >= int64(s.after) {
		s.stop()
	}
	return errs
}

// TestPostgresClaimAheadStopsClean ends Run in the middle of a run of
// claims made ahead: what was sent is deleted and what was not stays
// pending (claims ahead not yet sent included), with no row both; a
// second run publishes the rest, each row once overall, keys in order.
func TestPostgresClaimAheadStopsClean(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	const rows, keys = 2000, 70
	ob := newOutbox(t, db, outbox.Postgres)
	keyedRows(t, db, ob, rows, keys)
	rec := &recordingSender{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &stoppingSender{batchingSender: &batchingSender{recordingSender: rec}, after: 600, stop: cancel}
	opts := []outbox.RelayOption{outbox.WithBatchSize(50), outbox.WithInFlight(1), outbox.WithClaimAhead(16), outbox.WithPoll(5 * time.Millisecond)}
	r := newRelay(t, db, ob, s, opts...)
	if err := r.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if r.ClaimsAhead() == 0 {
		t.Fatal("no claim was made ahead before the stop")
	}
	published := map[string]bool{}
	for _, b := range bodiesOf(rec) {
		published[b] = true
	}
	res, err := db.Query("SELECT convert_from(body, 'UTF8') FROM " + ob.Table())
	if err != nil {
		t.Fatal(err)
	}
	pending := 0
	for res.Next() {
		var b string
		if err := res.Scan(&b); err != nil {
			t.Fatal(err)
		}
		if published[b] {
			t.Fatalf("row %s was published and is still pending after a clean stop", b)
		}
		pending++
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if len(published) < 600 || len(published)+pending != rows {
		t.Fatalf("%d published and %d pending after the stop, want at least 600 and %d in all", len(published), pending, rows)
	}
	runUntilDrained(t, db, ob, time.Minute, newRelay(t, db, ob, &batchingSender{recordingSender: rec}, opts...))
	onceInKeyOrder(t, rec, rows)
}

// TestPostgresClaimAheadNeedsTheXidFirstDefault drains a table whose id
// default takes the id alone (as before Migrate set it, or changed by
// hand): the horizons that allow a claim ahead rest on the default taking
// the transaction id first, so no claim ahead finds a row, and the rows
// are published as without the option.
func TestPostgresClaimAheadNeedsTheXidFirstDefault(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	const rows, keys = 1000, 70
	ob := newOutbox(t, db, outbox.Postgres)
	if _, err := db.ExecContext(ctx, `ALTER TABLE `+ob.Table()+` ALTER COLUMN id SET DEFAULT nextval('`+ob.Table()+`_id_seq')`); err != nil {
		t.Fatal(err)
	}
	keyedRows(t, db, ob, rows, keys)
	s := &recordingSender{}
	r := newRelay(t, db, ob, &batchingSender{recordingSender: s}, outbox.WithBatchSize(50), outbox.WithInFlight(1), outbox.WithClaimAhead(8),
		outbox.WithPoll(5*time.Millisecond))
	runUntilDrained(t, db, ob, time.Minute, r)
	onceInKeyOrder(t, s, rows)
	if n := r.ClaimsAhead(); n != 0 {
		t.Fatalf("%d claims ahead found rows on a table whose id default takes the id alone, want none", n)
	}
}
