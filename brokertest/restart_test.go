package brokertest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeScripts points BQ_RESTART_SCRIPTS at a directory holding fake.sh,
// which appends its verb to calls.log and exits with the status in
// exit-<verb> (0 when absent). It returns the directory.
func fakeScripts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nd=$(dirname \"$0\")\necho \"$1\" >>\"$d/calls.log\"\n[ -f \"$d/exit-$1\" ] && exit \"$(cat \"$d/exit-$1\")\"\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, "fake.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvRestartScripts, dir)
	t.Setenv("BQ_BROKERS_STATE", dir)
	return dir
}

func TestOutageRunPublishesAcrossKillAndStart(t *testing.T) {
	dir := fakeScripts(t)
	var calls [2]atomic.Int64
	var beforeKill atomic.Int64
	publisher := func(i int) func() {
		return func() {
			if n := calls[i].Add(1); n == 1 {
				if _, err := os.Stat(filepath.Join(dir, "calls.log")); err == nil {
					beforeKill.Store(-1)
				} else {
					beforeKill.Add(1)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	o := Outage{Broker: "fake", Before: 50 * time.Millisecond, Down: 30 * time.Millisecond, After: 20 * time.Millisecond}
	away := o.Run(t, publisher(0), publisher(1))
	if away < o.Down {
		t.Errorf("away %v, want at least Down %v", away, o.Down)
	}
	log, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(log)); strings.Join(got, " ") != "kill start" {
		t.Errorf("script calls %q, want kill then start", got)
	}
	if beforeKill.Load() != 2 {
		t.Errorf("both publishers should start before the kill (got %d)", beforeKill.Load())
	}
	ended := [2]int64{calls[0].Load(), calls[1].Load()}
	time.Sleep(20 * time.Millisecond)
	for i := range calls {
		if ended[i] == 0 || calls[i].Load() != ended[i] {
			t.Errorf("publisher %d: %d calls at return, %d later; want some, and none after Run", i, ended[i], calls[i].Load())
		}
	}
}

func TestOutageRunStopsPublishersWhenAScriptFails(t *testing.T) {
	dir := fakeScripts(t)
	if err := os.WriteFile(filepath.Join(dir, "exit-start"), []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	f := run("T", func(tb testing.TB) {
		Outage{Broker: "fake", Before: 10 * time.Millisecond}.Run(tb, func() { calls.Add(1); time.Sleep(time.Millisecond) })
	})
	if !strings.Contains(f.fatal, "fake.sh start") {
		t.Fatalf("fatal %q, want the failing start named", f.fatal)
	}
	n := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if n == 0 || calls.Load() != n {
		t.Errorf("%d calls at the failure, %d later: the publisher should have run and then stopped", n, calls.Load())
	}
}

func TestOutcomesSortAndTally(t *testing.T) {
	var o Outcomes
	unknownErr := errors.New("unknown")
	var wg sync.WaitGroup
	for _, p := range []struct {
		id      string
		err     error
		unknown bool
	}{
		{"a1", nil, false}, {"a2", nil, false}, {"a3", nil, false},
		{"u1", unknownErr, true}, {"u2", unknownErr, true},
		{"r1", errors.New("refused"), false}, {"r2", errors.New("refused"), false},
	} {
		wg.Add(1)
		go func() { defer wg.Done(); o.Add(p.id, p.err, p.unknown) }()
	}
	wg.Wait()
	if len(o.Acked) != 3 || len(o.Unknown) != 2 || len(o.Refused) != 2 {
		t.Fatalf("acked=%d unknown=%d refused=%d, want 3, 2 and 2", len(o.Acked), len(o.Unknown), len(o.Refused))
	}
	// a2 lost, a3 stored three times, u1 republished and stored, u2
	// republished and lost, r2 stored although refused.
	stored := map[string]int{"a1": 1, "a3": 3, "u1": 1, "r2": 1}
	lost, dups, refusedStored := o.Tally(stored, []string{"u1", "u2"})
	if lost != 2 || dups != 2 || refusedStored != 1 {
		t.Errorf("lost=%d dups=%d refused_stored=%d, want 2, 2 and 1", lost, dups, refusedStored)
	}
}
