//go:build integration

package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/outbox"
)

// TestPostgresFloorsWaitForALateCommit holds a transaction open after it
// wrote a row of key k, while the relay publishes later rows of another
// key: the relay's floors must not rise past the open row, which is
// published once committed, before the next row of its key.
func TestPostgresFloorsWaitForALateCommit(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	ob := newOutbox(t, db, outbox.Postgres)
	s := &recordingSender{}
	r := newRelay(t, db, ob, s)
	publishAroundALateRow(t, db, ob, r, s, func(late *sql.Tx) (finish func()) {
		if _, err := ob.Write(ctx, late, floorMsg("k", "k1")); err != nil {
			t.Fatal(err)
		}
		return func() {}
	})
	nonePending(t, db, ob)
	// Meanwhile the floors did rise, once the late transaction ended.
	if r.ClaimsThroughPgx() && slices.Max(r.Floors()) == 0 {
		t.Fatalf("floors %v, want some raised", r.Floors())
	}
}

func floorMsg(key, body string) outbox.Message {
	return outbox.Message{Queue: "q", Key: []byte(key), Body: []byte(body)}
}

// publishAroundALateRow writes j1, opens a transaction in which open puts
// row k1 (of key k), has the relay publish j1-j6 while it stays open (the
// relay's first claim reads j1 while the open transaction holds the
// newest transaction id, or none yet: no snapshot lists it as running),
// then calls the finish open returned, commits, writes k2 and checks that
// k1 and then k2 were published.
func publishAroundALateRow(t *testing.T, db *sql.DB, ob *outbox.Outbox, r *outbox.Relay, s *recordingSender, open func(late *sql.Tx) (finish func())) {
	t.Helper()
	write(t, db, ob, true, floorMsg("j", "j1"))
	late, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback()
	finish := open(late)
	drain(t, r)
	for _, b := range []string{"j2", "j3", "j4", "j5", "j6"} {
		write(t, db, ob, true, floorMsg("j", b))
		drain(t, r)
	}
	if got := bodiesOf(s); !slices.Equal(got, []string{"j1", "j2", "j3", "j4", "j5", "j6"}) {
		t.Fatalf("sent %v, want j1-j6", got)
	}
	finish()
	if err := late.Commit(); err != nil {
		t.Fatal(err)
	}
	write(t, db, ob, true, floorMsg("k", "k2"))
	drain(t, r)
	if got := bodiesOf(s)[6:]; !slices.Equal(got, []string{"k1", "k2"}) {
		t.Fatalf("after the late commit sent %v, want k1 then k2", got)
	}
}

// TestPostgresFloorsWaitForAPlainInsert holds a plain INSERT, not Write,
// after it took its id from the column's default and before it stored its
// row (a BEFORE trigger waits for a lock the test holds), while the relay
// publishes later rows of another key: the row is published once its
// transaction commits, before the next row of its key. With the default
// Migrate sets, the transaction took its id first and the floors wait for
// it; with the default set back to the sequence alone (a table of an
// earlier version) the claims use no floor.
func TestPostgresFloorsWaitForAPlainInsert(t *testing.T) {
	for _, name := range []string{"migrated default", "sequence alone"} {
		t.Run(name, func(t *testing.T) {
			db, _ := brokertest.Postgres(t)
			ctx := context.Background()
			ob := newOutbox(t, db, outbox.Postgres)
			exec := func(q string) {
				t.Helper()
				if _, err := db.ExecContext(ctx, strings.ReplaceAll(q, "{t}", ob.Table())); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if name == "sequence alone" {
				exec(`ALTER TABLE {t} ALTER COLUMN id SET DEFAULT nextval('{t}_id_seq')`)
			}
			if ok, err := outbox.IDDefaultTakesXidFirst(ctx, db, ob); err != nil || ok != (name == "migrated default") {
				t.Fatalf("id default takes the transaction id first: %v (%v)", ok, err)
			}
			exec(`CREATE FUNCTION {t}_wait() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$`)
			exec(`CREATE TRIGGER {t}_wait BEFORE INSERT ON {t} FOR EACH ROW WHEN (NEW.order_key = 'k:k') EXECUTE FUNCTION {t}_wait()`)
			t.Cleanup(func() { _, _ = db.ExecContext(ctx, "DROP FUNCTION "+ob.Table()+"_wait() CASCADE") })
			hold, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close()
			if _, err := hold.ExecContext(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
				t.Fatal(err)
			}
			s := &recordingSender{}
			r := newRelay(t, db, ob, s)
			publishAroundALateRow(t, db, ob, r, s, func(late *sql.Tx) (finish func()) {
				inserted := make(chan error, 1)
				go func() {
					_, err := late.ExecContext(ctx, strings.ReplaceAll(`INSERT INTO {t} (queue, msg_key, order_key, body, headers, created_at)
VALUES ('q', 'k', 'k:k', 'k1', '{}', 0)`, "{t}", ob.Table()))
					inserted <- err
				}()
				// The insert took its id and waits in its trigger.
				for deadline := time.Now().Add(10 * time.Second); ; {
					var waiting bool
					if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event = 'advisory' AND query LIKE 'INSERT INTO %')`).Scan(&waiting); err != nil {
						t.Fatal(err)
					}
					if waiting {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the insert did not reach its trigger in 10 s")
					}
					time.Sleep(5 * time.Millisecond)
				}
				return func() {
					if _, err := hold.ExecContext(ctx, `SELECT pg_advisory_unlock(4242)`); err != nil {
						t.Fatal(err)
					}
					if err := <-inserted; err != nil {
						t.Fatal(err)
					}
				}
			})
			// Migrate sets the default back.
			if err := ob.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			if ok, err := outbox.IDDefaultTakesXidFirst(ctx, db, ob); err != nil || !ok {
				t.Fatalf("after Migrate the id default takes the transaction id first: %v (%v)", ok, err)
			}
		})
	}
}

// TestPostgresFloorsFollowASequenceRestart restarts the table's id
// sequence once the relay's floors rose: rows written after it (ids from
// 1 again) are published.
func TestPostgresFloorsFollowASequenceRestart(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	ob := newOutbox(t, db, outbox.Postgres)
	s := &recordingSender{}
	r := newRelay(t, db, ob, s)
	for i := range 4 {
		write(t, db, ob, true, outbox.Message{Queue: "q", Key: []byte{'a' + byte(i)}, Body: []byte{'0' + byte(i)}})
		drain(t, r)
	}
	if !r.ClaimsThroughPgx() || slices.Max(r.Floors()) == 0 {
		t.Fatalf("floors %v (through pgx: %v), want some raised", r.Floors(), r.ClaimsThroughPgx())
	}
	if _, err := db.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+ob.Table()+`', 'id'), 1, false)`); err != nil {
		t.Fatal(err)
	}
	write(t, db, ob, true, outbox.Message{Queue: "q", Key: []byte("x"), Body: []byte("x")}, outbox.Message{Queue: "q", Key: []byte("y"), Body: []byte("y")})
	drain(t, r)
	got := bodiesOf(s)[4:]
	slices.Sort(got) // different keys: sent in any order
	if !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("after the restart sent %v, want x and y", got)
	}
}

// TestPostgresFloorsWaitForAFailedRow fails a row once, then publishes
// rows of another key while it waits out its backoff (claims that pass
// its key over): the floors must not rise past it, and it and the next row
// of its key go once it is due, in order. The outbox's clock is a fake
// one, moved past the backoff by the test.
func TestPostgresFloorsWaitForAFailedRow(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	clock := bqtest.NewFakeClock(time.Now())
	ob := newOutbox(t, db, outbox.Postgres, outbox.WithClock(clock))
	refused := false
	s := &recordingSender{fail: func(body []byte) error {
		if string(body) == "k1" && !refused {
			refused = true
			return errors.New("refused once")
		}
		return nil
	}}
	const backoff = time.Hour
	r := newRelay(t, db, ob, s, outbox.WithBackoff(backoff, backoff))
	write(t, db, ob, true, floorMsg("k", "k1"), floorMsg("k", "k2"))
	drain(t, r)
	for _, b := range []string{"j1", "j2", "j3", "j4", "j5"} {
		write(t, db, ob, true, floorMsg("j", b))
		drain(t, r)
	}
	if got := bodiesOf(s); !slices.Equal(got, []string{"j1", "j2", "j3", "j4", "j5"}) {
		t.Fatalf("sent %v while k1 waits, want j1-j5", got)
	}
	clock.Advance(backoff + time.Millisecond)
	drain(t, r)
	if got := bodiesOf(s)[5:]; !slices.Equal(got, []string{"k1", "k2"}) {
		t.Fatalf("once k1 was due sent %v, want k1 then k2", got)
	}
	nonePending(t, db, ob)
}

// nonePending fails t unless ob's table holds no pending row.
func nonePending(t *testing.T, db *sql.DB, ob *outbox.Outbox) {
	t.Helper()
	if st, err := ob.Stats(context.Background(), db); err != nil || st.Pending != 0 {
		t.Fatalf("stats %+v (%v), want none pending", st, err)
	}
}

// movingSender is a recordingSender that, the first time it is to send
// body, updates that row of ob's table (outside the relay), which moves it
// to a new ctid; moved reports whether it did.
func movingSender(t *testing.T, db *sql.DB, ob *outbox.Outbox, body string) (s *recordingSender, moved func() bool) {
	var done atomic.Bool
	s = &recordingSender{fail: func(b []byte) error {
		if string(b) == body && done.CompareAndSwap(false, true) {
			if _, err := db.Exec(`UPDATE `+ob.Table()+` SET last_error = 'moved' WHERE body = $1::bytea`, b); err != nil {
				t.Error(err)
			}
		}
		return nil
	}}
	return s, done.Load
}

// TestPostgresFloorsDropWhenARowMoves updates a row (outside the relay)
// while the relay sends it: the deletion by its old ctid finds nothing,
// so the row stays pending and the floors, which would pass it, drop; it
// is sent again.
func TestPostgresFloorsDropWhenARowMoves(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ob := newOutbox(t, db, outbox.Postgres)
	s, moved := movingSender(t, db, ob, "k2")
	r := newRelay(t, db, ob, s)
	// k1 goes first (its key's head); the claim that sends k2 reads with
	// the first claim's probe, which covers k2.
	write(t, db, ob, true, outbox.Message{Queue: "q", Key: []byte("k"), Body: []byte("k1")}, outbox.Message{Queue: "q", Key: []byte("k"), Body: []byte("k2")})
	drain(t, r)
	if !moved() {
		t.Fatal("k2 was not sent")
	}
	if got := bodiesOf(s); !slices.Equal(got, []string{"k1", "k2", "k2"}) {
		t.Fatalf("sent %v, want k1, then k2 twice (once more after it moved)", got)
	}
	nonePending(t, db, ob)
}

// TestPostgresFloorsBehindAMovedRow has one worker claim k1 and read k2
// (of one key), with a horizon past both, and the test update k1 while it
// is sent: the deletion finds nothing, so k1 stays pending, below the
// floor the settlement would raise. The claim that rode with that
// settlement started past the raised floor and found k2; it must be
// rolled back unsent, so that k1 goes again before k2.
func TestPostgresFloorsBehindAMovedRow(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	ob := newOutbox(t, db, outbox.Postgres)
	s, moved := movingSender(t, db, ob, "k1")
	r := newRelay(t, db, ob, s, outbox.WithPoll(5*time.Millisecond))
	k1AndK2BelowAHorizon(t, db, ob, r)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.RunOneWorker(rctx) }()
	for len(bodiesOf(s)) < 4 && rctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if !moved() {
		t.Fatal("k1 was not sent")
	}
	if got := bodiesOf(s); !slices.Equal(got, []string{"a", "k1", "k1", "k2"}) {
		t.Fatalf("sent %v, want a, then k1 twice (once more after it moved), then k2", got)
	}
	nonePending(t, db, ob)
}

// k1AndK2BelowAHorizon writes k1 and k2 (key k) in a transaction that
// takes their ids and stays open while r publishes a (its claim reads the
// id sequence past them), then commits it: r's next claim has a horizon
// past both.
func k1AndK2BelowAHorizon(t *testing.T, db *sql.DB, ob *outbox.Outbox, r *outbox.Relay) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, b := range []string{"k1", "k2"} {
		if _, err := ob.Write(ctx, tx, floorMsg("k", b)); err != nil {
			t.Fatal(err)
		}
	}
	write(t, db, ob, true, floorMsg("a", "a"))
	drain(t, r)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresFloorsEndAfterTheirLifetime inserts a row with an explicit
// id below the relay's floors (bypassing the id column's default, as a
// copy by hand would): the claims pass it over while the floors last, and
// it is published once their lifetime ended. The outbox's clock is a fake
// one, moved by the test.
func TestPostgresFloorsEndAfterTheirLifetime(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	clock := bqtest.NewFakeClock(time.Now())
	ob := newOutbox(t, db, outbox.Postgres, outbox.WithClock(clock))
	s := &recordingSender{}
	r := newRelay(t, db, ob, s)
	for _, b := range []string{"a", "b", "c", "d"} {
		write(t, db, ob, true, floorMsg(b, b))
		drain(t, r)
	}
	if !r.ClaimsThroughPgx() || slices.Min(r.Floors()) < 1 {
		t.Fatalf("floors %v (through pgx: %v), want every bucket's at 1 or above", r.Floors(), r.ClaimsThroughPgx())
	}
	// Id 1 was a's row, deleted; its id comes back, given by hand.
	if _, err := db.ExecContext(ctx, `INSERT INTO `+ob.Table()+` (id, queue, msg_key, order_key, body, headers, created_at, next_attempt_at)
VALUES (1, 'q', 'x', 'x', 'x', 'null', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	clock.Advance(outbox.FloorLifetime - time.Millisecond)
	drain(t, r)
	if got := bodiesOf(s); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("sent %v while the floors last, want a-d alone (the floors pass the row over)", got)
	}
	clock.Advance(time.Millisecond)
	drain(t, r)
	if got := bodiesOf(s)[4:]; !slices.Equal(got, []string{"x"}) {
		t.Fatalf("once the floors' lifetime ended sent %v, want x", got)
	}
	nonePending(t, db, ob)
}
