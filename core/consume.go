package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Consume reads queues (the default queue when none is given) until ctx
// ends, one goroutine per queue, and handles every message it reads.
// It blocks until every one of those goroutines has stopped.
//
// By default a queue's messages are handled one at a time. With
// WithConcurrency(n, order) up to n run at once per queue on ordered
// lanes (one per key or partition, by order): a slow message holds back
// only its lane, at most WithMaxPending messages are received and
// unfinished, and on stop the waiting ones are handed back while the
// running ones get the settle timeout to finish and settle.
//
// Every message is settled by the contract's rules: acknowledged after its
// handler succeeded; retried (attempts + 1) or dead-lettered after a failure,
// the original acknowledged only once the broker acknowledged the copy; a
// failed copy write leaves the original unacknowledged (rewound, or
// negatively acknowledged) and reported, not counted as an attempt.
//
// It returns at once, having read nothing, the errors of the Handle calls
// the App rejected, and nil once ctx is cancelled or past its deadline (a
// normal stop; see "Stopping a long-running call" in the package doc). A
// bad message never stops it: a
// poison body, a rejected version, a failing handler or a failed settle
// write is settled or left for redelivery, and reported through the
// OnError / OnWarning hooks and the logger. It stops, cancelling the other
// queues, and returns the error when the transport fails in a way a retry
// cannot mend: Pop returns an error, or a call reports ErrClosed. A queue
// must not be consumed by two Consume calls of one process at once (the
// Transport contract reads a queue from one goroutine).
//
// Under StrategyRelease, a message this loop released and reads again (no
// other consumer took it) is released again and followed by a pause of the
// failure backoff, so that a URN nobody handles does not spin the loop.
func (a *App) Consume(ctx context.Context, queues ...string) error {
	queues, err := a.queuesToRead(queues)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for _, q := range queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.consumeQueue(ctx, q); err != nil {
				errOnce.Do(func() { firstErr = err })
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// queuesToRead validates the queue list of Consume and Drain, and refuses
// them both while a Handle call was rejected.
func (a *App) queuesToRead(queues []string) ([]string, error) {
	if err := a.rejectedHandlers(); err != nil {
		return nil, err
	}
	if len(queues) == 0 {
		return []string{a.cfg.defaultQueue}, nil
	}
	seen := make(map[string]bool, len(queues))
	out := make([]string, 0, len(queues))
	for _, q := range queues {
		if wire.IsBlank(q) {
			return nil, invalid("queue name is blank")
		}
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	return out, nil
}

// maxReleasedMemory bounds the set of released messages a consume loop
// remembers to detect a release going round in circles.
const maxReleasedMemory = 1024

// consumeQueue is the loop of one queue.
func (a *App) consumeQueue(ctx context.Context, queue string) error {
	if a.cfg.conc.handlers() > 1 {
		return a.consumeLanes(ctx, queue)
	}
	// Bodies this loop released (StrategyRelease). Meeting one again means
	// no other consumer took it: the loop pauses for the failure backoff
	// before releasing it again, instead of spinning on it.
	released := make(map[string]struct{})
	for {
		if ctx.Err() != nil {
			return nil
		}
		msg, err := a.pop(ctx, queue)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("babelqueue: consume %s: pop: %w", queue, err)
		}
		if msg == nil {
			continue
		}
		if msg.Queue == "" {
			msg.Queue = queue
		}
		if ctx.Err() != nil {
			// Read while stopping: hand it back untouched.
			a.unsettle(ctx, msg, "consume stopped")
			return nil
		}
		out := a.deliver(ctx, msg)
		if out.released && out.err == nil {
			if _, again := released[out.key]; again {
				a.backoff(ctx)
			} else {
				if len(released) >= maxReleasedMemory {
					clear(released)
				}
				released[out.key] = struct{}{}
			}
		}
		if out.err == nil {
			continue
		}
		if errors.Is(out.err, ErrClosed) {
			return fmt.Errorf("babelqueue: consume %s: %w", queue, out.err)
		}
		if out.settleFailed {
			a.backoff(ctx)
		}
	}
}

// pop reserves the next message of queue (Transport.Receive), its headers
// possibly deferred.
func (a *App) pop(ctx context.Context, queue string) (*ReceivedMessage, error) {
	return a.t.Receive(ctx, queue, a.cfg.pollTimeout)
}

// backoff waits the failure backoff on the App's clock, or until ctx ends.
func (a *App) backoff(ctx context.Context) {
	if a.cfg.failureBackoff <= 0 {
		return
	}
	t := a.cfg.clock.NewTimer(a.cfg.failureBackoff)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

// Drain handles messages of queues until they are all empty and returns how
// many deliveries it handled, whatever their outcome. With no queue given
// it drains the default queue. A queue counts as empty after a Pop that
// waited the poll timeout for nothing; Drain passes over the queues again
// until a whole pass finds nothing, so that retries and messages one
// handler publishes to another drained queue are handled too. Under
// StrategyRelease a released message is not counted, and Drain stops
// reading a queue when it meets a message it already released.
//
// Unlike Consume, Drain returns at the first failed settle write (an error
// wrapping ErrSettle; the message is left for redelivery) and at a
// transport error, with the count so far. It also returns when ctx ends.
// Like Consume, it reads nothing while a Handle call was rejected.
func (a *App) Drain(ctx context.Context, queues ...string) (int, error) {
	queues, err := a.queuesToRead(queues)
	if err != nil {
		return 0, err
	}
	released := make(map[string]bool)
	total := 0
	for {
		pass := 0
		for _, q := range queues {
			n, err := a.drainQueue(ctx, q, released)
			pass += n
			total += n
			if err != nil {
				return total, err
			}
		}
		if pass == 0 {
			return total, nil
		}
	}
}

func (a *App) drainQueue(ctx context.Context, queue string, released map[string]bool) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		msg, err := a.pop(ctx, queue)
		if err != nil {
			return n, fmt.Errorf("babelqueue: drain %s: pop: %w", queue, err)
		}
		if msg == nil {
			return n, nil
		}
		if msg.Queue == "" {
			msg.Queue = queue
		}
		out := a.deliver(ctx, msg)
		if out.released {
			if released[out.key] {
				return n, out.err
			}
			released[out.key] = true
		} else {
			n++
		}
		if out.err != nil {
			return n, out.err
		}
	}
}

// outcome is what happened to one delivery.
type outcome struct {
	// err is a settle failure (wrapping ErrSettle) or ErrClosed; nil when
	// the message was settled (or deliberately left for redelivery at
	// shutdown).
	err error
	// settleFailed reports that a settle write failed and the message was
	// left for redelivery.
	settleFailed bool
	// released reports a StrategyRelease hand-back; key identifies the
	// released message (its body, which a release does not change).
	released bool
	key      string
	// st is what the SettleHooks are told.
	st Settlement
}

// deliver handles one reserved message from start to settlement, between
// the delivery hooks when the App has any.
func (a *App) deliver(ctx context.Context, msg *ReceivedMessage) outcome {
	if !a.cfg.hooks.observed() {
		return a.settle(ctx, msg, nil)
	}
	d := &Delivery{Message: msg, Queue: msg.Queue}
	ctx = a.cfg.hooks.onDelivery(ctx, d)
	out := a.settle(ctx, msg, d)
	if len(a.cfg.hooks.settle) > 0 {
		st := out.st
		if st.Outcome == 0 {
			st.Outcome = OutcomeHandedBack
		}
		a.cfg.hooks.onSettle(ctx, d, &st)
	}
	return out
}

// settle runs the version gate, decodes, routes, runs the handler and
// settles; d, when not nil, learns the envelope and the route, and out.st
// the handler's run and the attempt number.
func (a *App) settle(ctx context.Context, msg *ReceivedMessage, d *Delivery) (out outcome) {
	// Version gate, before the body is decoded.
	version, present := msg.Header(wire.HeaderSchemaVersion)
	if err := wire.CheckSchemaVersionHeader(version, present); err != nil {
		return a.settleVersionGated(ctx, msg, version, err)
	}

	env, hctx, err := msg.DecodedWithContext(ctx)
	if err != nil {
		if errors.Is(err, ErrUnsupportedSchemaVersion) {
			rejected := wire.ProjectBody([]byte(msg.Body)).SchemaVersion
			var sv *wire.SchemaVersionError
			if errors.As(err, &sv) {
				rejected = sv.Version
			}
			return a.settleVersionGated(ctx, msg, rejected, err)
		}
		out = a.settlePoison(ctx, msg, err)
		if d != nil {
			d.URN, _ = msg.Header(wire.HeaderJob)
			out.st.Deliveries = poisonAttempts(msg) + 1
		}
		return out
	}

	route := env.URN()
	if dropped := env.DroppedKeys(); dropped != nil {
		a.reportWarning(ctx, "babelqueue: envelope keys ignored", a.deliveryErr(msg, env, route, &wire.DroppedKeysError{Pointers: dropped}),
			a.attrs(msg, env, route, slog.Any("keys", dropped))...)
	}
	if h, ok := msg.Header(wire.HeaderJob); ok && !wire.IsBlank(h) {
		route = h
		if h != env.URN() && a.cfg.onMismatch != nil {
			fn := a.cfg.onMismatch
			safely(func() { fn(h, env.URN(), env) })
		}
	}
	if d != nil {
		d.Envelope, d.URN = env, route
		defer func() { out.st.Deliveries = env.Attempts + 1 }()
	}

	h := a.handler(route)
	if h == nil {
		return a.settleUnknownURN(ctx, msg, env, route)
	}
	henv, out, ok := a.unprotectIncoming(ctx, msg, env, route)
	if !ok {
		return out
	}
	if out, invalid := a.settleInvalidPayload(ctx, msg, henv, route); invalid {
		return out
	}

	var began time.Time
	if d != nil {
		began = a.cfg.clock.Now()
	}
	herr := runHandler(hctx, h, henv)
	var took time.Duration
	if d != nil {
		took = a.cfg.clock.Now().Sub(began)
		defer func() { out.st.HandlerRan, out.st.HandlerDuration, out.st.HandlerErr = true, took, herr }()
	}
	if herr == nil {
		return a.ack(ctx, msg, env, route)
	}
	if ctx.Err() != nil {
		// The handler most likely failed because Consume is stopping: that
		// is not the message's fault, so it is handed back uncounted.
		a.logger().LogAttrs(ctx, slog.LevelInfo, "babelqueue: handler stopped with the consumer; message left for redelivery",
			a.attrs(msg, env, route, slog.String("error", herr.Error()))...)
		a.unsettle(ctx, msg, "consume stopped")
		return outcome{st: Settlement{Outcome: OutcomeHandedBack}}
	}
	a.reportError(ctx, "babelqueue: handler failed", &DeliveryError{Queue: msg.Queue, URN: route, MessageID: env.Meta.ID, Err: herr},
		a.attrs(msg, env, route)...)
	return a.settleRetryable(ctx, msg, env, route, wire.ReasonFailed, herr)
}

// logDeliveries is the log attribute of a delivery's count.
const logDeliveries = "deliveries"

// attrs returns the log attributes of a delivery. "deliveries" counts
// this delivery too (the envelope's attempts + 1), the count a retry copy
// or dead letter of it carries as its attempts (see Settlement.Deliveries).
func (a *App) attrs(msg *ReceivedMessage, env *Envelope, route string, extra ...slog.Attr) []slog.Attr {
	out := []slog.Attr{slog.String("queue", msg.Queue)}
	if route != "" {
		out = append(out, slog.String("urn", route))
	}
	if env != nil {
		out = append(out, slog.String("message_id", env.Meta.ID), slog.Int(logDeliveries, env.Attempts+1))
	}
	return append(out, extra...)
}
