// Package outbox stores messages in the caller's database transaction and
// relays them to a broker at least once, in order per key.
//
// Write inserts a row in the caller's *sql.Tx, so the message exists
// exactly when the caller's own writes commit. A Relay claims pending
// rows, sends them through any binding (a Sender) and deletes each row
// only after the broker acknowledged it; a failed row is retried with
// backoff and holds back the later rows of its key. Several relays may run
// on one table at once. It works with PostgreSQL and SQLite through
// database/sql and imports no database driver. DESIGN.md states the
// guarantees and how each code path keeps them.
package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Outbox names the outbox table of a database.
type Outbox struct {
	dialect Dialect
	table   string
	now     func() time.Time
	st      statements
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
	return &Outbox{dialect: d, table: c.table, now: c.clock.Now, st: statementsOf(d, c.table)}, nil
}

// Table returns the table name.
func (o *Outbox) Table() string { return o.table }

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
	err = tx.QueryRowContext(ctx, o.st.insert, m.Queue, m.Key, orderKey, m.Body, string(h), o.now().UnixMilli()).Scan(&id)
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
