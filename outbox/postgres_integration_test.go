//go:build integration

package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/outbox"
)

func TestPostgres(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	runOutboxTests(t, db, outbox.Postgres)
}

// TestPostgresSimpleProtocol is TestPostgres with pgx in its simple
// protocol: every column and parameter in text format.
func TestPostgresSimpleProtocol(t *testing.T) {
	runOutboxTests(t, brokertest.PostgresWith(t, "default_query_exec_mode", "simple_protocol"), outbox.Postgres)
}

// TestPostgresEachRowToItsQueue checks that a claim of rows of several
// queues sends each row to its own queue.
func TestPostgresEachRowToItsQueue(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ob := newOutbox(t, db, outbox.Postgres)
	write(t, db, ob, true, outbox.Message{Queue: "q", Body: []byte("b")}, outbox.Message{Queue: "q2", Body: []byte("c")},
		outbox.Message{Queue: "q", Body: []byte("d")})
	s := &recordingSender{}
	r := newRelay(t, db, ob, s)
	if n, err := r.RunOnce(context.Background()); err != nil || n != 3 || len(s.got) != 3 {
		t.Fatalf("RunOnce: %d, %v, sent %d; want 3 rows", n, err, len(s.got))
	}
	for _, g := range s.got {
		if want := map[string]string{"b": "q", "c": "q2", "d": "q"}[string(g.body)]; g.queue != want {
			t.Fatalf("row %s sent to %q, want %q", g.body, g.queue, want)
		}
	}
}

// TestPostgresFailedDeletionRollsBack makes the deletion of published rows
// fail (a trigger): the outcome is rolled back, the rows stay pending, no
// connection is left in use, and once the deletion works again the rows
// are published again and deleted.
func TestPostgresFailedDeletionRollsBack(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	ob := newOutbox(t, db, outbox.Postgres)
	fn := ob.Table() + "_no_delete"
	for _, q := range []string{
		`CREATE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no deletion'; END $$`,
		`CREATE TRIGGER ` + fn + ` BEFORE DELETE ON ` + ob.Table() + ` FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = db.ExecContext(ctx, `DROP FUNCTION IF EXISTS `+fn+`() CASCADE`) })
	write(t, db, ob, true, outbox.Message{Queue: "q", Key: []byte("a"), Body: []byte("a0")}, outbox.Message{Queue: "q", Key: []byte("b"), Body: []byte("b0")})
	s := &recordingSender{}
	r := newRelay(t, db, ob, s)
	if _, err := r.RunOnce(ctx); err == nil || !strings.Contains(err.Error(), "no deletion") {
		t.Fatalf("RunOnce with the deletion failing: %v, want its error", err)
	}
	if st, err := ob.Stats(ctx, db); err != nil || st.Pending != 2 || st.Failing != 0 {
		t.Fatalf("stats %+v (%v), want both rows pending, none failing", st, err)
	}
	if in := db.Stats().InUse; in != 0 {
		t.Fatalf("%d connections in use after the claim, want 0", in)
	}
	if _, err := db.ExecContext(ctx, `DROP TRIGGER `+fn+` ON `+ob.Table()); err != nil {
		t.Fatal(err)
	}
	drain(t, r)
	if st, err := ob.Stats(ctx, db); err != nil || st.Pending != 0 || len(s.got) != 4 {
		t.Fatalf("stats %+v (%v), sent %d; want none pending, each row sent twice", st, err, len(s.got))
	}
}

// TestPostgresMigrateReplacesTheIDIndex migrates a table of an earlier
// version (its pending rows indexed by id alone): Migrate adds the index
// of the id and the key bucket, drops the old one, and the claim's plan
// scans the new one with the bucket range as an index condition.
func TestPostgresMigrateReplacesTheIDIndex(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	ob := newOutbox(t, db, outbox.Postgres)
	for _, q := range []string{
		`DROP INDEX ` + ob.Table() + `_pending_bucket`,
		`CREATE INDEX ` + ob.Table() + `_pending_id ON ` + ob.Table() + ` (id) WHERE published_at IS NULL`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := ob.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var names []string
	res, err := db.QueryContext(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname`, ob.Table())
	if err != nil {
		t.Fatal(err)
	}
	for res.Next() {
		var n string
		if err := res.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.TrimPrefix(n, ob.Table()))
	}
	if got, want := strings.Join(names, " "), "_pending _pending_bucket _pkey _retry"; got != want {
		t.Fatalf("indexes %q, want %q", got, want)
	}
	res, err = db.QueryContext(ctx, `EXPLAIN SELECT id FROM `+ob.Table()+` o WHERE published_at IS NULL
  AND (hashtext(o.order_key) & 63) >= 16 AND (hashtext(o.order_key) & 63) <= 31 ORDER BY id LIMIT 500`)
	if err != nil {
		t.Fatal(err)
	}
	var plan string
	for res.Next() {
		var line string
		if err := res.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan += line + "\n"
	}
	if !strings.Contains(plan, "_pending_bucket") || !strings.Contains(plan, "Index Cond") {
		t.Fatalf("plan %q does not scan the bucket index", plan)
	}
}

// TestPostgresClaimPassesOverAHeldBucket holds the advisory lock of one
// key bucket from another session: claims (every free bucket, so a set
// with a hole, whose range spans the held bucket) send every row but
// those of its keys, which go once it is released.
func TestPostgresClaimPassesOverAHeldBucket(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	ob := newOutbox(t, db, outbox.Postgres)
	var msgs []outbox.Message
	for i := range 300 {
		msgs = append(msgs, outbox.Message{Queue: "q", Key: fmt.Appendf(nil, "k%d", i), Body: fmt.Appendf(nil, "b%d", i)})
	}
	write(t, db, ob, true, msgs...)
	const held = 20
	var inHeld int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+ob.Table()+` WHERE (hashtext(order_key) & 63) = $1`, held).Scan(&inHeld); err != nil {
		t.Fatal(err)
	}
	if inHeld == 0 {
		t.Fatalf("no key of the 300 in bucket %d", held)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, outbox.LockNamespace(ob), held); err != nil {
		t.Fatal(err)
	}
	s := &recordingSender{}
	r := newRelay(t, db, ob, s)
	for {
		n, err := r.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if st, err := ob.Stats(ctx, db); err != nil || st.Pending != inHeld || int64(len(s.got)) != 300-inHeld {
		t.Fatalf("with bucket %d held: stats %+v (%v), sent %d; want the %d rows of its keys pending, the rest sent", held, st, err, len(s.got), inHeld)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, outbox.LockNamespace(ob), held); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	drain(t, r)
	if st, err := ob.Stats(ctx, db); err != nil || st.Pending != 0 || len(s.got) != 300 {
		t.Fatalf("after the release: stats %+v (%v), sent %d; want every row sent once", st, err, len(s.got))
	}
}

// cancellingSender is a batchingSender that ends the relay's context once
// its first SendBatch was acknowledged.
type cancellingSender struct {
	*batchingSender
	cancel context.CancelFunc
}

func (c *cancellingSender) SendBatch(ctx context.Context, msgs []outbox.Message) []error {
	errs := c.batchingSender.SendBatch(ctx, msgs)
	c.cancel()
	return errs
}

// TestPostgresStopBetweenRounds: when the relay's context ends after a
// claim's first round was acknowledged, the later rounds are not sent, the
// first round's rows are deleted and the others stay pending, with no
// attempt counted. (RunOnce: one claim of every key bucket, so a and b
// are in it, whatever buckets they hash to.)
func TestPostgresStopBetweenRounds(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ob := newOutbox(t, db, outbox.Postgres)
	var msgs []outbox.Message
	for i := range 3 {
		for _, k := range []string{"a", "b"} {
			msgs = append(msgs, outbox.Message{Queue: "q", Key: []byte(k), Body: []byte(fmt.Sprint(k, i))})
		}
	}
	write(t, db, ob, true, msgs...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &cancellingSender{batchingSender: &batchingSender{recordingSender: &recordingSender{}}, cancel: cancel}
	r := newRelay(t, db, ob, s)
	if n, err := r.RunOnce(ctx); n != 6 || err != nil {
		t.Fatalf("RunOnce: %d rows (%v), want a claim of 6", n, err)
	}
	if fmt.Sprint(s.calls) != "[2]" {
		t.Fatalf("SendBatch calls of %v rows, want [2]: the first round alone", s.calls)
	}
	st, err := ob.Stats(context.Background(), db)
	if err != nil || st.Pending != 4 || st.Attempts != 0 {
		t.Fatalf("stats %+v (%v), want 4 pending (a1 b1 a2 b2), no attempt", st, err)
	}
	var left []string
	rows, err := db.Query("SELECT convert_from(body, 'UTF8') FROM " + ob.Table() + " ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		left = append(left, b)
	}
	if fmt.Sprint(left) != "[a1 b1 a2 b2]" {
		t.Fatalf("rows left %v, want [a1 b1 a2 b2]", left)
	}
}

// TestPostgresRowUpdatedWhileSentIsDeleted updates a claimed row while
// it is being sent (outside the relay, so it gets a new row version): the
// deletion finds it by id, so both rows are sent once, in order, and none
// stays pending.
func TestPostgresRowUpdatedWhileSentIsDeleted(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	ob := newOutbox(t, db, outbox.Postgres)
	write(t, db, ob, true, outbox.Message{Queue: "q", Key: []byte("a"), Body: []byte("a0")}, outbox.Message{Queue: "q", Key: []byte("a"), Body: []byte("a1")})
	updated := false
	s := &recordingSender{fail: func(body []byte) error {
		if updated {
			return nil
		}
		updated = true
		_, err := db.ExecContext(ctx, `UPDATE `+ob.Table()+` SET last_error = 'updated' WHERE convert_from(body, 'UTF8') = 'a0'`)
		return err
	}}
	r := newRelay(t, db, ob, s)
	if n, err := r.RunOnce(ctx); n != 2 || err != nil {
		t.Fatalf("RunOnce with a row updated while sent: %d rows, %v; want 2, nil", n, err)
	}
	if st, err := ob.Stats(ctx, db); err != nil || st.Pending != 0 {
		t.Fatalf("stats %+v (%v), want no row pending", st, err)
	}
	drain(t, r)
	if got := fmt.Sprint(bodiesOf(s)); got != "[a0 a1]" {
		t.Fatalf("sent %v, want [a0 a1]: each row once, in order", got)
	}
}
