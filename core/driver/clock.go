package driver

import (
	"time"
)

// Clock is the runtime's source of time; SystemClock is the real clock and
// bqtest.FakeClock lets a test move time by hand. The App stamps
// dead_letter.failed_at with Now and waits out its failure backoff on
// timers from NewTimer, and bqtest.InMemoryTransport makes delayed messages
// visible by it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C returns the channel on which the timer delivers the time it fired.
	// The channel has a buffer of one, so a timer that fires while nobody
	// is receiving never blocks the clock.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped the timer, false when it had already fired or been stopped.
	Stop() bool
}

// SystemClock is the Clock of the time package. Its zero value is ready to
// use and it is the App's default.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a Timer backed by time.NewTimer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time { return s.t.C }
func (s systemTimer) Stop() bool          { return s.t.Stop() }
