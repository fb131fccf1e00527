package babelqueue

import (
	"strconv"
	"testing"
)

func TestLaneTableKeepsIdleLanesWithinItsBounds(t *testing.T) {
	var tb laneTable
	tb.init(64)
	const keys = 3 * maxIdleLanes
	for i := range keys {
		k := "key-" + strconv.Itoa(i)
		if tb.byKey[k] != nil {
			t.Fatalf("key %s found before it was added", k)
		}
		l := tb.add(laneKey{kind: laneByKey, key: k})
		l.waiting = append(l.waiting, &ReceivedMessage{Body: k})
		if got := tb.byKey[k]; got != l {
			t.Fatalf("byKey[%s] = %p; want the added lane %p", k, got, l)
		}
		l.popLocked()
		tb.idle(l)
		tb.idle(l) // told twice: harmless
	}
	if n := tb.len(); n > maxIdleLanes+1 {
		t.Errorf("table holds %d idle lanes; want at most %d", n, maxIdleLanes+1)
	}
	if n := len(tb.free); n > maxFreeLanes {
		t.Errorf("free list holds %d lanes; want at most %d", n, maxFreeLanes)
	}
	seen := make(map[*lane]bool)
	for _, l := range tb.free {
		if seen[l] {
			t.Fatal("a lane is on the free list twice")
		}
		seen[l] = true
		if l.inTable || l.scheduled || l.paused || len(l.waiting) != 0 || l.key != (laneKey{}) {
			t.Fatalf("free lane not reset: %+v", l)
		}
	}
	// A kept idle lane is found again for its key.
	if l := tb.byKey["key-0"]; l == nil || l.key.key != "key-0" {
		t.Errorf("idle lane of key-0 not kept: %v", l)
	}
	// A single-message lane is forgotten once idle.
	s := tb.add(laneKey{kind: laneSingle, seq: 1})
	tb.idle(s)
	if _, ok := tb.single[1]; ok || s.inTable {
		t.Error("idle single-message lane kept")
	}
}
