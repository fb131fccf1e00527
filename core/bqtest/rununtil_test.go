package bqtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// cleanupTB records Errorf and runs cleanups when asked, so a test can
// see what RunUntilCleanup reports at the end of a test.
type cleanupTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (c *cleanupTB) Helper()                        {}
func (c *cleanupTB) Cleanup(f func())               { c.cleanups = append(c.cleanups, f) }
func (c *cleanupTB) Errorf(format string, a ...any) { c.errs = append(c.errs, format) }
func (c *cleanupTB) end() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
}

// TestRunUntilCleanupStopsAndReports: a run that stops on cancel passes;
// one returning another error, or never returning, is reported.
func TestRunUntilCleanupStopsAndReports(t *testing.T) {
	ok := &cleanupTB{}
	started := make(chan struct{})
	RunUntilCleanup(ok, "Consume", time.Second, func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	<-started
	ok.end()
	if len(ok.errs) != 0 {
		t.Errorf("a run stopped by cancel reported %v", ok.errs)
	}

	failed := &cleanupTB{}
	RunUntilCleanup(failed, "Consume", time.Second, func(context.Context) error { return errors.New("boom") })
	failed.end()
	if len(failed.errs) != 1 || !strings.Contains(failed.errs[0], "%s: %v") {
		t.Errorf("a failed run reported %v, want one error", failed.errs)
	}

	stuck := &cleanupTB{}
	release := make(chan struct{})
	defer close(release)
	RunUntilCleanup(stuck, "Consume", 10*time.Millisecond, func(context.Context) error { <-release; return nil })
	stuck.end()
	if len(stuck.errs) != 1 || !strings.Contains(stuck.errs[0], "did not stop") {
		t.Errorf("a stuck run reported %v, want did not stop", stuck.errs)
	}
}
