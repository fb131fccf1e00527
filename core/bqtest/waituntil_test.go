package bqtest

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// fatalTB records Fatalf and stops the goroutine like the real one.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, a ...any) {
	f.fatal = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

func TestWaitUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	WaitUntil(t, time.Minute, "the third call", func() bool { return calls.Add(1) >= 3 })
	if calls.Load() != 3 {
		t.Errorf("%d calls, want 3", calls.Load())
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v for three polls", d)
	}
}

func TestWaitUntilFailsNamingWhatAfterWithin(t *testing.T) {
	f := &fatalTB{}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		WaitUntil(f, 50*time.Millisecond, "never", func() bool { return false })
	}()
	<-done
	if f.fatal != "timed out waiting for never" {
		t.Errorf("fatal %q", f.fatal)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %v, before within", d)
	}
}
