package babelqueue

import (
	"context"
	"maps"
	"sync"
	"time"
)

type headersKey struct{}

// ContextWithHeaders returns a copy of ctx carrying headers as the
// out-of-band headers of the message being handled. The App does this for
// every delivery; tests of a handler can use it to run the handler as if a
// message with those headers had been delivered. headers is copied.
func ContextWithHeaders(ctx context.Context, headers map[string]string) context.Context {
	return context.WithValue(ctx, headersKey{}, maps.Clone(headers))
}

// contextWithDelivered is ContextWithHeaders for the App's own deliveries:
// it stores the delivered map itself, not a copy. That is safe because
// neither the App nor a transport changes a ReceivedMessage's headers once
// it was delivered, and every reader below copies or only looks.
func contextWithDelivered(ctx context.Context, headers map[string]string) context.Context {
	return context.WithValue(ctx, headersKey{}, headers)
}

// HeadersFromContext returns a copy of the out-of-band headers delivered
// with the message being handled (contract bq- headers included), or nil
// outside a handler.
func HeadersFromContext(ctx context.Context) map[string]string {
	h, _ := ctx.Value(headersKey{}).(map[string]string)
	return maps.Clone(h)
}

// IsReplay reports whether the message being handled is a replay: it was
// redriven with the replay bypass (see WithRedriveReplayBypass), which
// shows as a bq-replay-bypass header that is present and not blank.
func IsReplay(ctx context.Context) bool {
	h, _ := ctx.Value(headersKey{}).(map[string]string)
	v, ok := h[HeaderReplayBypass]
	return ok && !IsBlank(v)
}

// BypassExternalEffects runs fn and returns its error, unless the message
// being handled is a replay (IsReplay), in which case fn is skipped and it
// returns nil. Wrap in it the effects a replay must not repeat: charging a
// card, sending an e-mail, calling a partner's API.
func BypassExternalEffects(ctx context.Context, fn func() error) error {
	if IsReplay(ctx) {
		return nil
	}
	return fn()
}

// settleContext is the context of a settle call that a hot path makes
// once per delivery: it carries the values of the consume context, not its
// cancellation, and ends at a deadline, like
// context.WithTimeout(context.WithoutCancel(ctx), d), but it is re-armed
// for each call instead of allocating a context and a timer. One goroutine
// arms it, makes one call with it and disarms it; only then may it be
// armed again. A callee must not keep it past the call's return.
//
// Its timer is not reset for every call: arm starts it only when it is
// not running or would fire after the new call's deadline, so it never
// fires after the running call's deadline. expire then ends that call if
// its deadline passed, or starts the timer again for the rest of it, or
// lets the timer rest when no call is running. A busy loop thus touches the timer about once per timeout,
// not once per call.
type settleContext struct {
	timer *time.Timer

	mu       sync.Mutex
	parent   context.Context // the context of the last call
	values   context.Context // context.WithoutCancel(parent)
	armed    bool            // a call is running
	ticking  bool            // the timer is started and has not fired
	fireAt   time.Time       // when it fires, while ticking
	deadline time.Time
	done     chan struct{}
	err      error
}

var _ context.Context = (*settleContext)(nil)

func newSettleContext() *settleContext {
	c := &settleContext{done: make(chan struct{})}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	return c
}

// arm starts a call bounded by d, with the values of values.
func (c *settleContext) arm(values context.Context, d time.Duration) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		// The previous call timed out: its channel stays closed.
		c.done, c.err = make(chan struct{}), nil
	}
	if values != c.parent {
		// The same consume context comes back call after call: its
		// WithoutCancel wrapper (which also hides its cancellation cause
		// from context.Cause) is made once.
		c.parent, c.values = values, context.WithoutCancel(values)
	}
	c.armed = true
	c.deadline = now.Add(d)
	if !c.ticking || c.deadline.Before(c.fireAt) {
		c.ticking, c.fireAt = true, c.deadline
		c.timer.Reset(d)
	}
}

// disarm ends the call. The timer, if started, keeps running (see expire).
func (c *settleContext) disarm() {
	c.mu.Lock()
	c.armed = false
	c.mu.Unlock()
}

// expire is the timer's function.
func (c *settleContext) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticking = false
	if !c.armed || c.err != nil {
		return
	}
	if left := time.Until(c.deadline); left > 0 {
		c.ticking, c.fireAt = true, c.deadline
		c.timer.Reset(left)
		return
	}
	c.err = context.DeadlineExceeded
	close(c.done)
}

// Deadline returns the end of the current call.
func (c *settleContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, true
}

// Done is closed when the current call's deadline passed.
func (c *settleContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Err is context.DeadlineExceeded once the deadline passed, else nil.
func (c *settleContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value looks key up in the values of the context the call was armed with.
func (c *settleContext) Value(key any) any {
	c.mu.Lock()
	values := c.values
	c.mu.Unlock()
	if values == nil {
		return nil
	}
	return values.Value(key)
}
