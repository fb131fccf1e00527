package brokertest

import (
	"fmt"
	"runtime"
	"testing"
)

// fakeTB records how a helper ended the test. Fatalf and Skipf stop the
// calling goroutine like the real ones do, so run calls through run.
type fakeTB struct {
	testing.TB // nil: any method not overridden here panics
	name       string
	fatal      string
	skip       string
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fresh fake on its own goroutine and returns the fake
// once fn returned or the fake stopped it.
func run(name string, fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func (f *fakeTB) ended() bool { return f.fatal != "" || f.skip != "" }
