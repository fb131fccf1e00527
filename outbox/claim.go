package outbox

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
)

// batch is the rows of one claim and, on PostgreSQL, the transaction whose
// key-bucket locks hold them until settle commits it.
type batch struct {
	rows []row
	tx   *sql.Tx // PostgreSQL
}

// row is one claimed row and, once sent, its outcome.
type row struct {
	id       int64
	queue    string
	key      []byte
	orderKey string
	body     string // a string: the driver.Outgoing a transport sends holds one
	headers  map[string]string
	attempts int
	round    int   // its send: its rank among the claim's rows of its key
	err      error // the send's outcome
}

// abandon ends the claim's transaction, if any, without an outcome: its
// rows stay pending (on SQLite until their lease ends).
func (b batch) abandon() {
	if b.tx != nil {
		_ = b.tx.Rollback()
	}
}

// claim takes the next batch. A claim that found nothing holds nothing.
func (r *Relay) claim(ctx context.Context, share int) (batch, error) {
	now := r.ob.now().UnixMilli()
	if r.ob.dialect == Postgres {
		return r.claimPostgres(ctx, share, now)
	}
	res, err := r.db.QueryContext(ctx, r.ob.st.claim, now, now, r.cfg.batch, r.cfg.id, now+r.cfg.lease.Milliseconds())
	if err != nil {
		return batch{}, fmt.Errorf("outbox: claim: %w", err)
	}
	rows, err := scanRows(res, r.cfg.batch)
	return batch{rows: rows}, err
}

// claimPostgres opens a transaction, takes the advisory locks of up to
// share free key buckets, then reads the due rows of those buckets in a
// second statement, whose snapshot is taken once every lock is held: it
// sees the outcome of every earlier claim of these buckets, and no other
// claim reads or changes their rows until this transaction ends. A
// relay's workers start from successive multiples of share, so while the
// buckets are free each claim's are contiguous.
func (r *Relay) claimPostgres(ctx context.Context, share int, now int64) (batch, error) {
	// Not ended by ctx: a batch in flight when Run stops is still settled.
	tx, err := r.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return batch{}, fmt.Errorf("outbox: claim: begin: %w", err)
	}
	b := batch{tx: tx}
	var mask, lo, hi int64
	from := int64(r.next.Add(1) * uint32(share) % keyBuckets)
	err = tx.QueryRowContext(ctx, r.ob.st.lock, from, r.lockNS, share).Scan(&mask, &lo, &hi)
	if err != nil {
		err = fmt.Errorf("outbox: claim: lock key buckets: %w", err)
	} else if mask != 0 {
		q, args := r.ob.st.claim, []any{now, mask, lo, hi, r.cfg.batch}
		if r.cfg.plain.NoBitmask {
			q, args = r.ob.st.inSet, []any{now, mask, r.cfg.batch}
		}
		var res *sql.Rows
		if res, err = tx.QueryContext(ctx, q, args...); err == nil {
			b.rows, err = scanRows(res, r.cfg.batch)
		} else {
			err = fmt.Errorf("outbox: claim: %w", err)
		}
	}
	if err != nil || len(b.rows) == 0 {
		b.abandon()
		return batch{}, err
	}
	return b, nil
}

// scanRows reads the claimed rows, in id order, into a slice with room
// for limit rows.
func scanRows(res *sql.Rows, limit int) ([]row, error) {
	defer res.Close()
	out := make([]row, 0, limit)
	var rw row
	var body, headers sql.RawBytes
	dest := []any{&rw.id, &rw.queue, &rw.key, &rw.orderKey, &body, &headers, &rw.attempts}
	for res.Next() {
		rw = row{}
		if err := res.Scan(dest...); err != nil {
			return nil, fmt.Errorf("outbox: claim: %w", err)
		}
		rw.body = string(body)
		// Write stores nil headers as "null" (the common case): no decode.
		if string(headers) != "null" {
			if err := json.Unmarshal(headers, &rw.headers); err != nil {
				return nil, fmt.Errorf("outbox: row %d: headers: %w", rw.id, err)
			}
		}
		out = append(out, rw)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	// SQLite's UPDATE ... RETURNING returns rows in no set order.
	slices.SortFunc(out, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}
