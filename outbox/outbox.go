// Package outbox is a transactional outbox for BabelQueue on database/sql
// (PostgreSQL and SQLite 3.35+). Write stores a message in the caller's
// transaction, so it exists exactly when the caller's own writes commit; a
// Relay publishes pending rows through any binding and deletes each row
// only after the broker acknowledged it. At-least-once: a relay that dies
// between the broker's acknowledgement and the deletion publishes the row
// again (on PostgreSQL at once, on SQLite when its lease ends). See
// DESIGN.md for per-key order and several relays at once.
package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Dialect selects the SQL of a database.
type Dialect int

const (
	// Postgres: $n placeholders, BYTEA, FOR UPDATE SKIP LOCKED.
	Postgres Dialect = iota + 1
	// SQLite: ? placeholders, BLOB, one writer at a time.
	SQLite
)

// Outbox names the outbox table of a database.
type Outbox struct {
	dialect Dialect
	table   string
	now     func() time.Time
	insertQ string // Write's statement
}

// New returns the outbox of a database of dialect d. It reports every
// invalid option at once (errors.Join), each matching
// babelqueue.ErrInvalidOption.
func New(d Dialect, opts ...Option) (*Outbox, error) {
	c := config{table: DefaultTable, clock: driver.SystemClock{}, errs: option.Prefixed("outbox")}
	if d != Postgres && d != SQLite {
		c.errs.Fail("unknown dialect %d", d)
	}
	if err := option.Apply(&c, &c.errs, opts); err != nil {
		return nil, err
	}
	o := &Outbox{dialect: d, table: c.table, now: c.clock.Now}
	// On PostgreSQL the id comes from the column's default, which Migrate
	// makes take the writing transaction's id first (floors.go).
	o.insertQ = o.q(`INSERT INTO {t} (queue, msg_key, order_key, body, headers, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`)
	return o, nil
}

// Table returns the table name.
func (o *Outbox) Table() string { return o.table }

// q rewrites ? placeholders for the dialect and {t} as the table name.
func (o *Outbox) q(s string) string {
	s = strings.ReplaceAll(s, "{t}", o.table)
	if o.dialect != Postgres {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Migrate creates the table and its indexes when they do not exist.
func (o *Outbox) Migrate(ctx context.Context, db *sql.DB) error {
	id, blob := "BIGSERIAL PRIMARY KEY", "BYTEA"
	if o.dialect == SQLite {
		id, blob = "INTEGER PRIMARY KEY AUTOINCREMENT", "BLOB"
	}
	// The claim's scan in id order: on PostgreSQL the index holds each
	// row's key bucket beside its id, so a claim passes over the rows of
	// the buckets it does not hold in the index, without reading them
	// (see DESIGN.md, "Claim on PostgreSQL"); tables of earlier versions
	// had an index of the id alone, which it replaces.
	byID := `CREATE INDEX IF NOT EXISTS {t}_pending_id ON {t} (id) WHERE published_at IS NULL`
	dropOld, xidFirst := ``, ``
	if o.dialect == Postgres {
		xidFirst = xidFirstMigration
		byID = `CREATE INDEX IF NOT EXISTS {t}_pending_bucket ON {t} (id, ` + bucketOf("order_key") + `) WHERE published_at IS NULL`
		dropOld = `DROP INDEX IF EXISTS {t}_pending_id`
	}
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS {t} (
  id ` + id + `,
  queue TEXT NOT NULL,
  msg_key ` + blob + `,
  order_key TEXT NOT NULL,
  body ` + blob + ` NOT NULL,
  headers TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  locked_by TEXT NOT NULL DEFAULT '',
  locked_until BIGINT NOT NULL DEFAULT 0,
  published_at BIGINT)`,
		// published_at: set by versions before rows were deleted once
		// published; such rows are never sent again and Purge removes them.
		`CREATE INDEX IF NOT EXISTS {t}_pending ON {t} (order_key, id) WHERE published_at IS NULL`,
		byID,
		// Rows that failed: what a PostgreSQL claim checks a row's key
		// against (usually empty).
		`CREATE INDEX IF NOT EXISTS {t}_retry ON {t} (order_key, id) WHERE attempts > 0 AND published_at IS NULL`,
		dropOld,
		xidFirst,
	} {
		if s == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, o.q(s)); err != nil {
			return fmt.Errorf("outbox: migrate %s: %w", o.table, err)
		}
	}
	return nil
}

// Message is one row of the outbox: what the relay sends, byte for byte.
type Message struct {
	// Queue is the destination queue (topic).
	Queue string
	// Key is the message key the binding writes (nil: none).
	Key []byte
	// Body is the envelope as it goes on the wire.
	Body []byte
	// Headers are out-of-band headers written beside the binding's own.
	Headers map[string]string
	// OrderKey groups rows that are published in Write order; rows of
	// different order keys are published independently. Empty: string(Key)
	// when there is a key, else the row is ordered with no other row.
	OrderKey string
}

// Write stores m in tx; it is published once tx commits. It returns the
// row id.
func (o *Outbox) Write(ctx context.Context, tx *sql.Tx, m Message) (int64, error) {
	if wire.IsBlank(m.Queue) {
		return 0, fmt.Errorf("outbox: write: blank queue")
	}
	if len(m.Body) == 0 {
		return 0, fmt.Errorf("outbox: write: empty body")
	}
	h, err := json.Marshal(m.Headers)
	if err != nil {
		return 0, fmt.Errorf("outbox: write: headers: %w", err)
	}
	orderKey := m.OrderKey
	if orderKey == "" && m.Key != nil {
		orderKey = "k:" + string(m.Key)
	}
	if orderKey == "" {
		orderKey = "u:" + randomID()
	}
	var id int64
	err = tx.QueryRowContext(ctx, o.insertQ, m.Queue, m.Key, orderKey, m.Body, string(h), o.now().UnixMilli()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("outbox: write to %s: %w", o.table, err)
	}
	return id, nil
}

// WriteEnvelope encodes env (meta.created_at and every other field as they
// are) and writes it for env.Meta.Queue, keyed by key.
func (o *Outbox) WriteEnvelope(ctx context.Context, tx *sql.Tx, env *babelqueue.Envelope, key []byte, headers map[string]string) (int64, error) {
	body, err := env.Encode()
	if err != nil {
		return 0, fmt.Errorf("outbox: encode: %w", err)
	}
	return o.Write(ctx, tx, Message{Queue: env.Meta.Queue, Key: key, Body: body, Headers: headers})
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
