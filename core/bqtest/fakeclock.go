package bqtest

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// FakeClock is a driver.Clock whose time only moves when a test calls Advance or
// Set. It is safe for concurrent use. A timer fires, in deadline order, as
// soon as the clock reaches its deadline; a timer created with a duration
// of zero or less fires at once.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers change
}

// NewFakeClock returns a FakeClock that reads start until it is moved.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a driver.Timer that fires once the clock has been moved d past
// the current time.
func (c *FakeClock) NewTimer(d time.Duration) driver.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, deadline: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		t.fired = true
		return t
	}
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return t
}

// Advance moves the clock forward by d (a negative d is ignored) and fires
// every timer whose deadline has been reached.
func (c *FakeClock) Advance(d time.Duration) {
	if d < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// Set moves the clock to t, if t is after the current time, and fires every
// timer whose deadline has been reached. The clock never moves backwards.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.setLocked(t)
	}
}

func (c *FakeClock) setLocked(now time.Time) {
	c.now = now
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].deadline.Before(c.timers[j].deadline) })
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.deadline.After(now) {
			t.fired = true
			t.ch <- now
			continue
		}
		kept = append(kept, t)
	}
	for i := len(kept); i < len(c.timers); i++ {
		c.timers[i] = nil
	}
	c.timers = kept
	c.notifyLocked()
}

// Timers returns how many timers are waiting to fire.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitForTimers blocks until at least n timers are waiting to fire, or
// returns ctx.Err() when ctx ends first. A test can then Advance only once
// the code under test is waiting on the clock.
func (c *FakeClock) WaitForTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, ch := len(c.timers), c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *FakeClock) remove(t *fakeTimer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.fired {
		return false
	}
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			t.fired = true // a stopped timer never fires
			c.notifyLocked()
			return true
		}
	}
	return false
}

type fakeTimer struct {
	clock    *FakeClock
	deadline time.Time
	ch       chan time.Time
	fired    bool // guarded by clock.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }
func (t *fakeTimer) Stop() bool          { return t.clock.remove(t) }
