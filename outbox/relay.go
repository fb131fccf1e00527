package outbox

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/babelqueue/babelqueue-go/core/option"
)

// Relay publishes the pending rows of an outbox. Several relays (in one
// process or many) may run on one table at once; see DESIGN.md.
type Relay struct {
	db     *sql.DB
	ob     *Outbox
	sender Sender
	cfg    relayConfig
	claimQ string

	mu     sync.Mutex
	flying map[int64]struct{} // ids of this relay's batches in flight (PostgreSQL)
}

// NewRelay returns a relay of ob's table in db, publishing through sender.
// It reports every invalid option at once (errors.Join), each matching
// babelqueue.ErrInvalidOption.
func NewRelay(db *sql.DB, ob *Outbox, sender Sender, opts ...RelayOption) (*Relay, error) {
	c := relayConfig{id: randomID(), batch: DefaultBatchSize, inflight: DefaultInFlight, parallel: DefaultParallelism, lease: DefaultLease, poll: DefaultPoll,
		minBackoff: DefaultMinBackoff, maxBackoff: DefaultMaxBackoff, sendTimeout: DefaultSendTimeout, errs: option.Prefixed("outbox: relay")}
	if db == nil {
		c.fail("nil database")
	}
	if ob == nil {
		c.fail("nil outbox")
	}
	if sender == nil {
		c.fail("nil sender")
	}
	if err := option.Apply(&c, &c.errs, opts); err != nil {
		return nil, err
	}
	// A row is claimable when it is due, not leased, and the oldest pending
	// row of its order key: one row per key is in flight at a time.
	pick := `SELECT o.id FROM {t} o
  WHERE o.published_at IS NULL AND o.next_attempt_at <= ? AND o.locked_until <= ?
    AND NOT EXISTS (SELECT 1 FROM {t} p WHERE p.order_key = o.order_key AND p.published_at IS NULL AND p.id < o.id)
  ORDER BY o.id LIMIT ?`
	var claim string
	if ob.dialect == Postgres {
		// PostgreSQL: the claim's transaction locks the rows, skipping
		// those another relay's claim holds, until their outcome commits.
		// Rows of this relay's own batches in flight are passed over
		// before their key is probed (they would only be skipped as
		// locked), by a hashed lookup: NOT IN of a subquery is hashed
		// under any plan, where "<> ALL(array parameter)" compares every
		// row with every id once the statement's plan is generic.
		pg := strings.Replace(pick, "AND o.locked_until <= ?", "AND o.locked_until <= ? AND o.id NOT IN (SELECT unnest(?::bigint[]))", 1)
		claim = ob.q(strings.Replace(pg, "SELECT o.id FROM", "SELECT o.id, o.queue, o.msg_key, o.order_key, o.body, o.headers, o.attempts FROM", 1) + ` FOR UPDATE OF o SKIP LOCKED`)
	} else {
		// SQLite: the statement runs under the single writer lock and
		// leases the rows to this relay.
		claim = ob.q(`WITH c AS (` + pick + `)
UPDATE {t} SET locked_by = ?, locked_until = ? FROM c WHERE {t}.id = c.id
AND {t}.published_at IS NULL AND {t}.locked_until <= ?
RETURNING {t}.id, queue, msg_key, order_key, body, headers, attempts`)
	}
	return &Relay{db: db, ob: ob, sender: sender, cfg: c, claimQ: claim, flying: map[int64]struct{}{}}, nil
}

func (r *Relay) logger() *slog.Logger {
	if r.cfg.logger != nil {
		return r.cfg.logger
	}
	return slog.Default()
}

// batch is the rows of one claim and, on PostgreSQL, the transaction
// whose row locks hold them.
type batch struct {
	rows []row
	tx   *sql.Tx
}

type row struct {
	id       int64
	queue    string
	key      []byte
	orderKey string
	body     []byte
	headers  map[string]string
	attempts int
	err      error
}

// Run publishes until ctx ends, then returns ctx's error once the batches
// in flight are settled. It keeps up to WithInFlight batches in flight,
// each claimed, sent and settled by its own worker; the claims pass each
// other as the claims of several relays do (a claim never takes a row
// whose older row of the same key is still unsettled, so order holds). A
// database error is logged and retried after the poll interval.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range r.cfg.inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(ctx)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// work claims, sends and settles batches until ctx ends.
func (r *Relay) work(ctx context.Context) {
	for ctx.Err() == nil {
		b, err := r.claim(ctx)
		if ctx.Err() != nil {
			b.abandon()
			r.fly(b.rows, false)
			return
		}
		if err == nil && len(b.rows) > 0 {
			if err := r.sendAndSettle(ctx, b); err != nil {
				r.logger().LogAttrs(ctx, slog.LevelError, "outbox: settling a batch failed; its rows stay pending and are sent again",
					slog.String("relay", r.cfg.id), slog.String("error", err.Error()))
			}
			continue
		}
		if err != nil {
			r.logger().LogAttrs(ctx, slog.LevelError, "outbox: claim failed", slog.String("relay", r.cfg.id), slog.String("error", err.Error()))
		}
		t := time.NewTimer(r.cfg.poll)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// RunOnce claims one batch, sends it and records the outcome of each row.
// It returns the number of rows claimed.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	b, err := r.claim(ctx)
	if err != nil || len(b.rows) == 0 {
		return 0, err
	}
	return len(b.rows), r.sendAndSettle(ctx, b)
}

// claim takes the next batch: on PostgreSQL rows locked by a transaction
// left open until settle, on SQLite rows leased to this relay. A claim
// that found nothing holds nothing.
func (r *Relay) claim(ctx context.Context) (batch, error) {
	now := r.ob.now().UnixMilli()
	var b batch
	var res *sql.Rows
	var err error
	if r.ob.dialect == Postgres {
		// Not ended by ctx: a batch in flight when Run stops is settled.
		if b.tx, err = r.db.BeginTx(context.WithoutCancel(ctx), nil); err != nil {
			return batch{}, fmt.Errorf("outbox: claim: begin: %w", err)
		}
		// A mark lost in a crash of the database only sends its row again.
		if _, err = b.tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`); err == nil {
			res, err = b.tx.QueryContext(ctx, r.claimQ, now, now, r.flyingIDs(), r.cfg.batch)
		}
	} else {
		res, err = r.db.QueryContext(ctx, r.claimQ, now, now, r.cfg.batch, r.cfg.id, now+r.cfg.lease.Milliseconds(), now)
	}
	if err == nil {
		b.rows, err = scanRows(res)
	}
	if err != nil || len(b.rows) == 0 {
		b.abandon()
		return batch{}, err
	}
	if b.tx != nil {
		r.fly(b.rows, true)
	}
	return b, nil
}

// fly adds rows to (or removes them from) the batches in flight.
func (r *Relay) fly(rows []row, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rw := range rows {
		if on {
			r.flying[rw.id] = struct{}{}
		} else {
			delete(r.flying, rw.id)
		}
	}
}

func (r *Relay) flyingIDs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int64, 0, len(r.flying))
	for id := range r.flying {
		ids = append(ids, id)
	}
	return ids
}

func scanRows(res *sql.Rows) ([]row, error) {
	defer res.Close()
	var out []row
	for res.Next() {
		var rw row
		var h string
		if err := res.Scan(&rw.id, &rw.queue, &rw.key, &rw.orderKey, &rw.body, &h, &rw.attempts); err != nil {
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
	slices.SortFunc(out, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

// abandon ends the claim's transaction, if any, without an outcome: its
// rows stay pending.
func (b batch) abandon() {
	if b.tx != nil {
		_ = b.tx.Rollback()
	}
}

// sendAndSettle sends the batch's rows (in id order) and records the
// outcome of each: in one SendBatch call when the sender batches, else at
// most parallel sends at once. A row after a failed row of its order key
// is not marked published even when it was acknowledged: it goes again
// after the older one, so the last copy a consumer sees keeps the key's
// order.
func (r *Relay) sendAndSettle(ctx context.Context, b batch) error {
	rows := b.rows
	sctx, cancel := context.WithTimeout(ctx, r.cfg.sendTimeout)
	defer cancel()
	if bs, ok := batches(r.sender); ok {
		msgs := make([]Message, len(rows))
		for i, rw := range rows {
			msgs[i] = Message{Queue: rw.queue, Key: rw.key, Body: rw.body, Headers: rw.headers, OrderKey: rw.orderKey}
		}
		if errs := bs.SendBatch(sctx, msgs); errs != nil {
			for i := range rows {
				if i < len(errs) {
					rows[i].err = errs[i]
				} else {
					rows[i].err = errors.New("outbox: sender returned no outcome")
				}
			}
		}
	} else {
		sem := make(chan struct{}, r.cfg.parallel)
		var wg sync.WaitGroup
		for i := range rows {
			sem <- struct{}{}
			wg.Add(1)
			go func(rw *row) {
				defer func() { <-sem; wg.Done() }()
				rw.err = r.sender.Send(sctx, rw.queue, rw.key, rw.body, rw.headers)
			}(&rows[i])
		}
		wg.Wait()
	}
	failed := map[string]bool{}
	for i := range rows {
		rw := &rows[i]
		if failed[rw.orderKey] && rw.err == nil {
			rw.err = ErrEarlierFailed
		}
		if rw.err != nil {
			failed[rw.orderKey] = true
		}
	}
	return r.settle(context.WithoutCancel(ctx), b)
}

// settle marks the sent rows published and schedules the failed ones for
// a retry, a statement per kind of outcome (on SQLite per 500 rows of
// it), all only while this relay still holds them (in the claim's
// transaction on PostgreSQL, committed at the end; by lease on SQLite). A
// row held back by an earlier failure of its key is released without
// counting an attempt.
func (r *Relay) settle(ctx context.Context, b batch) error {
	now := r.ob.now().UnixMilli()
	type failure struct {
		attempts int
		msg      string
	}
	var ok, held []int64
	failed := map[failure][]int64{}
	for _, rw := range b.rows {
		switch {
		case rw.err == nil:
			ok = append(ok, rw.id)
		case errors.Is(rw.err, ErrEarlierFailed):
			held = append(held, rw.id)
		default:
			f := failure{rw.attempts + 1, truncate(rw.err.Error(), 1000)}
			failed[f] = append(failed[f], rw.id)
		}
	}
	var errs []error
	update := func(what, set string, ids []int64, args ...any) {
		if b.tx != nil && len(ids) > 0 {
			// PostgreSQL: one statement whatever the count, the ids as one
			// array parameter.
			if _, err := b.tx.ExecContext(ctx, r.ob.q(`UPDATE {t} SET `+set+` WHERE id = ANY(?::bigint[])`), append(args, ids)...); err != nil {
				errs = append(errs, fmt.Errorf("outbox: %s: %w", what, err))
			}
			return
		}
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), 500)]
			ids = ids[len(chunk):]
			a := append(append([]any(nil), args...), r.cfg.id)
			for _, id := range chunk {
				a = append(a, id)
			}
			in := ` id IN (` + strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",") + `)`
			if _, err := r.db.ExecContext(ctx, r.ob.q(`UPDATE {t} SET `+set+` WHERE locked_by = ? AND`+in), a...); err != nil {
				errs = append(errs, fmt.Errorf("outbox: %s: %w", what, err))
			}
		}
	}
	update("mark published", `published_at = ?, locked_until = 0`, ok, now)
	if b.tx == nil {
		update("release rows held back", `locked_until = 0, locked_by = ''`, held)
	}
	for f, ids := range failed {
		delay := r.backoff(f.attempts)
		r.logger().LogAttrs(ctx, slog.LevelWarn, "outbox: send failed; retrying", slog.Int("rows", len(ids)), slog.Int64("first_row", ids[0]),
			slog.Int("attempts", f.attempts), slog.Duration("retry_in", delay), slog.String("error", f.msg))
		update("record failure", `attempts = attempts + 1, last_error = ?, next_attempt_at = ?, locked_until = 0, locked_by = ''`, ids, f.msg, now+delay.Milliseconds())
	}
	if b.tx != nil {
		if len(errs) > 0 {
			_ = b.tx.Rollback()
		} else if err := b.tx.Commit(); err != nil {
			errs = append(errs, fmt.Errorf("outbox: commit the outcome: %w", err))
		}
		r.fly(b.rows, false)
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
