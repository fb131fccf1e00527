package kafka

import (
	"context"
	"testing"
	"time"
)

// TestBudgetWakesWaitersOnceBelowAnEighth: a fetcher waiting at the cap
// is woken once the budget falls an eighth below it, and the releases that
// follow before anyone waits again neither wake nor replace anything.
func TestBudgetWakesWaitersOnceBelowAnEighth(t *testing.T) {
	b := newRecordBudget(8, 1<<20)
	ctx := context.Background()
	for range 8 {
		if err := b.acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 1) }()
	budgetEventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.waiting == 1 })
	room := b.room
	b.release(1, 1) // 7 of 8 held: an eighth below the cap
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken")
	}
	b.mu.Lock()
	waiting, replaced := b.waiting, b.room != room
	b.mu.Unlock()
	if waiting != 0 || !replaced {
		t.Fatalf("after the wake: waiting %d, room replaced %v; want 0, true", waiting, replaced)
	}
	room = b.room
	b.release(3, 3)
	if b.room != room {
		t.Fatal("a release with nobody waiting replaced the room channel")
	}
	if r, n := b.held(); r != 5 || n != 5 {
		t.Fatalf("held %d records, %d bytes; want 5, 5", r, n)
	}
}

// TestBudgetWaiterThatGivesUpIsCountedOut: a waiter whose context ends
// leaves the count, so a later release does not wake nobody.
func TestBudgetWaiterThatGivesUpIsCountedOut(t *testing.T) {
	b := newRecordBudget(1, 1<<20)
	if err := b.acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.acquire(ctx, 1); err == nil {
		t.Fatal("acquire at the cap returned before its context ended")
	}
	b.mu.Lock()
	waiting := b.waiting
	b.mu.Unlock()
	if waiting != 0 {
		t.Fatalf("waiting %d after the waiter gave up; want 0", waiting)
	}
	room := b.room
	b.release(1, 1)
	if b.room != room {
		t.Fatal("a release with nobody waiting replaced the room channel")
	}
}

// budgetEventually waits up to 5 s for cond.
func budgetEventually(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition not met within 5s")
		}
	}
}

// TestBudgetReleasesBeforeTheWokenRunMakeOneChannel: releases between the
// wake and the woken waiter's run make no new channel each (they used to,
// one allocation per record settled meanwhile), and the woken waiter is
// not counted out twice.
func TestBudgetReleasesBeforeTheWokenRunMakeOneChannel(t *testing.T) {
	b := newRecordBudget(8, 1<<20)
	for range 8 {
		if err := b.acquire(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// A waiter at the cap, as acquire registers it, that has not run yet.
	b.mu.Lock()
	b.waiting++
	room := b.room
	b.mu.Unlock()
	b.release(1, 1) // wakes it
	select {
	case <-room:
	default:
		t.Fatal("the release an eighth below the cap did not wake the waiter")
	}
	next := b.room
	b.release(1, 1)
	b.release(1, 1)
	if b.room != next {
		t.Fatal("releases before the woken waiter ran replaced the room channel again")
	}
	b.leave(room) // the woken waiter's recheck fired as well
	if b.waiting != 0 {
		t.Fatalf("waiting %d; want 0", b.waiting)
	}
}
