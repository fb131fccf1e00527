package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestKillMomentsFallInOrderWithinThePhase(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		at := killMoments(rnd, 5, 3*time.Second, 20*time.Second)
		if len(at) != 5 || !slices.IsSorted(at) {
			t.Fatalf("moments %v: want 5 in order", at)
		}
		if at[0] < 3*time.Second || at[4] >= 20*time.Second {
			t.Fatalf("moments %v: want all in [3s, 20s)", at)
		}
	}
}
