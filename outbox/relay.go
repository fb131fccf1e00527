package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/jackc/pgx/v5/pgtype"
)

// Relay publishes the pending rows of an outbox. Several relays (in one
// process or many) may run on one table at once; see DESIGN.md.
type Relay struct {
	db     *sql.DB
	ob     *Outbox
	sender Sender
	cfg    relayConfig
	claimQ string // SQLite: the leasing claim; PostgreSQL: the due rows of the buckets locked by lockQ
	lockQ  string // PostgreSQL: try-lock key buckets, return those taken
	lockNS int32  // PostgreSQL: the advisory lock namespace of the table's key buckets
	next   atomic.Uint32
	// PostgreSQL through pgx (pgxclaim.go): the claim reading binary
	// ctids, the deletion by them, the failures' update.
	lockPgxQ, claimPgxQ, claimAheadPgxQ, deletePgxQ, failPgxQ string
	// plainSQL: the PostgreSQL claim goes through database/sql (the
	// driver is not pgx's).
	plainSQL atomic.Bool
	// floors: where the claims through pgx start in each key bucket.
	floors floors
	// claimedAhead counts the claims made ahead that found rows (chain.go).
	claimedAhead atomic.Int64
}

// keyBuckets is how many advisory locks (PostgreSQL) the order keys of a
// table are hashed into: a claim holds a share of them, and with them
// every row of their keys, until its outcome commits.
const keyBuckets = 64

// bucketsSetting is the transaction-local setting (PostgreSQL, through
// pgx) that holds the key buckets a claim's transaction locked.
const bucketsSetting = "babelqueue.outbox_buckets"

// bucketOf is the SQL of the key bucket of the order key in column col
// (PostgreSQL), the same in the claim and in the index it scans, which
// holds it beside the id.
func bucketOf(col string) string {
	return "(hashtext(" + col + ") & " + strconv.Itoa(keyBuckets-1) + ")"
}

// NewRelay returns a relay of ob's table in db, publishing through sender.
// It reports every invalid option at once (errors.Join), each matching
// babelqueue.ErrInvalidOption.
func NewRelay(db *sql.DB, ob *Outbox, sender Sender, opts ...RelayOption) (*Relay, error) {
	c := relayConfig{id: randomID(), batch: DefaultBatchSize, waves: DefaultWaves, inflight: DefaultInFlight, parallel: DefaultParallelism, lease: DefaultLease, poll: DefaultPoll,
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
	r := &Relay{db: db, ob: ob, sender: sender, cfg: c}
	if ob.dialect == Postgres {
		// PostgreSQL: the claim's transaction holds the advisory locks of
		// a share of the key buckets (try-locks: a bucket another claim
		// holds is passed over, never waited for), so every row of a key
		// is the business of one claim at a time; the rows are read by a
		// second statement, once the locks are held (see claim).
		r.lockNS = lockNamespace(ob.table)
		r.next.Store(uint32(rand.IntN(keyBuckets)))
		// The buckets free now, tried from a given one on, up to a share.
		// The same statement (one round trip fewer) sets the transaction's
		// settings: a deletion lost in a crash of the database only sends
		// its row again (synchronous_commit off), and the claim and delete
		// statements run their cached generic plan, which is the plan a
		// custom one picks (an index scan in id order) without planning it
		// anew for every claim.
		lock := `SELECT b FROM (SELECT set_config('synchronous_commit', 'off', true) AS sc, set_config('plan_cache_mode', 'force_generic_plan', true) AS pc) c,
  (SELECT (g + ?) % ` + strconv.Itoa(keyBuckets) + ` AS b FROM generate_series(0, ` + strconv.Itoa(keyBuckets-1) + `) g) s
  WHERE pg_try_advisory_xact_lock(?, b) LIMIT ?`
		r.lockQ = ob.q(lock)
		// Through pgx the buckets taken are also kept in a setting of the
		// transaction, which the rows' statement reads, so the begin, the
		// locks and the rows go in one round trip (pgxclaim.go).
		// It also reads the id sequence's last value, before the rows'
		// snapshot, and the server's start time, for the floors (floors.go).
		r.lockPgxQ = ob.q(`SELECT set_config('` + bucketsSetting + `', coalesce(array_agg(b)::text, '{}'), true),
  ` + seqLast + `, ` + serverStart + `
  FROM (` + lock + `) l`)
		// failedWaits: a failed row waits out its backoff at now (a
		// placeholder); keyFree: no older row of o's key does.
		failedWaits := func(now string) string {
			return `(SELECT EXISTS (SELECT 1 FROM {t} f WHERE f.attempts > 0 AND f.published_at IS NULL AND f.next_attempt_at > ` + now + `))`
		}
		keyFree := func(now string) string {
			return `(NOT ` + failedWaits(now) + `
         OR NOT EXISTS (SELECT 1 FROM {t} p WHERE p.order_key = o.order_key AND p.id < o.id
                        AND p.attempts > 0 AND p.published_at IS NULL AND p.next_attempt_at > ` + now + `))`
		}
		// The due rows of those buckets in id order, each passed over when
		// an older row of its key failed and is not due yet. The range of
		// the buckets (lowest to highest, exact when they are contiguous)
		// is a condition on the index's second column: the scan in id
		// order passes over other buckets' rows in the index, without
		// reading them from the table (a bucket array cannot be: it would
		// make the scan unordered). The probe of
		// the retried rows' partial index runs per row only when that
		// index holds a row not due (an InitPlan, evaluated once, says so):
		// while the broker accepts everything, not at all.
		b := bucketOf("o.order_key")
		r.claimQ = ob.q(`SELECT o.id, o.queue, o.msg_key, o.order_key, o.body, o.headers, o.attempts, o.ctid::text FROM {t} o
  WHERE o.published_at IS NULL AND o.next_attempt_at <= ?
    AND ` + b + ` = ANY(?::int[]) AND ` + b + ` >= ? AND ` + b + ` <= ?
    AND ` + keyFree("?") + `
  ORDER BY o.id LIMIT ?`)
		// The setting read once per statement (InitPlans), not per row.
		taken := `unnest(current_setting('` + bucketsSetting + `')::int[])`
		// Through pgx the rows start past the lowest floor of the buckets
		// ($2, the relay's floors by bucket; floors.go) while the server is
		// the one they were raised on ($4, its start time) and its id
		// sequence has not gone back below them ($5) and the id column's
		// default takes the writer's transaction id first, and come with
		// their bucket, their snapshot's xmin, the claim's own transaction
		// id (taken here, after the lock statement read the sequence) and
		// whether a failed row waits out its backoff (subqueries, evaluated
		// once).
		claimPast := func(floor, also string) string {
			return ob.q(`SELECT o.id, o.queue, o.msg_key, o.order_key, o.body, o.headers, o.attempts, o.ctid, ` + b + `::int4,
    (SELECT pg_snapshot_xmin(s)::text::int8 FROM pg_current_snapshot() s), (SELECT pg_current_xact_id()::text::int8),
    ` + failedWaits("$1") + `
  FROM {t} o
  WHERE o.id > ` + floor + `
    AND o.published_at IS NULL AND o.next_attempt_at <= $1
    AND ` + b + ` = ANY(ARRAY(SELECT ` + taken + `)) AND ` + b + ` >= (SELECT min(x) FROM ` + taken + ` x) AND ` + b + ` <= (SELECT max(x) FROM ` + taken + ` x)
    AND ` + keyFree("$1") + also + `
  ORDER BY o.id LIMIT $3`)
		}
		r.claimPgxQ = claimPast(`(SELECT CASE WHEN `+serverStart+` = $4 AND `+seqLast+` >= $5 AND `+xidFirstCheck+`
      THEN coalesce(min(($2::int8[])[x + 1]), 0) ELSE 0 END FROM `+taken+` x)`, "")
		// A claim ahead, in the transaction of the claim before it (chain.go):
		// past the last row that claim read, $2, and none at all unless the
		// id column's default takes the transaction id first (the horizon
		// that allowed it rests on that).
		r.claimAheadPgxQ = claimPast(`$2::int8`, `
    AND `+xidFirstCheck)
		r.deletePgxQ = ob.q(`DELETE FROM {t} WHERE ctid = ANY(?::tid[])`)
		r.failPgxQ = ob.q(failStmt + ` id = ANY(?::bigint[])`)
		r.plainSQL.Store(c.plainSQL)
		return r, nil
	}
	// SQLite: one statement under the single writer lock leases to this
	// relay the rows that are due, not leased, and the oldest pending row
	// of their order key: one row per key is in flight at a time.
	r.claimQ = ob.q(`WITH c AS (SELECT o.id FROM {t} o
  WHERE o.published_at IS NULL AND o.next_attempt_at <= ? AND o.locked_until <= ?
    AND NOT EXISTS (SELECT 1 FROM {t} p WHERE p.order_key = o.order_key AND p.published_at IS NULL AND p.id < o.id)
  ORDER BY o.id LIMIT ?)
UPDATE {t} SET locked_by = ?, locked_until = ? FROM c WHERE {t}.id = c.id
AND {t}.published_at IS NULL AND {t}.locked_until <= ?
RETURNING {t}.id, queue, msg_key, order_key, body, headers, attempts`)
	return r, nil
}

// lockNamespace is the first key of the table's advisory locks: a hash of
// its name, so the relays of different tables do not contend (unless two
// names collide, which only makes them share buckets).
func lockNamespace(table string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte("babelqueue-outbox:" + table))
	return int32(h.Sum32())
}

func (r *Relay) logger() *slog.Logger {
	if r.cfg.logger != nil {
		return r.cfg.logger
	}
	return slog.Default()
}

// batch is the rows of one claim and, on PostgreSQL, the transaction
// whose key-bucket locks hold them.
type batch struct {
	rows []row
	tx   *sql.Tx      // PostgreSQL through database/sql
	pg   *pgxConn     // PostgreSQL through pgx
	fl   *claimFloors // PostgreSQL through pgx: what the claim tells the floors
}

type row struct {
	id       int64
	queue    string
	key      []byte
	orderKey string
	body     string // read as a string: the Outgoing a transport sends holds one
	headers  map[string]string
	attempts int
	ctid     string     // PostgreSQL through database/sql: where the row is, stable while the claim holds its key
	tid      pgtype.TID // the same through pgx, binary
	err      error
	wave     int   // the send it goes in (waves.go)
	bucket   int32 // its key bucket (PostgreSQL through pgx)
}

// Run publishes until ctx ends, then returns ctx's error once the batches
// in flight are settled. It sends up to WithInFlight waves at once and
// meanwhile claims and settles other batches: 2×WithInFlight workers each
// claim a batch, send its waves and settle it in turn, and a worker waits
// for a send slot only to send, so the database round trips of one batch
// overlap the sending of another. The claims pass each other as the claims of several
// relays do (a claim never takes a row of a key another unsettled claim
// holds, so order holds). With WithClaimAhead (PostgreSQL through pgx)
// WithInFlight workers each claim their next batch while they send one
// (chain.go). A database error is logged and retried after the poll
// interval.
func (r *Relay) Run(ctx context.Context) error {
	workers := 2 * r.cfg.inflight
	if r.chains() {
		workers = r.cfg.inflight
	}
	sends := make(chan struct{}, r.cfg.inflight)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(ctx, max(keyBuckets/workers, 1), sends)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// work claims (up to share key buckets), sends (holding a slot of sends)
// and settles batches until ctx ends.
//
// Through pgx a settlement also claims the worker's next batch, in the
// same round trip and on the same connection (settlePgx), and with
// WithClaimAhead the worker claims ahead while it sends (sendAhead).
func (r *Relay) work(ctx context.Context, share int, sends chan struct{}) {
	var next batch // claimed with the last settlement
	defer func() { next.abandon() }()
	for ctx.Err() == nil {
		b, err := next, error(nil)
		if next = (batch{}); len(b.rows) == 0 {
			b, err = r.claim(ctx, share)
		}
		if ctx.Err() != nil {
			b.abandon()
			return
		}
		if err == nil && len(b.rows) > 0 {
			if r.chains() && b.pg != nil {
				next, err = r.sendAhead(ctx, b, sends, share)
			} else {
				next, err = r.sendAndSettle(ctx, b, sends, share)
			}
			if err != nil {
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
	b, err := r.claim(ctx, keyBuckets)
	if err != nil || len(b.rows) == 0 {
		return 0, err
	}
	_, err = r.sendAndSettle(ctx, b, nil, 0)
	return len(b.rows), err
}

// claim takes the next batch: on PostgreSQL the rows of the key buckets
// whose advisory locks its transaction holds until settle, on SQLite rows
// leased to this relay. A claim that found nothing holds nothing.
//
// On PostgreSQL share bounds the key buckets it takes: Run's workers each
// take their share (keyBuckets/WithInFlight), so that their claims find
// different rows; RunOnce takes every free bucket.
func (r *Relay) claim(ctx context.Context, share int) (batch, error) {
	now := r.ob.now().UnixMilli()
	if r.ob.dialect == Postgres && !r.plainSQL.Load() {
		b, err := r.claimPgx(ctx, share, now)
		if !errors.Is(err, errNotPgx) {
			return b, err
		}
		r.plainSQL.Store(true)
	}
	var b batch
	var res *sql.Rows
	var err error
	if r.ob.dialect == Postgres {
		// Not ended by ctx: a batch in flight when Run stops is settled.
		if b.tx, err = r.db.BeginTx(context.WithoutCancel(ctx), nil); err != nil {
			return batch{}, fmt.Errorf("outbox: claim: begin: %w", err)
		}
		var buckets []int32
		buckets, err = r.lockBuckets(ctx, b.tx, share)
		if err == nil && len(buckets) > 0 {
			// A new statement, so a new snapshot, taken once every lock is
			// held: it sees the outcome of every earlier claim of these
			// buckets (committed or rolled back before its lock was
			// released), and no other claim changes their rows until this
			// one ends.
			lo, hi := bucketRange(buckets)
			res, err = b.tx.QueryContext(ctx, r.claimQ, now, buckets, lo, hi, now, now, r.claimLimit())
		}
	} else {
		res, err = r.db.QueryContext(ctx, r.claimQ, now, now, r.cfg.batch, r.cfg.id, now+r.cfg.lease.Milliseconds(), now)
	}
	if err == nil && res != nil {
		b.rows, err = scanRows(res, r.ob.dialect == Postgres, r.claimLimit(), r.waves(), r.cfg.batch)
	}
	if err != nil || len(b.rows) == 0 {
		b.abandon()
		return batch{}, err
	}
	return b, nil
}

// lockBuckets takes, in tx, the advisory locks of the key buckets that
// no other claim holds, up to share of them, trying from a bucket that
// moves on with every claim, and returns them.
func (r *Relay) lockBuckets(ctx context.Context, tx *sql.Tx, share int) ([]int32, error) {
	res, err := tx.QueryContext(ctx, r.lockQ, r.nextFrom(share), r.lockNS, share)
	if err != nil {
		return nil, fmt.Errorf("outbox: claim: lock key buckets: %w", err)
	}
	defer res.Close()
	var buckets []int32
	for res.Next() {
		var b int32
		if err := res.Scan(&b); err != nil {
			return nil, fmt.Errorf("outbox: claim: lock key buckets: %w", err)
		}
		buckets = append(buckets, b)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("outbox: claim: lock key buckets: %w", err)
	}
	return buckets, nil
}

// nextFrom is the bucket a claim of share buckets tries first: the next
// multiple of share, so that the claims of a relay's workers take
// contiguous buckets (one range, see bucketRange) while they are free.
func (r *Relay) nextFrom(share int) int32 {
	return int32(r.next.Add(1) * uint32(share) % keyBuckets)
}

// bucketRange returns the lowest and highest of buckets (not empty).
func bucketRange(buckets []int32) (lo, hi int32) {
	return slices.Min(buckets), slices.Max(buckets)
}

// scanRows reads the claimed rows (withCTID: and their ctid), then
// orders them in waves of up to size rows (inWaves).
// The rows are read into one row variable through one set of pointers
// (no per-row allocation for them), into a slice of room for limit rows.
func scanRows(res *sql.Rows, withCTID bool, limit, waves, size int) ([]row, error) {
	defer res.Close()
	out := make([]row, 0, limit)
	var rw row
	var h string
	dest := []any{&rw.id, &rw.queue, &rw.key, &rw.orderKey, &rw.body, &h, &rw.attempts}
	if withCTID {
		dest = append(dest, &rw.ctid)
	}
	for res.Next() {
		rw = row{}
		if err := res.Scan(dest...); err != nil {
			return nil, fmt.Errorf("outbox: claim: %w", err)
		}
		// Write stores nil headers as "null" (the common case): no decode.
		if h != "null" {
			if err := json.Unmarshal([]byte(h), &rw.headers); err != nil {
				return nil, fmt.Errorf("outbox: row %d: headers: %w", rw.id, err)
			}
		}
		out = append(out, rw)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	return inWaves(out, waves, size), nil
}

// waves is how many rows of one order key a claim sends: WithWaves on
// PostgreSQL, one on SQLite (whose claim leases each key's oldest pending
// row only).
func (r *Relay) waves() int {
	if r.ob.dialect == Postgres {
		return r.cfg.waves
	}
	return 1
}

// claimLimit is how many rows a claim reads.
func (r *Relay) claimLimit() int {
	return r.waves() * r.cfg.batch
}

// abandon ends the claim's transaction, if any, without an outcome: its
// rows stay pending.
func (b batch) abandon() {
	if b.pg != nil {
		b.pg.close()
	}
	if b.tx != nil {
		_ = b.tx.Rollback()
	}
}

// sendAndSettle sends the batch's rows wave by wave (sendWaves) and
// records the outcome of each: a wave in one SendBatch call when the
// sender batches, else one Send per row, at most parallel at once. A row
// after a failed row of its order key is not published (nor sent, without
// SendBatch) even when it was acknowledged: it goes again after the older
// one, so the last copy a consumer sees keeps the key's order.
//
// A non-nil sends bounds the waves being sent at once: a slot is taken
// for the send alone. When ctx ends before the first wave has a slot, the
// batch is abandoned unsent (its rows stay pending).
//
// A share above zero asks for the next claim (of up to share buckets)
// with the settlement, which it returns when the PostgreSQL claim goes
// through pgx and ctx has not ended (else an empty batch).
func (r *Relay) sendAndSettle(ctx context.Context, b batch, sends chan struct{}, share int) (batch, error) {
	if !r.sendWaves(ctx, b.rows, sends) {
		b.abandon()
		return batch{}, nil
	}
	if ctx.Err() != nil {
		share = 0
	}
	return r.settle(context.WithoutCancel(ctx), b, share)
}

// send sends rows and records each one's outcome in it.
func (r *Relay) send(ctx context.Context, rows []row) {
	sctx, cancel := context.WithTimeout(ctx, r.cfg.sendTimeout)
	defer cancel()
	if bs, ok := batches(r.sender); ok {
		var errs []error
		if tbs, ok := transportBatches(bs); ok {
			// The rows go to the transport as they were read: no copy of
			// their bodies, one allocation for all their Outgoings.
			outs, msgs := make([]*driver.Outgoing, len(rows)), make([]driver.Outgoing, len(rows))
			for i, rw := range rows {
				msgs[i] = driver.Outgoing{Intent: driver.IntentPublish, Queue: rw.queue, Key: rw.key, Body: rw.body, Headers: rw.headers}
				outs[i] = &msgs[i]
			}
			errs = sendOutgoing(sctx, tbs, outs)
		} else {
			msgs := make([]Message, len(rows))
			for i, rw := range rows {
				msgs[i] = Message{Queue: rw.queue, Key: rw.key, Body: []byte(rw.body), Headers: rw.headers, OrderKey: rw.orderKey}
			}
			errs = bs.SendBatch(sctx, msgs)
		}
		if errs != nil {
			for i := range rows {
				if i < len(errs) {
					rows[i].err = errs[i]
				} else {
					rows[i].err = errors.New("outbox: sender returned no outcome")
				}
			}
		}
	} else {
		r.sendByKey(sctx, rows)
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
}

// sendByKey sends rows (in id order) with Send: the rows of one order key
// one after another, stopping at its first failure (ErrEarlierFailed for
// the rest), at most parallel keys at once.
func (r *Relay) sendByKey(ctx context.Context, rows []row) {
	var keys []string
	byKey := map[string][]*row{}
	for i := range rows {
		k := rows[i].orderKey
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], &rows[i])
	}
	sem := make(chan struct{}, r.cfg.parallel)
	var wg sync.WaitGroup
	for _, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func(group []*row) {
			defer func() { <-sem; wg.Done() }()
			var err error
			for _, rw := range group {
				if err != nil {
					rw.err = ErrEarlierFailed
					continue
				}
				err = r.sender.Send(ctx, rw.queue, rw.key, []byte(rw.body), rw.headers)
				rw.err = err
			}
		}(byKey[k])
	}
	wg.Wait()
}

// settle deletes the sent rows and schedules the failed ones for a retry,
// a statement per kind of outcome (on SQLite per 500 rows of it), all only
// while this relay still holds them (in the claim's transaction on
// PostgreSQL, committed at the end, which releases its key locks; by
// lease on SQLite). A row held back by an earlier failure of its key is
// released without counting an attempt.
func (r *Relay) settle(ctx context.Context, b batch, share int) (batch, error) {
	now := r.ob.now().UnixMilli()
	for _, rw := range b.rows {
		if rw.err != nil && b.fl != nil {
			b.fl.keep(rw.bucket, rw.id) // it stays pending
		}
	}
	o := outcomesOf(b.rows)
	if b.pg != nil {
		return r.settlePgx(ctx, b, o.okTID, o.failed, now, share)
	}
	ok, okAt, held, failed := o.ok, o.okAt, o.held, o.failed
	var errs []error
	// exec runs stmt (ending in WHERE) on ids.
	exec := func(what, stmt string, ids []int64, args ...any) {
		if b.tx != nil && len(ids) > 0 {
			// PostgreSQL: one statement whatever the count, the ids as one
			// array parameter.
			if _, err := b.tx.ExecContext(ctx, r.ob.q(stmt+` id = ANY(?::bigint[])`), append(args, ids)...); err != nil {
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
			if _, err := r.db.ExecContext(ctx, r.ob.q(stmt+` locked_by = ? AND`+in), a...); err != nil {
				errs = append(errs, fmt.Errorf("outbox: %s: %w", what, err))
			}
		}
	}
	// Published rows are deleted: one index-free removal per row, where a
	// mark would write a new version of it with its index entries. On
	// PostgreSQL by ctid (a TID scan, no index lookup): no other claim
	// changes a row of a key this claim holds, and a table rewrite (VACUUM
	// FULL, CLUSTER) waits for this transaction's table lock, so each ctid
	// is still its row.
	if b.tx != nil && len(okAt) > 0 {
		if _, err := b.tx.ExecContext(ctx, r.ob.q(`DELETE FROM {t} WHERE ctid = ANY(?::tid[])`), okAt); err != nil {
			errs = append(errs, fmt.Errorf("outbox: delete published rows: %w", err))
		}
	} else {
		exec("delete published rows", `DELETE FROM {t} WHERE`, ok)
	}
	if b.tx == nil {
		exec("release rows held back", `UPDATE {t} SET locked_until = 0, locked_by = '' WHERE`, held)
	}
	for f, ids := range failed {
		delay := r.logFailure(ctx, f, ids)
		exec("record failure", failStmt, ids, f.msg, now+delay.Milliseconds())
	}
	if b.tx != nil {
		if len(errs) > 0 {
			_ = b.tx.Rollback()
		} else if err := b.tx.Commit(); err != nil {
			errs = append(errs, fmt.Errorf("outbox: commit the outcome: %w", err))
		}
	}
	return batch{}, errors.Join(errs...)
}

// outcomes are a batch's rows by their send's outcome.
type outcomes struct {
	ok     []int64                      // acknowledged
	okAt   []string                     // their ctids as text (database/sql)
	okTID  pgtype.FlatArray[pgtype.TID] // their ctids, binary (pgx; no reflection to encode them)
	held   []int64                      // held back after an earlier failure of their key
	failed map[failure][]int64          // failed, by attempt and error
}

// outcomesOf sorts rows by their send's outcome.
func outcomesOf(rows []row) outcomes {
	o := outcomes{failed: map[failure][]int64{}}
	for _, rw := range rows {
		switch {
		case rw.err == nil:
			o.ok = append(o.ok, rw.id)
			o.okAt = append(o.okAt, rw.ctid)
			o.okTID = append(o.okTID, rw.tid)
		case errors.Is(rw.err, ErrEarlierFailed):
			o.held = append(o.held, rw.id)
		default:
			f := failure{rw.attempts + 1, truncate(rw.err.Error(), 1000)}
			o.failed[f] = append(o.failed[f], rw.id)
		}
	}
	return o
}

// failure is the outcome of a failed send: the row's attempts, with this
// one, and the error.
type failure struct {
	attempts int
	msg      string
}

// failStmt records a failure (ending in WHERE): the attempt, the error,
// the next attempt's time.
const failStmt = `UPDATE {t} SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, locked_until = 0, locked_by = '' WHERE`

// logFailure logs the failure of ids and returns their retry delay.
func (r *Relay) logFailure(ctx context.Context, f failure, ids []int64) time.Duration {
	delay := r.backoff(f.attempts)
	r.logger().LogAttrs(ctx, slog.LevelWarn, "outbox: send failed; retrying", slog.Int("rows", len(ids)), slog.Int64("first_row", ids[0]),
		slog.Int("attempts", f.attempts), slog.Duration("retry_in", delay), slog.String("error", f.msg))
	return delay
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
