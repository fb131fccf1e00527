package driver

import (
	"context"
	"sync"
	"time"
)

// CallContext is a re-armable context.Context for a hot path that makes one
// bounded call after another. Examples are a transport's fetch and the
// App's acknowledge of each delivery. It behaves like the context of
// context.WithTimeout(parent, d) (or, when detached, of
// context.WithTimeout(context.WithoutCancel(parent), d)), but it is
// re-armed for each call instead of allocating a context, a timer and a
// cancellation registration on parent every time: a loop that passes the
// same parent call after call registers on it once, and touches its timer
// about once per timeout rather than once per call.
//
// One goroutine at a time uses it: Arm, one call, Disarm; only then may it
// be armed again. A callee must not keep it past the call's return. While
// armed it is safe for concurrent use by the callee's goroutines.
//
// A CallContext that follows its parent's cancellation stays registered on
// its last parent until Release; one that is dropped without Release keeps
// that registration (and itself) alive as long as the parent lives.
type CallContext struct {
	detached bool
	timer    *time.Timer

	mu       sync.Mutex
	parent   context.Context // the parent of the last call
	values   context.Context // parent, or context.WithoutCancel(parent) when detached
	stop     func() bool     // ends the registration on parent; nil when none
	armed    bool            // a call is running
	ticking  bool            // the timer is started and has not fired
	fireAt   time.Time       // when it fires, while ticking
	deadline time.Time
	done     chan struct{}
	err      error
}

var _ context.Context = (*CallContext)(nil)

// NewCallContext returns an unarmed CallContext. A detached one keeps only
// the values of the parent it is armed with (as context.WithoutCancel
// does, its cancellation and cause are hidden) and ends only at the call's
// timeout; one that is not detached also ends when the parent ends, with
// the parent's error.
func NewCallContext(detached bool) *CallContext {
	c := &CallContext{detached: detached, done: make(chan struct{})}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	return c
}

// Arm starts a call that ends after timeout, or, unless the CallContext is
// detached, when parent ends (at once when parent has already ended).
func (c *CallContext) Arm(parent context.Context, timeout time.Duration) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = true
	if c.err != nil {
		// The previous call ended early: its channel stays closed.
		c.done, c.err = make(chan struct{}), nil
	}
	if parent != c.parent {
		c.forgetParent()
		c.parent, c.values = parent, parent
		if c.detached {
			c.values = context.WithoutCancel(parent)
		} else if parent.Done() != nil {
			c.stop = context.AfterFunc(parent, func() { c.parentDone(parent) })
		}
	}
	if !c.detached {
		if err := parent.Err(); err != nil {
			c.err = err
			close(c.done)
			return
		}
	}
	c.deadline = now.Add(timeout)
	if !c.ticking || c.deadline.Before(c.fireAt) {
		c.ticking, c.fireAt = true, c.deadline
		c.timer.Reset(timeout)
	}
}

// Disarm ends the call. The timer, if started, keeps running: Arm starts it
// only when it is idle or would fire after the new deadline, and a firing
// during a later call starts it again for the rest of that call, so it
// never ends a call before that call's own deadline.
func (c *CallContext) Disarm() {
	c.mu.Lock()
	c.armed = false
	c.mu.Unlock()
}

// Release ends the registration on the last parent, so that the
// CallContext can be dropped. It may be armed again afterwards.
func (c *CallContext) Release() {
	c.mu.Lock()
	c.forgetParent()
	c.mu.Unlock()
}

// forgetParent ends the registration on the last parent. c.mu is held.
func (c *CallContext) forgetParent() {
	if c.stop != nil {
		c.stop()
	}
	c.parent, c.values, c.stop = nil, nil, nil
}

// expire is the timer's function.
func (c *CallContext) expire() {
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

// parentDone runs when the parent p of a CallContext that is not detached
// ended.
func (c *CallContext) parentDone(p context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parent != p {
		return // a registration ended while it fired
	}
	// The registration has fired: nothing to stop any more.
	c.stop = nil
	if !c.armed {
		c.parent, c.values = nil, nil // do not keep an ended context alive
		return
	}
	if c.err == nil {
		c.err = p.Err()
		close(c.done)
	}
}

// Deadline returns the end of the current call: its timeout, or the
// parent's deadline when that is sooner and the CallContext is not
// detached.
func (c *CallContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.detached && c.parent != nil {
		if pd, ok := c.parent.Deadline(); ok && pd.Before(c.deadline) {
			return pd, true
		}
	}
	return c.deadline, true
}

// Done is closed when the current call ended: its timeout passed or, unless
// detached, its parent ended.
func (c *CallContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Err is context.DeadlineExceeded once the call's timeout passed, or the
// parent's error once it ended (unless detached); nil before.
func (c *CallContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value looks key up in the parent the call was armed with.
func (c *CallContext) Value(key any) any {
	c.mu.Lock()
	values := c.values
	c.mu.Unlock()
	if values == nil {
		return nil
	}
	return values.Value(key)
}
