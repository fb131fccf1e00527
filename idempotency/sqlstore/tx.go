package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/babelqueue/babelqueue-go/idempotency"
)

// TxHandler is a handler whose effect is written through tx.
type TxHandler func(ctx context.Context, tx *sql.Tx, env *babelqueue.Envelope) error

// WrapTx returns a handler that records meta.id as done inside the same
// transaction as h's writes, so the effect happens exactly once. The
// transaction inserts the id's done record (kept for ttl; 0: until
// forgotten), runs h with it and commits. The effect and the mark commit or
// roll back together, so the effect happens exactly once however often the
// message is delivered, even across crashes:
//
//   - an id already done is skipped (acknowledged, h not run);
//   - h's error rolls the transaction back (the id stays unmarked) and is
//     returned, so retry and dead letter still apply;
//   - a concurrent delivery of the same id waits on the row lock of the
//     first one's insert (PostgreSQL) or on the write lock (SQLite) and
//     then sees the id done (or, after a rollback, runs);
//   - an id held by a live claim of idempotency.Wrap on the same table
//     fails with idempotency.ErrInFlight.
//
// A message without meta.id runs h in a transaction with no mark. With
// SQLite open the database with a busy timeout and immediate transactions
// (modernc.org/sqlite: "?_pragma=busy_timeout(10000)&_txlock=immediate").
func WrapTx(db *sql.DB, s *Store, ttl time.Duration, h TxHandler) babelqueue.Handler {
	return func(ctx context.Context, env *babelqueue.Envelope) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlstore: begin: %w", err)
		}
		defer func() { _ = tx.Rollback() }()
		if id := idempotency.Key(env); !wire.IsBlank(id) {
			now := s.now()
			var got string
			err := tx.QueryRowContext(ctx, s.mark, id, s.expiry(now, ttl), s.ms(now)).Scan(&got)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				st, found, err := s.state(ctx, tx, id, now)
				if err != nil {
					return err
				}
				if found && st == idempotency.Busy {
					return fmt.Errorf("sqlstore: %s: %w", id, idempotency.ErrInFlight)
				}
				return nil // done: skip
			case err != nil:
				return fmt.Errorf("sqlstore: mark %s: %w", id, err)
			}
		}
		if err := h(ctx, tx, env); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlstore: commit: %w", err)
		}
		return nil
	}
}
