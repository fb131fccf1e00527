package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// settle records the outcome of a sent batch: it deletes the acknowledged
// rows, records each failure (attempts + 1, the error, the next attempt
// after the backoff) and, on SQLite, ends the lease of rows held back.
//
// On PostgreSQL it does so in the claim's transaction and commits, which
// releases the key-bucket locks; after an error it rolls back, so every
// row stays pending and is sent again. On SQLite each statement touches
// only rows still leased to this relay.
func (r *Relay) settle(ctx context.Context, b batch) error {
	o := outcomesOf(b.rows)
	now := r.ob.now().UnixMilli()
	var errs []error
	exec := func(what, stmt string, ids []int64, args ...any) {
		if len(ids) == 0 {
			return
		}
		var err error
		if b.tx != nil {
			_, err = b.tx.ExecContext(ctx, stmt, append(args, idList(Postgres, ids))...)
		} else {
			_, err = r.db.ExecContext(ctx, stmt, append(args, r.cfg.id, idList(SQLite, ids))...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("outbox: %s: %w", what, err))
		}
	}
	exec("delete published rows", r.ob.st.delete, o.ok)
	if b.tx == nil {
		exec("release rows held back", r.ob.st.release, o.held)
	}
	for f, ids := range o.failed {
		delay := r.logFailure(ctx, f, ids)
		exec("record failure", r.ob.st.fail, ids, f.msg, now+delay.Milliseconds())
	}
	if b.tx != nil {
		if len(errs) > 0 {
			_ = b.tx.Rollback()
		} else if err := b.tx.Commit(); err != nil {
			errs = append(errs, fmt.Errorf("outbox: commit the outcome: %w", err))
		}
	}
	return errors.Join(errs...)
}

// outcomes are a batch's rows by their send's outcome.
type outcomes struct {
	ok     []int64             // acknowledged
	held   []int64             // not sent, or held back after an earlier failure of their key
	failed map[failure][]int64 // failed, by attempt and error
}

// failure is the outcome of a failed send: the row's attempts, with this
// one, and the error.
type failure struct {
	attempts int
	msg      string
}

// outcomesOf sorts rows by their send's outcome.
func outcomesOf(rows []row) outcomes {
	o := outcomes{failed: map[failure][]int64{}}
	for _, rw := range rows {
		switch {
		case rw.err == nil:
			o.ok = append(o.ok, rw.id)
		case errors.Is(rw.err, ErrEarlierFailed):
			o.held = append(o.held, rw.id)
		default:
			f := failure{rw.attempts + 1, truncate(rw.err.Error(), 1000)}
			o.failed[f] = append(o.failed[f], rw.id)
		}
	}
	return o
}

// logFailure logs the failure of ids and returns their retry delay.
func (r *Relay) logFailure(ctx context.Context, f failure, ids []int64) time.Duration {
	delay := r.backoff(f.attempts)
	r.logger().LogAttrs(ctx, slog.LevelWarn, "outbox: send failed; retrying", slog.Int("rows", len(ids)), slog.Int64("first_row", ids[0]),
		slog.Int("attempts", f.attempts), slog.Duration("retry_in", delay), slog.String("error", f.msg))
	return delay
}

// backoff is the retry delay after attempt failed attempts: WithBackoff's
// minimum doubled per attempt, at most its maximum.
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
