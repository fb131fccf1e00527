package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/babelqueue/babelqueue-go/chaos"
)

// A kill can leave a gap: four concurrent publishes record their intents
// out of order, so the id after a gap may be recorded when the one before
// it is not. The next incarnation publishes the gap, not only what
// follows the highest id.
func TestUnrecordedFillsGapsBelowTheHighestID(t *testing.T) {
	path := filepath.Join(t.TempDir(), producerLog)
	run := "r1"
	log := "I " + chaos.ID(run, 0) + "\nA " + chaos.ID(run, 0) + "\n" +
		"I " + chaos.ID(run, 1) + "\n" +
		"I " + chaos.ID(run, 3) + "\nA " + chaos.ID(run, 3) + "\n" +
		"I " + chaos.ID(run, 4) // torn: no newline, the kill cut it
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := readProducerLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := unrecorded(recs, run, 6), []int{2, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("unrecorded = %v, want %v", got, want)
	}
}
