package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/option"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// ErrInFlight is returned by a wrapped handler when another delivery of the
// same id still held its lease after the busy wait. The delivery fails
// without running the effect, and the App retries it.
var ErrInFlight = errors.New("idempotency: another delivery of this id is in flight")

// Wrap returns a handler that runs h at most once per meta.id, as far as
// store remembers:
//
//   - an id already remembered is skipped: h does not run and the delivery
//     is acknowledged;
//   - otherwise the id is claimed with a lease, h runs, and on success the
//     id is remembered; on failure the claim is released and h's error is
//     returned, so retry and dead letter still apply;
//   - two deliveries of one id at once never both run h while the lease
//     holds: the second waits (WithBusyWait) and then skips, runs after a
//     failure, or fails with ErrInFlight;
//   - a message without a meta.id (empty or blank) cannot be deduplicated and always runs
//     (fail open).
//
// A failure to remember a succeeded id is logged, not returned: the effect
// happened, so the delivery is acknowledged. This is an exactly-once effect
// for effects that finish within their lease, not exactly-once delivery;
// for an effect that is a database write see sqlstore.WrapTx.
//
// Wrap reports a nil store or handler and every invalid option together,
// each matching babelqueue.ErrInvalidOption.
func Wrap(store Store, h babelqueue.Handler, opts ...Option) (babelqueue.Handler, error) {
	c := config{lease: DefaultLease, ttl: DefaultTTL, busyWait: DefaultBusyWait, busyPoll: DefaultBusyPoll, clock: driver.SystemClock{},
		errs: option.Prefixed("idempotency")}
	if store == nil {
		c.fail("nil store")
	}
	if h == nil {
		c.fail("nil handler")
	}
	if err := option.Apply(&c, &c.errs, opts); err != nil {
		return nil, err
	}
	g := &guard{store: store, h: h, c: c}
	return g.handle, nil
}

type guard struct {
	store Store
	h     babelqueue.Handler
	c     config
}

func (g *guard) logger() *slog.Logger {
	if g.c.logger != nil {
		return g.c.logger
	}
	return slog.Default()
}

func (g *guard) handle(ctx context.Context, env *babelqueue.Envelope) error {
	id := Key(env)
	if wire.IsBlank(id) {
		return g.h(ctx, env)
	}
	token := NewToken()
	state, err := g.claim(ctx, id, token)
	if err != nil {
		return err
	}
	if state == Done {
		return nil
	}
	if herr := g.h(ctx, env); herr != nil {
		if err := g.store.Release(context.WithoutCancel(ctx), id, token); err != nil {
			g.logger().LogAttrs(ctx, slog.LevelWarn, "idempotency: release failed; the id stays claimed until its lease ends",
				slog.String("id", id), slog.String("error", err.Error()))
		}
		return herr
	}
	if err := g.store.Complete(context.WithoutCancel(ctx), id, token, g.c.ttl); err != nil {
		g.logger().LogAttrs(ctx, slog.LevelError, "idempotency: the handler succeeded but its id was not remembered",
			slog.String("id", id), slog.String("error", err.Error()))
	}
	return nil
}

// claim claims id, waiting out another delivery's lease up to busyWait. It
// returns Claimed or Done.
func (g *guard) claim(ctx context.Context, id, token string) (State, error) {
	var waited time.Duration
	for {
		state, err := g.store.Claim(ctx, id, token, g.c.lease)
		if err != nil {
			return 0, fmt.Errorf("idempotency: claim %s: %w", id, err)
		}
		if state != Busy {
			return state, nil
		}
		if waited >= g.c.busyWait {
			return 0, fmt.Errorf("idempotency: %s: %w", id, ErrInFlight)
		}
		t := g.c.clock.NewTimer(g.c.busyPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("idempotency: waiting for %s: %w", id, ctx.Err())
		case <-t.C():
		}
		waited += g.c.busyPoll
	}
}

// Key returns the dedupe key of env: meta.id verbatim ("" when env is nil
// or has none).
func Key(env *babelqueue.Envelope) string {
	if env == nil {
		return ""
	}
	return env.Meta.ID
}

// NewToken returns a random claim token.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
