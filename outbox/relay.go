package outbox

import (
	"context"
	"database/sql"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/babelqueue/babelqueue-go/core/option"
)

// Relay publishes the pending rows of an outbox at least once, in order
// per key. Several relays, in one process or many, may run on one table
// at once; DESIGN.md says how.
type Relay struct {
	db     *sql.DB
	ob     *Outbox
	sender Sender
	cfg    relayConfig
	lockNS int32         // PostgreSQL: the advisory lock namespace of the table's key buckets
	next   atomic.Uint32 // PostgreSQL: moves the first bucket a claim tries
}

// keyBuckets is how many advisory locks (PostgreSQL) the order keys of a
// table are hashed into; the SQL's "& 63" is keyBuckets-1.
const keyBuckets = 64

// NewRelay returns a relay of ob's table in db, publishing through sender.
// It reports every invalid option at once (errors.Join), each matching
// babelqueue.ErrInvalidOption.
func NewRelay(db *sql.DB, ob *Outbox, sender Sender, opts ...RelayOption) (*Relay, error) {
	c := relayConfig{id: randomID(), batch: DefaultBatchSize, inflight: DefaultInFlight, parallel: DefaultParallelism,
		lease: DefaultLease, poll: DefaultPoll, minBackoff: DefaultMinBackoff, maxBackoff: DefaultMaxBackoff,
		sendTimeout: DefaultSendTimeout, errs: option.Prefixed("outbox: relay")}
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
	r := &Relay{db: db, ob: ob, sender: sender, cfg: c, lockNS: lockNamespace(ob.table)}
	r.next.Store(uint32(rand.IntN(keyBuckets)))
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

// Run publishes until ctx ends, then returns nil once the batches in
// flight are settled; a stop is not a failure, as for App.Consume.
//
// It keeps WithInFlight workers, each claiming a batch, sending it and
// settling it in turn. Database and broker errors are logged and retried
// (a claim after WithPoll, a row after its backoff), never returned.
func (r *Relay) Run(ctx context.Context) error {
	share := max(keyBuckets/r.cfg.inflight, 1)
	var wg sync.WaitGroup
	for range r.cfg.inflight {
		wg.Go(func() { r.work(ctx, share) })
	}
	wg.Wait()
	return nil
}

// work claims (up to share key buckets), sends and settles batches until
// ctx ends, waiting WithPoll after a claim that found nothing or failed.
func (r *Relay) work(ctx context.Context, share int) {
	for ctx.Err() == nil {
		n, err := r.relayOnce(ctx, share)
		if err != nil && ctx.Err() == nil {
			r.logger().LogAttrs(ctx, slog.LevelError, "outbox: relaying a batch failed; its rows stay pending",
				slog.String("relay", r.cfg.id), slog.String("error", err.Error()))
		}
		if n > 0 {
			continue
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
	return r.relayOnce(ctx, keyBuckets)
}

// relayOnce claims a batch of up to share key buckets, sends it and
// settles it. When ctx ends before the first send the claim is abandoned
// and its rows stay pending.
func (r *Relay) relayOnce(ctx context.Context, share int) (int, error) {
	b, err := r.claim(ctx, share)
	if err != nil || len(b.rows) == 0 {
		return 0, err
	}
	if !r.sendRounds(ctx, b.rows) {
		b.abandon()
		return 0, nil
	}
	return len(b.rows), r.settle(context.WithoutCancel(ctx), b)
}
