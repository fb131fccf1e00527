package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

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
		// The begin, the bucket locks and the rows in one round trip (a
		// pipeline: the begin makes it an explicit transaction, which the
		// other statements join). The rows' statement is a new statement,
		// so a new snapshot, taken once every lock is held (see claim); it
		// reads the buckets locked from the transaction's setting that the
		// locks' statement wrote. Not ended by ctx: a batch in flight when
		// Run stops is settled.
		var q pgx.Batch
		q.Queue("begin")
		q.Queue(r.lockPgxQ, r.nextFrom(share), r.lockNS, share)
		q.Queue(r.claimPgxQ, now, now, now, r.cfg.batch)
		br := pc.SendBatch(context.WithoutCancel(ctx), &q)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("outbox: claim: begin: %w", err)
		}
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("outbox: claim: lock key buckets: %w", err)
		}
		res, err := br.Query()
		if err != nil {
			return fmt.Errorf("outbox: claim: %w", err)
		}
		if b.rows, err = scanPgxRows(res, r.cfg.batch); err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("outbox: claim: %w", err)
		}
		// Known once the pipeline's end is read: the rows are held only
		// if the begin did open the transaction the locks belong to.
		if st := pc.PgConn().TxStatus(); st != 'T' {
			return fmt.Errorf("outbox: claim: transaction status %q after begin, want T", st)
		}
		return nil
	})
	if err != nil || len(b.rows) == 0 {
		b.abandon()
		if errors.Is(err, errNotPgx) {
			return batch{}, errNotPgx
		}
		return batch{}, err
	}
	return b, nil
}

// scanPgxRows reads the claimed rows (with their binary ctid), then keeps
// the first row of each order key (see scanRows).
func scanPgxRows(res pgx.Rows, limit int) ([]row, error) {
	defer res.Close()
	out := make([]row, 0, limit)
	var rw row
	// The headers column is not scanned (nil): Write stores nil headers as
	// "null", the common case, which needs no decode.
	// The queue is read as the previous row's string when it is the
	// same (usually: one string per batch, not per row).
	queue := &sameString{}
	dest := []any{&rw.id, queue, &rw.key, &rw.orderKey, (*bodyString)(&rw.body), nil, &rw.attempts, &rw.tid}
	for res.Next() {
		rw = row{}
		if err := res.Scan(dest...); err != nil {
			return nil, fmt.Errorf("outbox: claim: %w", err)
		}
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
	return firstOfEachKey(out), nil
}

// settlePgx is settle on PostgreSQL through pgx, in the claim's
// transaction: the deletion by ctid, the failures, then the commit (or a
// rollback after an error).
func (r *Relay) settlePgx(ctx context.Context, b batch, okAt pgtype.FlatArray[pgtype.TID], failed map[failure][]int64, now int64) error {
	defer b.pg.close()
	return b.pg.do(func(pc *pgx.Conn) error {
		// The deletion, the failures and the commit in one round trip (a
		// pipeline): after an error the server skips the rest, the commit
		// too, and close rolls the transaction back.
		var q pgx.Batch
		if len(okAt) > 0 {
			q.Queue(r.deletePgxQ, okAt)
		}
		for f, ids := range failed {
			delay := r.logFailure(ctx, f, ids)
			q.Queue(r.failPgxQ, f.msg, now+delay.Milliseconds(), ids)
		}
		q.Queue("commit")
		br := pc.SendBatch(ctx, &q)
		var errs []error
		for i := range q.Len() {
			if _, err := br.Exec(); err != nil {
				what := "record failure"
				switch {
				case i == q.Len()-1:
					what = "commit the outcome"
				case i == 0 && len(okAt) > 0:
					what = "delete published rows"
				}
				errs = append(errs, fmt.Errorf("outbox: %s: %w", what, err))
				break
			}
		}
		if err := br.Close(); err != nil && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("outbox: commit the outcome: %w", err))
		}
		return errors.Join(errs...)
	})
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
