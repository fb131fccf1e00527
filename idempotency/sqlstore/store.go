// Package sqlstore is an idempotency.Store on database/sql, for PostgreSQL
// and SQLite (3.35 or later). It imports no driver: open the *sql.DB with
// the driver of your choice (github.com/jackc/pgx/v5/stdlib,
// modernc.org/sqlite, ...).
//
// One row per message id: token "" is a done record, any other token a
// claim; expires_at is Unix milliseconds (0: a done record kept until
// forgotten). Claim is a single INSERT ... ON CONFLICT DO UPDATE ... WHERE
// expired RETURNING, atomic in both databases, so of two concurrent claims
// of one id at most one wins while its lease is live.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/idempotency"
)

// Dialect selects the SQL spelling of placeholders.
type Dialect int

const (
	// Postgres numbers its placeholders ($1, $2, ...).
	Postgres Dialect = iota + 1
	// SQLite uses ? placeholders.
	SQLite
)

// DefaultTable is the table name unless WithTable says otherwise.
//
// Every option and its default:
//
//	option       default
//	WithTable    DefaultTable ("bq_idempotency"), a plain identifier
//	WithClock    time.Now (the source of time of expiries)
//
// An invalid value is recorded by its option; New reports every problem
// together (errors.Join), each matching babelqueue.ErrInvalidOption.
const DefaultTable = "bq_idempotency"

// Store is an idempotency.Store on a *sql.DB.
type Store struct {
	db      *sql.DB
	dialect Dialect
	table   string
	now     func() time.Time

	claim, complete, release, forget, lookup, cleanup, mark string
}

// config holds the options of a Store.
type config struct {
	table string
	clock driver.Clock
	errs  option.Errors
}

// Option configures a Store.
type Option func(*config)

// WithTable sets the table name, a plain identifier.
func WithTable(name string) Option {
	return func(c *config) { option.Identifier(&c.errs, &c.table, "table name", name) }
}

// WithClock sets the source of time of expiries (the App's driver.Clock, so a
// test can share one bqtest.FakeClock).
func WithClock(clock driver.Clock) Option {
	return func(c *config) { option.NonNil(&c.errs, &c.clock, "clock", clock) }
}

// New returns a Store on db. Call Migrate once to create its table.
func New(db *sql.DB, dialect Dialect, opts ...Option) (*Store, error) {
	c := config{table: DefaultTable, clock: driver.SystemClock{}, errs: option.Prefixed("sqlstore")}
	if db == nil {
		c.errs.Fail("nil database")
	}
	if dialect != Postgres && dialect != SQLite {
		c.errs.Fail("unknown dialect %d", dialect)
	}
	if err := option.Apply(&c, &c.errs, opts); err != nil {
		return nil, err
	}
	s := &Store{db: db, dialect: dialect, table: c.table, now: c.clock.Now}
	t := s.table
	s.claim = s.sql(`INSERT INTO ` + t + ` (id, token, expires_at) VALUES (?, ?, ?)
ON CONFLICT (id) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
WHERE ` + t + `.expires_at <> 0 AND ` + t + `.expires_at <= ? RETURNING token`)
	s.mark = s.sql(`INSERT INTO ` + t + ` (id, token, expires_at) VALUES (?, '', ?)
ON CONFLICT (id) DO UPDATE SET token = '', expires_at = excluded.expires_at
WHERE ` + t + `.expires_at <> 0 AND ` + t + `.expires_at <= ? RETURNING id`)
	s.lookup = s.sql(`SELECT token, expires_at FROM ` + t + ` WHERE id = ?`)
	s.complete = s.sql(`UPDATE ` + t + ` SET token = '', expires_at = ? WHERE id = ? AND token = ? AND expires_at > ?`)
	s.release = s.sql(`DELETE FROM ` + t + ` WHERE id = ? AND token = ?`)
	s.forget = s.sql(`DELETE FROM ` + t + ` WHERE id = ?`)
	s.cleanup = s.sql(`DELETE FROM ` + t + ` WHERE expires_at <> 0 AND expires_at <= ?`)
	return s, nil
}

// sql rewrites ? placeholders for the dialect.
func (s *Store) sql(q string) string {
	if s.dialect != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Migrate creates the table and its expiry index when they do not exist.
func (s *Store) Migrate(ctx context.Context) error {
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS ` + s.table + ` (id TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS ` + s.table + `_expires ON ` + s.table + ` (expires_at)`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlstore: migrate %s: %w", s.table, err)
		}
	}
	return nil
}

func (s *Store) ms(t time.Time) int64 { return t.UnixMilli() }

// queryer is *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, id, token string, lease time.Duration) (idempotency.State, error) {
	for range 3 {
		now := s.now()
		var got string
		err := s.db.QueryRowContext(ctx, s.claim, id, token, s.ms(now.Add(lease)), s.ms(now)).Scan(&got)
		if err == nil {
			return idempotency.Claimed, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("sqlstore: claim: %w", err)
		}
		st, found, err := s.state(ctx, s.db, id, now)
		if err != nil {
			return 0, err
		}
		if found {
			return st, nil
		}
		// The row went away between the two statements: claim again.
	}
	return idempotency.Busy, nil
}

// state reads id's record: Done or Busy, found false when there is none.
func (s *Store) state(ctx context.Context, q queryer, id string, now time.Time) (idempotency.State, bool, error) {
	var token string
	var exp int64
	err := q.QueryRowContext(ctx, s.lookup, id).Scan(&token, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlstore: lookup: %w", err)
	}
	if exp != 0 && exp <= s.ms(now) {
		return 0, false, nil
	}
	if token == "" {
		return idempotency.Done, true, nil
	}
	return idempotency.Busy, true, nil
}

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, id, token string, ttl time.Duration) error {
	now := s.now()
	res, err := s.db.ExecContext(ctx, s.complete, s.expiry(now, ttl), id, token, s.ms(now))
	if err != nil {
		return fmt.Errorf("sqlstore: complete: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("sqlstore: complete %s: %w", id, idempotency.ErrLeaseLost)
	}
	return nil
}

func (s *Store) expiry(now time.Time, ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return s.ms(now.Add(ttl))
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, id, token string) error {
	if _, err := s.db.ExecContext(ctx, s.release, id, token); err != nil {
		return fmt.Errorf("sqlstore: release: %w", err)
	}
	return nil
}

// Forget implements idempotency.Store.
func (s *Store) Forget(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, s.forget, id); err != nil {
		return fmt.Errorf("sqlstore: forget: %w", err)
	}
	return nil
}

// Cleanup deletes every expired record (done records past their TTL,
// claims past their lease) and returns how many. Run it periodically; an
// expired record is already treated as absent, so cleanup only saves space.
func (s *Store) Cleanup(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.cleanup, s.ms(s.now()))
	if err != nil {
		return 0, fmt.Errorf("sqlstore: cleanup: %w", err)
	}
	return res.RowsAffected()
}
