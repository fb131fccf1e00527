package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgxConn is a pooled connection of the relay's *sql.DB, held by one
// PostgreSQL claim from its begin to its commit, when the database/sql
// driver is pgx's (jackc/pgx/v5/stdlib). The claim, the deletion and the
// commit go through the *pgx.Conn under it (sql.Conn.Raw): the rows are
// scanned by pgx's own scan plans straight from the wire into the row's
// fields, with no driver.Value per column and no second conversion by
// database/sql, and the ctids stay binary (pgtype.TID, no text). Any other
// driver takes the database/sql path (claimSQL).
type pgxConn struct{ conn *sql.Conn }

// pgxConner is what pgx's database/sql connection (stdlib.Conn) has.
type pgxConner interface{ Conn() *pgx.Conn }

// errNotPgx: the relay's driver is not pgx's.
var errNotPgx = errors.New("outbox: the database/sql driver is not pgx")

// do runs f on the pgx connection under c.
func (c *pgxConn) do(f func(*pgx.Conn) error) error {
	return c.conn.Raw(func(dc any) error {
		pc, ok := dc.(pgxConner)
		if !ok {
			return errNotPgx
		}
		return f(pc.Conn())
	})
}

// close rolls back whatever the claim left open and hands the connection
// back to the pool (a connection still in a transaction, because the
// rollback failed, is discarded by the driver when it is next taken).
func (c *pgxConn) close() {
	_ = c.do(func(pc *pgx.Conn) error {
		if pc.PgConn().TxStatus() == 'I' {
			return nil
		}
		_, err := pc.Exec(context.Background(), "rollback")
		return err
	})
	_ = c.conn.Close()
}

// claimPgx is claim on PostgreSQL through pgx. It returns errNotPgx,
// holding nothing, when the driver is another.
func (r *Relay) claimPgx(ctx context.Context, share int, now int64) (batch, error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return batch{}, fmt.Errorf("outbox: claim: connection: %w", err)
	}
	b := batch{pg: &pgxConn{conn: conn}}
	err = b.pg.do(func(pc *pgx.Conn) error {
		var q pgx.Batch
		r.queueClaim(&q, share, now, nil)
		// Not ended by ctx: a batch in flight when Run stops is settled.
		br := pc.SendBatch(context.WithoutCancel(ctx), &q)
		defer br.Close()
		b.rows, b.fl, err = r.readClaim(pc, br)
		return err
	})
	if err != nil || len(b.rows) == 0 {
		b.abandon()
		if errors.Is(err, errNotPgx) {
			return batch{}, errNotPgx
		}
		if err != nil {
			r.floors.drop()
		}
		return batch{}, err
	}
	return b, nil
}

// queueClaim queues a claim: the begin, the bucket locks and the rows,
// sent in one round trip (a pipeline: the begin makes it an explicit
// transaction, which the other statements join). The rows' statement is a
// new statement, so a new snapshot, taken once every lock is held (see
// claim); it reads the buckets locked from the transaction's setting that
// the locks' statement wrote. A claim queued behind a settlement starts
// past the floors as that settlement raises them (floors.after; nil
// settled: the floors as they are).
func (r *Relay) queueClaim(q *pgx.Batch, share int, now int64, settled *claimFloors) {
	q.Queue("begin")
	q.Queue(r.lockPgxQ, r.nextFrom(share), r.lockNS, share)
	floors, server, highest := r.floors.after(time.UnixMilli(now), settled)
	q.Queue(r.claimPgxQ, now, floors, r.claimLimit(), server, highest)
}

// readClaim reads the results of queueClaim's statements, the last ones
// of br, and returns the rows claimed and what they tell the floors.
func (r *Relay) readClaim(pc *pgx.Conn, br pgx.BatchResults) ([]row, *claimFloors, error) {
	if _, err := br.Exec(); err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: begin: %w", err)
	}
	var taken string
	fl := &claimFloors{}
	if err := br.QueryRow().Scan(&taken, &fl.seq, &fl.server); err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: lock key buckets: %w", err)
	}
	buckets, err := parseBuckets(taken)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: lock key buckets: %w", err)
	}
	fl.buckets = buckets
	res, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: %w", err)
	}
	rows, err := scanPgxRows(res, r.claimLimit(), r.waves(), r.cfg.batch, fl)
	if err != nil {
		return nil, nil, err
	}
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("outbox: claim: %w", err)
	}
	// Known once the pipeline's end is read: the rows are held only if
	// the begin did open the transaction the locks belong to.
	if st := pc.PgConn().TxStatus(); st != 'T' {
		return nil, nil, fmt.Errorf("outbox: claim: transaction status %q after begin, want T", st)
	}
	if len(rows) > 0 {
		fl.ok = true
		r.floors.read(fl)
	}
	return rows, fl, nil
}

// parseBuckets parses the locked buckets as the lock statement returns
// them: an int array's text, such as {3,4,5}.
func parseBuckets(s string) ([]int32, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if s == "" {
		return nil, nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= keyBuckets {
			return nil, fmt.Errorf("bucket %q out of range", f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// scanPgxRows reads the claimed rows (with their binary ctid and bucket)
// and, into fl, their snapshot's xmin, the claim's transaction id and what
// the floors need, then orders them in waves of up to size rows
// (inWaves). The rows are decoded from their raw values when their columns
// come in the binary format (pgxrows.go), else through pgx's Scan.
func scanPgxRows(res pgx.Rows, limit, waves, size int, fl *claimFloors) ([]row, error) {
	defer res.Close()
	out := make([]row, 0, limit)
	var rw row
	// Through Scan:
	// The headers column is not scanned (nil): Write stores nil headers as
	// "null", the common case, which needs no decode.
	// The queue is read as the previous row's string when it is the
	// same (usually: one string per batch, not per row).
	// The statement's own values are the same in every row: read from the
	// first one only.
	queue := &sameString{}
	first := []any{&rw.id, queue, &rw.key, &rw.orderKey, (*bodyString)(&rw.body), nil, &rw.attempts, &rw.tid, &rw.bucket, &fl.xmin, &fl.xid, &fl.blocked}
	rest := append(first[:9:9], nil, nil, nil)
	dest := first
	raw := rawClaimColumns(res.FieldDescriptions())
	var arena rowArena
	for res.Next() {
		if raw {
			vals := res.RawValues()
			if err := decodeClaimRow(vals, &rw, &arena, queue); err != nil {
				return nil, fmt.Errorf("outbox: claim: %w", err)
			}
			if len(out) == 0 {
				if err := decodeClaimValues(vals, fl); err != nil {
					return nil, fmt.Errorf("outbox: claim: %w", err)
				}
			}
			out = append(out, rw)
			continue
		}
		rw = row{}
		if err := res.Scan(dest...); err != nil {
			return nil, fmt.Errorf("outbox: claim: %w", err)
		}
		dest = rest
		if h := res.RawValues()[5]; string(h) != "null" {
			if err := json.Unmarshal(h, &rw.headers); err != nil {
				return nil, fmt.Errorf("outbox: row %d: headers: %w", rw.id, err)
			}
		}
		rw.queue = queue.s
		out = append(out, rw)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	fl.full = len(out) >= limit
	type read struct {
		id     int64
		bucket int32
	}
	all := make([]read, len(out))
	for i, rw := range out {
		all[i] = read{rw.id, rw.bucket}
		fl.maxID = max(fl.maxID, rw.id)
	}
	kept := inWaves(out, waves, size)
	if len(kept) < len(all) {
		// Rows beyond the claim's waves stay pending: the floors of their
		// buckets stay below them.
		in := make(map[int64]bool, len(kept))
		for _, rw := range kept {
			in[rw.id] = true
		}
		for _, a := range all {
			if !in[a.id] {
				fl.keep(a.bucket, a.id)
			}
		}
	}
	return kept, nil
}

// settlePgx is settle on PostgreSQL through pgx, in the claim's
// transaction: the deletion by ctid, the failures, then the commit (or a
// rollback after an error). A share above zero also claims the next batch
// of up to share buckets, in the same round trip and on the same
// connection, and returns it: the claim's statements follow the commit,
// so they run only when the outcome was committed, and they see it.
func (r *Relay) settlePgx(ctx context.Context, b batch, okAt pgtype.FlatArray[pgtype.TID], failed map[failure][]int64, now int64, share int) (batch, error) {
	var next batch
	var claimErr error
	err := b.pg.do(func(pc *pgx.Conn) error {
		// The deletion, the failures and the commit in one round trip (a
		// pipeline): after an error the server skips the rest, the commit
		// too, and close rolls the transaction back.
		var q pgx.Batch
		r.queueSettlement(ctx, &q, okAt, failed, now)
		q.Queue("commit")
		settled := q.Len()
		if share > 0 {
			// The next claim starts past the floors this settlement raises,
			// so that it does not read again the rows it deletes. Should the
			// deletion find fewer rows (below), a row it left pending may lie
			// below those floors, and that claim is rolled back unsent.
			r.queueClaim(&q, share, r.ob.now().UnixMilli(), b.fl)
		}
		br := pc.SendBatch(ctx, &q)
		defer br.Close()
		// Every acknowledged row was deleted unless one of them changed
		// since the claim read it (an UPDATE of the table's rows outside the
		// relay moves a row, and its ctid then finds nothing): it stays
		// pending, and the floors, which would pass it, are dropped.
		deleted := true
		for i := range settled {
			tag, err := br.Exec()
			if err != nil {
				what := "record failure"
				switch {
				case i == settled-1:
					what = "commit the outcome"
				case i == 0 && len(okAt) > 0:
					what = "delete published rows"
				}
				return fmt.Errorf("outbox: %s: %w", what, err)
			}
			if i == 0 && len(okAt) > 0 && tag.RowsAffected() != int64(len(okAt)) {
				deleted = false
			}
		}
		raise := func() {
			if deleted {
				r.floors.raise(b.fl)
			} else {
				r.floors.drop()
			}
		}
		if share == 0 {
			if err := br.Close(); err != nil {
				return fmt.Errorf("outbox: commit the outcome: %w", err)
			}
			raise()
			return nil
		}
		// The outcome is committed; a failed claim only ends its own
		// transaction.
		raise()
		next.rows, next.fl, claimErr = r.readClaim(pc, br)
		if claimErr == nil && !deleted {
			next.rows = nil // read past floors that a row left pending may be below
		}
		return nil
	})
	if err != nil || claimErr != nil {
		r.floors.drop()
	}
	if claimErr != nil {
		r.logger().LogAttrs(ctx, slog.LevelError, "outbox: claim failed", slog.String("relay", r.cfg.id), slog.String("error", claimErr.Error()))
	}
	if err != nil || claimErr != nil || len(next.rows) == 0 {
		b.pg.close()
		return batch{}, err
	}
	next.pg = b.pg
	return next, nil
}

// queueSettlement queues, in a claim's transaction, the deletion of the
// rows at okAt (first, when there are any) and the failures' records.
func (r *Relay) queueSettlement(ctx context.Context, q *pgx.Batch, okAt pgtype.FlatArray[pgtype.TID], failed map[failure][]int64, now int64) {
	if len(okAt) > 0 {
		q.Queue(r.deletePgxQ, okAt)
	}
	for f, ids := range failed {
		delay := r.logFailure(ctx, f, ids)
		q.Queue(r.failPgxQ, f.msg, now+delay.Milliseconds(), ids)
	}
}

// bodyString scans a BYTEA column into a string with one copy
// (pgtype.BytesScanner: pgx hands over the column's bytes, decoded when
// the format is text).
type bodyString string

// ScanBytes implements pgtype.BytesScanner.
func (s *bodyString) ScanBytes(v []byte) error {
	*s = bodyString(v)
	return nil
}

// sameString scans a text column into s, keeping s (no new string) when
// the value is the same as the last one (pgtype.BytesScanner).
type sameString struct{ s string }

// ScanBytes implements pgtype.BytesScanner.
func (s *sameString) ScanBytes(v []byte) error {
	if string(v) != s.s {
		s.s = string(v)
	}
	return nil
}
