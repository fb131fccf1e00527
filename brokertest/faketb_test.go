package brokertest

import (
	"fmt"
	"runtime"
	"strings"
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

// missingCase is one variable left unset and the helper call that must
// then fail.
type missingCase struct {
	unset string
	call  func(testing.TB)
}

// checkMissingFailsInCI runs each case in a subtest: set sets every
// variable, the case's one is overwritten with blank, and its call must
// fail (not skip) with a message naming the variable and CI.
func checkMissingFailsInCI(t *testing.T, set func(*testing.T), blank string, cases map[string]missingCase) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			set(t)
			t.Setenv(c.unset, blank)
			f := run("T", c.call)
			if f.fatal == "" || f.skip != "" {
				t.Fatalf("want a failure, got fatal=%q skip=%q", f.fatal, f.skip)
			}
			if !strings.Contains(f.fatal, c.unset) || !strings.Contains(f.fatal, "CI") {
				t.Errorf("message %q should name %s and CI", f.fatal, c.unset)
			}
		})
	}
}
