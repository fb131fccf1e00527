package driver

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

func TestDetachedCallContextBehavesLikeWithoutCancelWithTimeout(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
	c := NewCallContext(true)

	// A call that ends in time: values carried, the parent's
	// cancellation not followed, never done.
	c.Arm(parent, time.Hour)
	cancel(errors.New("consumer stopping"))
	if c.Value(ctxKey{}) != "v" {
		t.Error("the call context lost the consume context's values")
	}
	if c.Err() != nil || context.Cause(c) != nil {
		t.Errorf("Err = %v, Cause = %v after the parent was cancelled; want nil", c.Err(), context.Cause(c))
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("Deadline = %v, %v; want about an hour ahead", d, ok)
	}
	c.Disarm()

	// A call that overruns its deadline.
	c.Arm(parent, 10*time.Millisecond)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline passed and Done was not closed")
	}
	if c.Err() != context.DeadlineExceeded || context.Cause(c) != context.DeadlineExceeded {
		t.Errorf("Err = %v, Cause = %v; want DeadlineExceeded", c.Err(), context.Cause(c))
	}
	c.Disarm()

	// The next call starts afresh.
	c.Arm(parent, time.Hour)
	if c.Err() != nil {
		t.Errorf("re-armed context: Err = %v", c.Err())
	}
	select {
	case <-c.Done():
		t.Error("re-armed context is done")
	default:
	}
	c.Disarm()
}

func TestCallContextEnforcesEachCallsOwnDeadline(t *testing.T) {
	c := NewCallContext(true)
	// A short call started the timer; a long call follows it. The timer
	// fires in the long call, which must go on.
	c.Arm(context.Background(), 20*time.Millisecond)
	c.Disarm()
	c.Arm(context.Background(), 200*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	if c.Err() != nil {
		t.Fatalf("the previous call's deadline ended the current call: %v", c.Err())
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the current call's deadline passed and Done was not closed")
	}
	c.Disarm()
	// A firing while no call runs ends nothing.
	c.expire()
	c.Arm(context.Background(), time.Hour)
	if c.Err() != nil {
		t.Fatalf("a firing between calls ended the next call: %v", c.Err())
	}
	c.Disarm()
}

func TestCallContextFollowsItsParent(t *testing.T) {
	type key struct{}
	c := NewCallContext(false)
	defer c.Release()

	// The parent's values and sooner deadline are the call's.
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Minute))
	c.Arm(parent, time.Hour)
	if c.Value(key{}) != "v" {
		t.Error("the call context lost the parent's values")
	}
	if pd, _ := parent.Deadline(); !func() bool { d, ok := c.Deadline(); return ok && d.Equal(pd) }() {
		t.Error("Deadline is not the parent's sooner one")
	}
	// The parent ending ends the running call with its error.
	cancel()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the parent ended and Done was not closed")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err = %v, want context.Canceled", c.Err())
	}
	c.Disarm()

	// A call armed with an ended parent is over at once.
	c.Arm(parent, time.Hour)
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("armed with an ended parent: Err = %v, want context.Canceled", c.Err())
	}
	c.Disarm()

	// A new parent starts afresh; its timeout ends the call.
	c.Arm(context.Background(), 10*time.Millisecond)
	if c.Err() != nil {
		t.Fatalf("armed with a live parent: Err = %v", c.Err())
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the timeout passed and Done was not closed")
	}
	if c.Err() != context.DeadlineExceeded {
		t.Errorf("Err = %v, want DeadlineExceeded", c.Err())
	}
	c.Disarm()

	// Ending a parent between calls touches no call.
	p2, cancel2 := context.WithCancel(context.Background())
	c.Arm(p2, time.Hour)
	c.Disarm()
	cancel2()
	c.Arm(context.Background(), time.Hour)
	if c.Err() != nil {
		t.Errorf("a parent that ended between calls ended the next one: %v", c.Err())
	}
	c.Disarm()
}
