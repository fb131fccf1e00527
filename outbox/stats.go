package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Stats is the state of an outbox table.
type Stats struct {
	// Pending counts rows not yet published.
	Pending int64
	// OldestPending is the age of the oldest pending row (0 when none).
	OldestPending time.Duration
	// Failing counts pending rows with a recorded send failure.
	Failing int64
	// Attempts sums the failed sends recorded on pending rows.
	Attempts int64
	// LastError is the most recent error of a failing row ("" when none).
	LastError string
}

// Stats reads the state of the outbox table (`bq outbox stats`).
func (o *Outbox) Stats(ctx context.Context, db *sql.DB) (Stats, error) {
	var s Stats
	var oldest sql.NullInt64
	// Every row is pending: a published row is deleted (rows marked
	// published by earlier versions are left out).
	err := db.QueryRowContext(ctx, o.st.stats).Scan(&s.Pending, &oldest, &s.Failing, &s.Attempts)
	if err != nil {
		return Stats{}, fmt.Errorf("outbox: stats: %w", err)
	}
	if oldest.Valid {
		s.OldestPending = max(o.now().Sub(time.UnixMilli(oldest.Int64)), 0)
	}
	if s.Failing > 0 {
		_ = db.QueryRowContext(ctx, o.st.lastErr).Scan(&s.LastError)
	}
	return s, nil
}

// StatsOf reads the state of the default outbox table of a database of
// dialect d.
func StatsOf(ctx context.Context, db *sql.DB, d Dialect) (Stats, error) {
	o, err := New(d)
	if err != nil {
		return Stats{}, err
	}
	return o.Stats(ctx, db)
}

// Purge deletes the rows marked published before cutoff and returns how
// many. Only tables written by versions that marked published rows instead
// of deleting them hold such rows; the relay ignores them.
func (o *Outbox) Purge(ctx context.Context, db *sql.DB, cutoff time.Time) (int64, error) {
	res, err := db.ExecContext(ctx, o.st.purge, cutoff.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("outbox: purge: %w", err)
	}
	return res.RowsAffected()
}
