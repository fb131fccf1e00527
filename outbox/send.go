package outbox

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// sendRounds sends a claim's rows (in id order) in rounds: round k holds
// the k-th row of each order key and is sent once the broker acknowledged
// the round before, so a send never holds two rows of one key. Each row's
// outcome is recorded in it. After a round with a failure, or once ctx
// ended, the later rounds are not sent: their rows get ErrEarlierFailed
// (they stay pending, no attempt counted). It returns false, having sent
// nothing, when ctx ended before the first round.
func (r *Relay) sendRounds(ctx context.Context, rows []row) bool {
	inRounds(rows)
	for first := true; len(rows) > 0; first = false {
		if ctx.Err() != nil {
			if first {
				return false
			}
			holdBack(rows)
			return true
		}
		n := 1
		for n < len(rows) && rows[n].round == rows[0].round {
			n++
		}
		r.send(ctx, rows[:n])
		failed := slices.ContainsFunc(rows[:n], func(rw row) bool { return rw.err != nil })
		if rows = rows[n:]; failed {
			holdBack(rows)
			return true
		}
	}
	return true
}

// inRounds sets each row's round, its rank in its order key (rows in id
// order), and sorts rows by round, then id.
func inRounds(rows []row) {
	rank := make(map[string]int, len(rows))
	for i := range rows {
		rows[i].round = rank[rows[i].orderKey]
		rank[rows[i].orderKey]++
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.round, b.round) })
}

// holdBack marks rows not sent: they stay pending, without an attempt.
func holdBack(rows []row) {
	for i := range rows {
		rows[i].err = ErrEarlierFailed
	}
}

// send sends one round (one row per order key) and records each row's
// outcome: one SendBatch when the sender batches, else one Send per row,
// WithParallelism at once. A send in flight when Run stops is finished,
// within WithSendTimeout.
func (r *Relay) send(ctx context.Context, rows []row) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.sendTimeout)
	defer cancel()
	bs, ok := batches(r.sender)
	if !ok {
		r.sendEach(ctx, rows)
		return
	}
	var errs []error
	if ts, ok := bs.(TransportSender); ok {
		// The rows go to the transport as they were read: no copy of
		// their bodies.
		outs := make([]*driver.Outgoing, len(rows))
		for i, rw := range rows {
			outs[i] = outgoing(rw.queue, rw.key, rw.body, rw.headers)
		}
		errs = sendOutgoing(ctx, ts.Transport.(driver.BatchSender), outs)
	} else {
		msgs := make([]Message, len(rows))
		for i, rw := range rows {
			msgs[i] = Message{Queue: rw.queue, Key: rw.key, Body: []byte(rw.body), Headers: rw.headers, OrderKey: rw.orderKey}
		}
		errs = bs.SendBatch(ctx, msgs)
	}
	for i := range rows {
		switch {
		case errs == nil:
		case i < len(errs):
			rows[i].err = errs[i]
		default:
			rows[i].err = errors.New("outbox: sender returned no outcome")
		}
	}
}

// sendEach sends rows with Send, at most WithParallelism at once.
func (r *Relay) sendEach(ctx context.Context, rows []row) {
	sem := make(chan struct{}, r.cfg.parallel)
	var wg sync.WaitGroup
	for i := range rows {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rw := &rows[i]
			rw.err = r.sender.Send(ctx, rw.queue, rw.key, []byte(rw.body), rw.headers)
		})
	}
	wg.Wait()
}
