package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Dialect selects the SQL of a database.
type Dialect int

const (
	// Postgres is PostgreSQL 12 or later: key-bucket advisory locks held by
	// each claim's transaction.
	Postgres Dialect = iota + 1
	// SQLite is SQLite 3.38 or later: leases written under its single
	// writer lock.
	SQLite
)

// statements is the SQL of one outbox table in one dialect, one named
// statement per use; {t} stands for the table in the templates below.
type statements struct {
	schema  []string // Migrate, in order
	insert  string   // Write: the row, returning its id
	stats   string   // Stats: counts and the oldest row
	lastErr string   // Stats: the error of the latest failure
	purge   string   // Purge: rows marked published by earlier versions
	lock    string   // PostgreSQL: try-lock free key buckets, return them
	claim   string   // the due rows of a claim
	delete  string   // the acknowledged rows
	inSet   string   // PostgreSQL, bench only (internal/plain): claim without the mask
	fail    string   // record a failure of some rows
	release string   // SQLite: end the lease of rows held back
}

// The pending rows, in both dialects: rows that versions before December
// 2026 marked published (published_at) instead of deleting are left out.
const (
	statsSQL   = `SELECT COUNT(*), MIN(created_at), COUNT(*) FILTER (WHERE attempts > 0), COALESCE(SUM(attempts), 0) FROM {t} WHERE published_at IS NULL`
	lastErrSQL = `SELECT last_error FROM {t} WHERE published_at IS NULL AND attempts > 0 ORDER BY next_attempt_at DESC LIMIT 1`
)

// PostgreSQL. The key bucket of a row is (hashtext(order_key) & 63), in the
// claim and in the index of pending rows by id that the claim scans. Lists
// of ids are passed as array text ("{1,2}") so that any
// database/sql driver can bind them.
const (
	pgTable = `CREATE TABLE IF NOT EXISTS {t} (
  id BIGSERIAL PRIMARY KEY,
  queue TEXT NOT NULL,
  msg_key BYTEA,
  order_key TEXT NOT NULL,
  body BYTEA NOT NULL,
  headers TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  locked_by TEXT NOT NULL DEFAULT '',
  locked_until BIGINT NOT NULL DEFAULT 0,
  published_at BIGINT)`
	pgPendingIndex = `CREATE INDEX IF NOT EXISTS {t}_pending ON {t} (order_key, id) WHERE published_at IS NULL`
	pgBucketIndex  = `CREATE INDEX IF NOT EXISTS {t}_pending_bucket ON {t} (id, (hashtext(order_key) & 63)) WHERE published_at IS NULL`
	pgRetryIndex   = `CREATE INDEX IF NOT EXISTS {t}_retry ON {t} (order_key, id) WHERE attempts > 0 AND published_at IS NULL`
	pgDropIDIndex  = `DROP INDEX IF EXISTS {t}_pending_id` // of versions before the bucket index
	pgInsert       = `INSERT INTO {t} (queue, msg_key, order_key, body, headers, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`
	pgPurge        = `DELETE FROM {t} WHERE published_at IS NOT NULL AND published_at < $1`
	// pgLock try-locks the buckets from $1 on (a try-lock never waits), up
	// to $3 of them, in namespace $2, and returns them as a bit mask with
	// the lowest and the highest. The same statement turns the
	// transaction's synchronous commit off: a settlement lost in a crash of
	// the server only sends its rows again.
	pgLock = `SELECT coalesce(bit_or(1::bigint << b), 0), coalesce(min(b), 0), coalesce(max(b), -1)
  FROM (SELECT b FROM (SELECT set_config('synchronous_commit', 'off', true)) s,
    (SELECT (g + $1) % 64 AS b FROM generate_series(0, 63) g) c
    WHERE pg_try_advisory_xact_lock($2, b) LIMIT $3) l`
	// pgClaim reads the due rows of the buckets in the mask $2 (within
	// $3..$4, a condition on the index's second column, so other buckets'
	// rows are passed over in the index) in id order, each passed over when
	// an older row of its key failed and is not due yet; the probe of the
	// retried rows runs per row only when one waits at all.
	pgClaim = `SELECT o.id, o.queue, o.msg_key, o.order_key, o.body, o.headers, o.attempts FROM {t} o
  WHERE o.published_at IS NULL AND o.next_attempt_at <= $1
    AND ($2::bigint >> (hashtext(o.order_key) & 63)) & 1 = 1
    AND (hashtext(o.order_key) & 63) BETWEEN $3 AND $4
    AND (NOT EXISTS (SELECT 1 FROM {t} f WHERE f.attempts > 0 AND f.published_at IS NULL AND f.next_attempt_at > $1)
      OR NOT EXISTS (SELECT 1 FROM {t} p WHERE p.order_key = o.order_key AND p.id < o.id
                     AND p.attempts > 0 AND p.published_at IS NULL AND p.next_attempt_at > $1))
  ORDER BY o.id LIMIT $5`
	pgDelete = `DELETE FROM {t} WHERE id = ANY($1::text::bigint[])`
	// pgClaimInSet is the plain form the bench measures pgClaim against
	// (internal/plain): the buckets of mask $2 as a set, no range.
	pgClaimInSet = `SELECT o.id, o.queue, o.msg_key, o.order_key, o.body, o.headers, o.attempts FROM {t} o
  WHERE o.published_at IS NULL AND o.next_attempt_at <= $1
    AND (hashtext(o.order_key) & 63) = ANY(ARRAY(SELECT b FROM generate_series(0, 63) b WHERE ($2::bigint >> b) & 1 = 1))
    AND (NOT EXISTS (SELECT 1 FROM {t} f WHERE f.attempts > 0 AND f.published_at IS NULL AND f.next_attempt_at > $1)
      OR NOT EXISTS (SELECT 1 FROM {t} p WHERE p.order_key = o.order_key AND p.id < o.id
                     AND p.attempts > 0 AND p.published_at IS NULL AND p.next_attempt_at > $1))
  ORDER BY o.id LIMIT $3`
	pgFail = `UPDATE {t} SET attempts = attempts + 1, last_error = $1, next_attempt_at = $2 WHERE id = ANY($3::text::bigint[])`
)

// SQLite. Id lists are passed as JSON arrays ("[1,2]") read by json_each.
const (
	liteTable = `CREATE TABLE IF NOT EXISTS {t} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  msg_key BLOB,
  order_key TEXT NOT NULL,
  body BLOB NOT NULL,
  headers TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  locked_by TEXT NOT NULL DEFAULT '',
  locked_until BIGINT NOT NULL DEFAULT 0,
  published_at BIGINT)`
	litePendingIndex = `CREATE INDEX IF NOT EXISTS {t}_pending ON {t} (order_key, id) WHERE published_at IS NULL`
	liteIDIndex      = `CREATE INDEX IF NOT EXISTS {t}_pending_id ON {t} (id) WHERE published_at IS NULL`
	liteRetryIndex   = `CREATE INDEX IF NOT EXISTS {t}_retry ON {t} (order_key, id) WHERE attempts > 0 AND published_at IS NULL`
	liteInsert       = `INSERT INTO {t} (queue, msg_key, order_key, body, headers, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`
	litePurge        = `DELETE FROM {t} WHERE published_at IS NOT NULL AND published_at < ?`
	// liteClaim leases to relay ?4 until ?5, under the writer lock, the due
	// rows that are not leased and are the oldest pending row of their key.
	liteClaim = `WITH c AS (SELECT o.id FROM {t} o
  WHERE o.published_at IS NULL AND o.next_attempt_at <= ?1 AND o.locked_until <= ?2
    AND NOT EXISTS (SELECT 1 FROM {t} p WHERE p.order_key = o.order_key AND p.published_at IS NULL AND p.id < o.id)
  ORDER BY o.id LIMIT ?3)
UPDATE {t} SET locked_by = ?4, locked_until = ?5 FROM c WHERE {t}.id = c.id
  AND {t}.published_at IS NULL AND {t}.locked_until <= ?2
RETURNING {t}.id, queue, msg_key, order_key, body, headers, attempts`
	liteDelete  = `DELETE FROM {t} WHERE locked_by = ?1 AND id IN (SELECT value FROM json_each(?2))`
	liteFail    = `UPDATE {t} SET attempts = attempts + 1, last_error = ?1, next_attempt_at = ?2, locked_until = 0, locked_by = '' WHERE locked_by = ?3 AND id IN (SELECT value FROM json_each(?4))`
	liteRelease = `UPDATE {t} SET locked_until = 0, locked_by = '' WHERE locked_by = ?1 AND id IN (SELECT value FROM json_each(?2))`
)

var (
	pgStatements = statements{
		schema: []string{pgTable, pgPendingIndex, pgBucketIndex, pgRetryIndex, pgDropIDIndex},
		insert: pgInsert, stats: statsSQL, lastErr: lastErrSQL, purge: pgPurge,
		lock: pgLock, claim: pgClaim, delete: pgDelete, fail: pgFail, inSet: pgClaimInSet,
	}
	liteStatements = statements{
		schema: []string{liteTable, litePendingIndex, liteIDIndex, liteRetryIndex},
		insert: liteInsert, stats: statsSQL, lastErr: lastErrSQL, purge: litePurge,
		claim: liteClaim, delete: liteDelete, fail: liteFail, release: liteRelease,
	}
)

// statementsOf returns the statements of dialect d for table.
func statementsOf(d Dialect, table string) statements {
	s := liteStatements
	if d == Postgres {
		s = pgStatements
	}
	t := func(q string) string { return strings.ReplaceAll(q, "{t}", table) }
	schema := make([]string, len(s.schema))
	for i, q := range s.schema {
		schema[i] = t(q)
	}
	s.schema = schema
	s.insert, s.stats, s.lastErr, s.purge = t(s.insert), t(s.stats), t(s.lastErr), t(s.purge)
	s.lock, s.claim, s.delete, s.fail, s.release = t(s.lock), t(s.claim), t(s.delete), t(s.fail), t(s.release)
	s.inSet = t(s.inSet)
	return s
}

// Migrate creates the table and its indexes when they do not exist. On
// PostgreSQL it also drops the id index of earlier versions, which the
// bucket index replaces (run it with the relays stopped).
func (o *Outbox) Migrate(ctx context.Context, db *sql.DB) error {
	for _, q := range o.st.schema {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("outbox: migrate %s: %w", o.table, err)
		}
	}
	return nil
}

// idList is ids as one parameter: a PostgreSQL array literal or, on
// SQLite, a JSON array.
func idList(d Dialect, ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	open, end := byte('['), byte(']')
	if d == Postgres {
		open, end = '{', '}'
	}
	b = append(b, open)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, end))
}
