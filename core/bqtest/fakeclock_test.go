package bqtest

import (
	"context"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

func TestFakeClockFiresTimersInOrder(t *testing.T) {
	c := NewFakeClock(epoch)
	t3 := c.NewTimer(3 * time.Second)
	t1 := c.NewTimer(time.Second)
	t2 := c.NewTimer(2 * time.Second)
	if c.Timers() != 3 {
		t.Fatalf("Timers = %d", c.Timers())
	}
	fired := func(tm driver.Timer) bool {
		select {
		case <-tm.C():
			return true
		default:
			return false
		}
	}
	c.Advance(999 * time.Millisecond)
	if fired(t1) || fired(t2) || fired(t3) {
		t.Fatal("a timer fired early")
	}
	c.Advance(time.Millisecond)
	if !fired(t1) || fired(t2) {
		t.Fatal("t1 should fire at +1s, alone")
	}
	if !t2.Stop() || t2.Stop() {
		t.Error("Stop of a pending timer must report true once")
	}
	c.Set(epoch.Add(time.Hour))
	if fired(t2) || !fired(t3) {
		t.Error("a stopped timer fired, or t3 did not")
	}
	if t3.Stop() {
		t.Error("Stop of a fired timer reported true")
	}
	if !c.Now().Equal(epoch.Add(time.Hour)) {
		t.Errorf("Now = %v", c.Now())
	}
	c.Set(epoch) // never backwards
	c.Advance(-time.Hour)
	if !c.Now().Equal(epoch.Add(time.Hour)) {
		t.Errorf("the clock moved backwards to %v", c.Now())
	}
	if !fired(c.NewTimer(0)) {
		t.Error("a zero timer did not fire at once")
	}
}

func TestFakeClockWaitForTimers(t *testing.T) {
	c := NewFakeClock(epoch)
	go func() {
		time.Sleep(10 * time.Millisecond)
		c.NewTimer(time.Second)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if err := c.WaitForTimers(short, 2); err == nil {
		t.Error("WaitForTimers returned without the timers")
	}
}

func TestSystemClock(t *testing.T) {
	var c driver.Clock = driver.SystemClock{}
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Errorf("Now is off by %v", d)
	}
	tm := c.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("system timer never fired")
	}
	if c.NewTimer(time.Hour).Stop() != true {
		t.Error("Stop of a pending system timer reported false")
	}
}
