package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/idempotency/sqlstore"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

func newStore(t testing.TB, db *sql.DB, d sqlstore.Dialect, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.New(db, d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// runWrapTx checks that the effect row and the mark commit together: 8
// concurrent deliveries of one id write one row; a failing handler writes
// nothing and leaves the id unmarked.
func runWrapTx(t *testing.T, db *sql.DB, s *sqlstore.Store) {
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS effects (msg TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM effects`); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("boom")
	failing := true
	var mu sync.Mutex
	h := sqlstore.WrapTx(db, s, time.Hour, func(ctx context.Context, tx *sql.Tx, env *babelqueue.Envelope) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO effects (msg) VALUES ('`+env.Meta.ID+`')`); err != nil {
			return err
		}
		mu.Lock()
		f := failing
		mu.Unlock()
		if f {
			return fail
		}
		time.Sleep(20 * time.Millisecond)
		return nil
	})
	id := fmt.Sprintf("tx-%d", time.Now().UnixNano())
	env := &babelqueue.Envelope{Job: "urn:t", Meta: babelqueue.Meta{ID: id}}
	if err := h(ctx, env); !errors.Is(err, fail) {
		t.Fatalf("failing handler: %v", err)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	storetest.DeliverConcurrently(t, ctx, h, env, 8)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM effects WHERE msg = '`+id+`'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d effect rows after a failure and 8 concurrent deliveries, want 1", n)
	}
}

func runCleanup(t *testing.T, db *sql.DB, d sqlstore.Dialect) {
	ctx := context.Background()
	clock := bqtest.NewFakeClock(time.Unix(1_000_000, 0))
	s := newStore(t, db, d, sqlstore.WithTable("bq_idem_cleanup"), sqlstore.WithClock(clock))
	if _, err := db.ExecContext(ctx, `DELETE FROM bq_idem_cleanup`); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.Claim(ctx, id, "t", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "a", "t", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "b", "t", 0); err != nil { // kept until forgotten
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	n, err := s.Cleanup(ctx)
	if err != nil || n != 2 {
		t.Fatalf("cleanup removed %d (%v), want 2 (a expired, c's lease passed)", n, err)
	}
}
