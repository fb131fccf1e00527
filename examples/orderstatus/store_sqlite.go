package orderstatus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the pure-Go "sqlite" database/sql driver
)

// SQLiteStore is the Store on an SQLite file, through the pure-Go
// modernc.org/sqlite driver. It serialises its transactions on one
// connection, which is plenty for a projection updated one record at a time
// per partition.
type SQLiteStore struct {
	db *sql.DB
}

var _ Store = (*SQLiteStore)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS orders (
	order_id   TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
	event_id   TEXT PRIMARY KEY,
	order_id   TEXT NOT NULL,
	status     TEXT NOT NULL,
	applied_at INTEGER NOT NULL,
	changed    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_order ON events(order_id, applied_at);
`

// OpenSQLite opens (creating it if needed) the projection in the SQLite file
// at path. Errors wrap ErrUnavailable.
func OpenSQLite(ctx context.Context, path string) (*SQLiteStore, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %w", ErrUnavailable, path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: creating the schema in %s: %w", ErrUnavailable, path, err)
	}
	return &SQLiteStore{db: db}, nil
}

// Apply implements Store.
func (s *SQLiteStore) Apply(ctx context.Context, e Event) (result Applied, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var seen int
	err = tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM events WHERE event_id = ?`, e.ID).Scan(&seen)
	if err != nil {
		return 0, fmt.Errorf("%w: reading event %s: %w", ErrUnavailable, e.ID, err)
	}
	if seen > 0 {
		return AlreadyApplied, s.commit(tx)
	}
	var current string
	err = tx.QueryRowContext(ctx, `SELECT status FROM orders WHERE order_id = ?`, e.OrderID).Scan(&current)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: reading order %s: %w", ErrUnavailable, e.OrderID, err)
	}
	same, err := Transition(Status(current), e.Status)
	if err != nil {
		return 0, fmt.Errorf("order %s: %w", e.OrderID, err)
	}
	now := time.Now().UnixMilli()
	if !same {
		_, err = tx.ExecContext(ctx, `INSERT INTO orders (order_id, status, updated_at) VALUES (?, ?, ?)
			ON CONFLICT(order_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at`,
			e.OrderID, string(e.Status), now)
		if err != nil {
			return 0, fmt.Errorf("%w: updating order %s: %w", ErrUnavailable, e.OrderID, err)
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO events (event_id, order_id, status, applied_at, changed) VALUES (?, ?, ?, ?, ?)`,
		e.ID, e.OrderID, string(e.Status), now, !same)
	if err != nil {
		return 0, fmt.Errorf("%w: recording event %s: %w", ErrUnavailable, e.ID, err)
	}
	if err = s.commit(tx); err != nil {
		return 0, err
	}
	if same {
		return AlreadyApplied, nil
	}
	return Projected, nil
}

func (s *SQLiteStore) commit(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%w: commit: %w", ErrUnavailable, err)
	}
	return nil
}

// Orders implements Store.
func (s *SQLiteStore) Orders(ctx context.Context) ([]Order, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT o.order_id, o.status, o.updated_at, e.status
		FROM orders o LEFT JOIN events e ON e.order_id = o.order_id AND e.changed
		ORDER BY o.order_id, e.applied_at, e.rowid`)
	if err != nil {
		return nil, fmt.Errorf("%w: listing orders: %w", ErrUnavailable, err)
	}
	defer rows.Close()
	var out []Order
	for rows.Next() {
		var id, status string
		var updated int64
		var step sql.NullString
		if err := rows.Scan(&id, &status, &updated, &step); err != nil {
			return nil, fmt.Errorf("%w: listing orders: %w", ErrUnavailable, err)
		}
		if len(out) == 0 || out[len(out)-1].ID != id {
			out = append(out, Order{ID: id, Status: Status(status), UpdatedAt: time.UnixMilli(updated).UTC()})
		}
		if step.Valid {
			o := &out[len(out)-1]
			o.History = append(o.History, Status(step.String))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: listing orders: %w", ErrUnavailable, err)
	}
	return out, nil
}

// HasEvent implements Store.
func (s *SQLiteStore) HasEvent(ctx context.Context, id string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events WHERE event_id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("%w: reading event %s: %w", ErrUnavailable, id, err)
	}
	return n > 0, nil
}

// Close implements Store.
func (s *SQLiteStore) Close() error {
	return s.db.Close()
}
