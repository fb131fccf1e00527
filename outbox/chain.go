package outbox

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Claims ahead (WithClaimAhead, PostgreSQL through pgx): a worker claims
// its next batch while the one before is being sent, in the same
// transaction, so under the same key bucket locks, and past the last row
// the batch before read. Its rows are sent once the batch before was
// acknowledged and its deletion found every row it was given; a row whose
// key failed in the batch before is held back. Up to WithClaimAhead
// claims share a transaction; the last one is settled and committed as a
// lone claim is (settlePgx), with the next transaction's first claim
// riding along (DESIGN.md, "Claims ahead").

// chains reports whether Run's workers claim ahead.
func (r *Relay) chains() bool {
	return r.cfg.ahead > 0 && r.ob.dialect == Postgres && !r.plainSQL.Load()
}

// ahead reports whether a claim may be followed by one past its last row,
// in its transaction: it read its buckets with no failed row waiting
// (which passes rows over), up to an id every taker of which had ended
// before its snapshot (so no row at or below it can appear later), and
// leaves no row it read pending.
func (c *claimFloors) ahead() bool {
	if !c.ok || c.blocked || c.horizon < c.maxID {
		return false
	}
	for _, u := range c.unsent {
		if u != 0 {
			return false
		}
	}
	return true
}

// sendAhead sends b (a claim's batch, its transaction open) and the
// batches claimed ahead of it in turn, and settles them. It returns the
// next transaction's first batch, claimed with the last settlement.
func (r *Relay) sendAhead(ctx context.Context, b batch, sends chan struct{}, share int) (batch, error) {
	var settled []*claimFloors // the claims of this transaction settled before b
	last := func(b batch, sent bool) (batch, error) {
		if !sent {
			holdBack(b.rows)
		}
		if !sent || ctx.Err() != nil {
			share = 0
		}
		next, err := r.settle(context.WithoutCancel(ctx), b, share)
		if err == nil {
			for _, fl := range settled {
				r.floors.raise(fl)
			}
		}
		return next, err
	}
	// sent reports the outcome of a send started by send: false when ctx
	// ended before its first rows had a slot (nothing of them was sent).
	// The rows of later are sent after first, once verified says so;
	// otherwise they are held back.
	sent := make(chan bool, 1)
	send := func(first, later []row, verified <-chan bool) {
		go func() {
			ok := r.sendWaves(ctx, first, sends)
			if len(later) > 0 {
				if !ok || !<-verified || !r.sendWaves(ctx, later, sends) {
					holdBack(later)
				}
			}
			sent <- ok
		}()
	}
	send(b.rows, nil, nil)
	// ahead: claimed past b, in b's transaction, while b is sent.
	var ahead batch
	var aheadErr error
	if r.cfg.ahead > 1 && ctx.Err() == nil && b.fl.ahead() {
		ahead.rows, ahead.fl, _, aheadErr = r.settleAndClaimAhead(ctx, b, nil, b.fl, nil)
	}
	for n := 1; ; n++ {
		ok := <-sent
		if aheadErr != nil {
			r.floors.drop()
			b.abandon()
			return batch{}, aheadErr
		}
		if !ok || len(ahead.rows) == 0 || ctx.Err() != nil {
			return last(b, ok)
		}
		// The rows of a key that failed in b are held back, and the rows
		// b leaves pending bound the floors of every later claim of the
		// transaction (which read past them). The rows of keys b sent go
		// once b's deletion found every row (a row updated outside the
		// relay moves and is not found: it stays pending and goes again,
		// before the later rows of its key); the others go at once.
		inB := make(map[string]bool, len(b.rows))
		for _, rw := range b.rows {
			inB[rw.orderKey] = inB[rw.orderKey] || rw.err != nil
			if rw.err != nil {
				b.fl.keep(rw.bucket, rw.id)
			}
		}
		ahead.fl.keepAll(b.fl)
		// One array, free rows first, then the later ones, then those held
		// back (each part in the claim's order): the sends record their
		// outcomes in it.
		kind := func(rw row) int {
			failed, seen := inB[rw.orderKey]
			switch {
			case failed:
				return 2
			case seen:
				return 1
			}
			return 0
		}
		rows := slices.Clone(ahead.rows)
		slices.SortStableFunc(rows, func(x, y row) int { return cmp.Compare(kind(x), kind(y)) })
		nFree := slices.IndexFunc(rows, func(rw row) bool { return kind(rw) > 0 })
		if nFree < 0 {
			nFree = len(rows)
		}
		nLater := slices.IndexFunc(rows[nFree:], func(rw row) bool { return kind(rw) > 1 })
		if nLater < 0 {
			nLater = len(rows) - nFree
		}
		held := rows[nFree+nLater:]
		holdBack(held)
		for _, rw := range held {
			ahead.fl.keep(rw.bucket, rw.id)
		}
		verified := make(chan bool, 1)
		send(rows[:nFree], rows[nFree:nFree+nLater], verified)
		var past *claimFloors
		if n+1 < r.cfg.ahead && ahead.fl.ahead() {
			past = ahead.fl
		}
		// b's settlement (not committed), then the claim past ahead.
		signalled := false
		next, nextFl, deleted, err := r.settleAndClaimAhead(ctx, b, b.rows, past, func() { signalled = true; verified <- true })
		if !signalled {
			verified <- false
		}
		if err != nil {
			<-sent
			r.floors.drop()
			b.abandon()
			return batch{}, err
		}
		settled = append(settled, b.fl)
		b = batch{rows: rows, pg: b.pg, fl: ahead.fl}
		if !deleted {
			// A row of b moved and stays pending: the floors, which would
			// pass it, are dropped, and nothing more is sent.
			r.floors.drop()
			return last(b, <-sent)
		}
		ahead = batch{rows: next, fl: nextFl}
	}
}

// settleAndClaimAhead settles b's rows sent (none: nil) in its
// transaction, without the commit, and then claims past the rows of the
// claim past says (none: nil), in one round trip on b's connection. Once
// the settlement is known it calls sent (when not nil) if the deletion
// found every row it was given, before the claim's rows are read.
func (r *Relay) settleAndClaimAhead(ctx context.Context, b batch, rows []row, past *claimFloors, sent func()) ([]row, *claimFloors, bool, error) {
	now := r.ob.now().UnixMilli()
	o := outcomesOf(rows)
	okAt, failed := o.okTID, o.failed
	var claimed []row
	var fl *claimFloors
	deleted := true
	err := b.pg.do(func(pc *pgx.Conn) error {
		var q pgx.Batch
		r.queueSettlement(ctx, &q, okAt, failed, now)
		settling := q.Len()
		if past != nil {
			q.Queue(r.claimAheadPgxQ, r.ob.now().UnixMilli(), past.maxID, r.claimLimit())
		}
		if q.Len() == 0 {
			if sent != nil {
				sent()
			}
			return nil
		}
		br := pc.SendBatch(context.WithoutCancel(ctx), &q)
		defer br.Close()
		for i := range settling {
			tag, err := br.Exec()
			if err != nil {
				deleted = false
				return fmt.Errorf("outbox: settle a batch claimed ahead: %w", err)
			}
			if i == 0 && len(okAt) > 0 && tag.RowsAffected() != int64(len(okAt)) {
				deleted = false
			}
		}
		if deleted && sent != nil {
			sent()
		}
		if past == nil {
			return br.Close()
		}
		res, err := br.Query()
		if err != nil {
			return fmt.Errorf("outbox: claim ahead: %w", err)
		}
		fl = &claimFloors{buckets: b.fl.buckets, seq: b.fl.seq, server: b.fl.server}
		claimed, err = scanPgxRows(res, r.claimLimit(), r.waves(), r.cfg.batch, fl)
		if err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("outbox: claim ahead: %w", err)
		}
		fl.ok = true
		r.floors.readAhead(fl)
		if len(claimed) > 0 {
			r.claimedAhead.Add(1)
		}
		return nil
	})
	if err != nil {
		return nil, nil, false, err
	}
	return claimed, fl, deleted, nil
}
