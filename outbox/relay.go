package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Defaults of the relay options.
const (
	DefaultBatchSize   = 500
	DefaultParallelism = 64
	DefaultLease       = 30 * time.Second
	DefaultPoll        = 200 * time.Millisecond
	DefaultMinBackoff  = 500 * time.Millisecond
	DefaultMaxBackoff  = time.Minute
	DefaultSendTimeout = 30 * time.Second
)

// Relay publishes the pending rows of an outbox. Several relays (in one
// process or many) may run on one table at once; see DESIGN.md.
type Relay struct {
	db     *sql.DB
	ob     *Outbox
	sender Sender
	cfg    relayConfig
	claimQ string
}

type relayConfig struct {
	id                     string
	batch, parallel        int
	lease, poll            time.Duration
	minBackoff, maxBackoff time.Duration
	sendTimeout            time.Duration
	logger                 *slog.Logger
}

// RelayOption configures a Relay.
type RelayOption func(*relayConfig)

// WithRelayID names the relay in the table's locked_by column (default a
// random id).
func WithRelayID(id string) RelayOption { return func(c *relayConfig) { c.id = id } }

// WithBatchSize sets how many rows one claim takes (default DefaultBatchSize).
func WithBatchSize(n int) RelayOption { return func(c *relayConfig) { c.batch = n } }

// WithParallelism bounds the sends in flight per batch (default
// DefaultParallelism); Run keeps at most two batches in flight.
func WithParallelism(n int) RelayOption { return func(c *relayConfig) { c.parallel = n } }

// WithLease sets how long claimed rows are the relay's (default
// DefaultLease): a relay that dies leaves its rows to the others after it.
// It must exceed the time to send a batch.
func WithLease(d time.Duration) RelayOption { return func(c *relayConfig) { c.lease = d } }

// WithPoll sets the wait after a claim that found nothing (default DefaultPoll).
func WithPoll(d time.Duration) RelayOption { return func(c *relayConfig) { c.poll = d } }

// WithBackoff sets the retry delay of a failed row: min doubled per
// attempt, at most max.
func WithBackoff(minDelay, maxDelay time.Duration) RelayOption {
	return func(c *relayConfig) { c.minBackoff, c.maxBackoff = minDelay, maxDelay }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) RelayOption { return func(c *relayConfig) { c.logger = l } }

// NewRelay returns a relay of ob's table in db, publishing through sender.
func NewRelay(db *sql.DB, ob *Outbox, sender Sender, opts ...RelayOption) *Relay {
	c := relayConfig{id: randomID(), batch: DefaultBatchSize, parallel: DefaultParallelism, lease: DefaultLease, poll: DefaultPoll,
		minBackoff: DefaultMinBackoff, maxBackoff: DefaultMaxBackoff, sendTimeout: DefaultSendTimeout}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	c.batch, c.parallel = max(c.batch, 1), max(c.parallel, 1)
	// PostgreSQL: lock the claimed rows, skipping those another relay's
	// claim holds, and find them again by primary key (a join would hash
	// the whole table).
	lock, join := "", " FROM c WHERE {t}.id = c.id"
	if ob.dialect == Postgres {
		lock, join = " FOR UPDATE SKIP LOCKED", " WHERE {t}.id = ANY(ARRAY(SELECT id FROM c))"
	}
	// A row is claimable when it is due, not leased, and the oldest pending
	// row of its order key: one row per key is in flight at a time.
	claim := ob.q(`WITH c AS (
  SELECT o.id FROM {t} o
  WHERE o.published_at IS NULL AND o.next_attempt_at <= ? AND o.locked_until <= ?
    AND NOT EXISTS (SELECT 1 FROM {t} p WHERE p.order_key = o.order_key AND p.published_at IS NULL AND p.id < o.id)
  ORDER BY o.id LIMIT ?` + lock + `)
UPDATE {t} SET locked_by = ?, locked_until = ?` + join + `
AND {t}.published_at IS NULL AND {t}.locked_until <= ?
RETURNING {t}.id, queue, msg_key, body, headers, attempts`)
	return &Relay{db: db, ob: ob, sender: sender, cfg: c, claimQ: claim}
}

func (r *Relay) logger() *slog.Logger {
	if r.cfg.logger != nil {
		return r.cfg.logger
	}
	return slog.Default()
}

// Run publishes until ctx ends, then returns ctx's error once the batches
// in flight are settled. It keeps two batches in flight: the next batch is
// claimed while the previous one is being sent (the claim never takes a
// row whose older row of the same key is still unsettled, so order holds).
// A database error is logged and retried after the poll interval.
func (r *Relay) Run(ctx context.Context) error {
	slots := make(chan struct{}, 2)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		rows, err := r.claim(ctx)
		if ctx.Err() != nil {
			<-slots
			return ctx.Err()
		}
		if err != nil || len(rows) == 0 {
			<-slots
			if err != nil {
				r.logger().LogAttrs(ctx, slog.LevelError, "outbox: claim failed", slog.String("relay", r.cfg.id), slog.String("error", err.Error()))
			}
			t := time.NewTimer(r.cfg.poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := r.sendAndSettle(ctx, rows); err != nil {
				r.logger().LogAttrs(ctx, slog.LevelError, "outbox: settling a batch failed; its rows are sent again after their lease",
					slog.String("relay", r.cfg.id), slog.String("error", err.Error()))
			}
		}()
	}
}

type row struct {
	id       int64
	queue    string
	key      []byte
	body     []byte
	headers  map[string]string
	attempts int
	err      error
}

// RunOnce claims one batch, sends it and records the outcome of each row.
// It returns the number of rows claimed.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	rows, err := r.claim(ctx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return len(rows), r.sendAndSettle(ctx, rows)
}

// sendAndSettle sends rows, at most parallel at once, and records the
// outcome of each.
func (r *Relay) sendAndSettle(ctx context.Context, rows []row) error {
	sem := make(chan struct{}, r.cfg.parallel)
	var wg sync.WaitGroup
	for i := range rows {
		sem <- struct{}{}
		wg.Add(1)
		go func(rw *row) {
			defer func() { <-sem; wg.Done() }()
			sctx, cancel := context.WithTimeout(ctx, r.cfg.sendTimeout)
			defer cancel()
			rw.err = r.sender.Send(sctx, rw.queue, rw.key, rw.body, rw.headers)
		}(&rows[i])
	}
	wg.Wait()
	return r.settle(context.WithoutCancel(ctx), rows)
}

func (r *Relay) claim(ctx context.Context) ([]row, error) {
	now := r.ob.now().UnixMilli()
	res, err := r.db.QueryContext(ctx, r.claimQ, now, now, r.cfg.batch, r.cfg.id, now+r.cfg.lease.Milliseconds(), now)
	if err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	defer res.Close()
	var out []row
	for res.Next() {
		var rw row
		var h string
		if err := res.Scan(&rw.id, &rw.queue, &rw.key, &rw.body, &h, &rw.attempts); err != nil {
			return nil, fmt.Errorf("outbox: claim: %w", err)
		}
		if err := json.Unmarshal([]byte(h), &rw.headers); err != nil {
			return nil, fmt.Errorf("outbox: row %d: headers: %w", rw.id, err)
		}
		out = append(out, rw)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	return out, nil
}

// settle marks the sent rows published (one statement) and schedules the
// failed ones for a retry, all only while this relay still holds them.
func (r *Relay) settle(ctx context.Context, rows []row) error {
	now := r.ob.now().UnixMilli()
	var ok []any
	var errs []error
	for _, rw := range rows {
		if rw.err == nil {
			ok = append(ok, rw.id)
			continue
		}
		delay := r.backoff(rw.attempts + 1)
		r.logger().LogAttrs(ctx, slog.LevelWarn, "outbox: send failed; retrying", slog.Int64("row", rw.id), slog.String("queue", rw.queue),
			slog.Int("attempts", rw.attempts+1), slog.Duration("retry_in", delay), slog.String("error", rw.err.Error()))
		if _, err := r.db.ExecContext(ctx, r.ob.q(`UPDATE {t} SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, locked_until = 0, locked_by = '' WHERE id = ? AND locked_by = ?`),
			truncate(rw.err.Error(), 1000), now+delay.Milliseconds(), rw.id, r.cfg.id); err != nil {
			errs = append(errs, fmt.Errorf("outbox: record failure of row %d: %w", rw.id, err))
		}
	}
	for len(ok) > 0 {
		chunk := ok[:min(len(ok), 500)]
		ok = ok[len(chunk):]
		args := append([]any{now, r.cfg.id}, chunk...)
		q := r.ob.q(`UPDATE {t} SET published_at = ?, locked_until = 0 WHERE locked_by = ? AND id IN (` + strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",") + `)`)
		if _, err := r.db.ExecContext(ctx, q, args...); err != nil {
			errs = append(errs, fmt.Errorf("outbox: mark published: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (r *Relay) backoff(attempt int) time.Duration {
	d := r.cfg.minBackoff
	for i := 1; i < attempt && d < r.cfg.maxBackoff; i++ {
		d *= 2
	}
	return min(d, r.cfg.maxBackoff)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
