//go:build integration && restart

package kafkashare

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Environment of TestShareConsumerProcess, the consumer process that
// TestShareKilledConsumersLoseNothing starts and SIGKILLs.
const (
	envChild   = "BQ_SHARE_CHILD"
	envTopic   = "BQ_SHARE_CHILD_TOPIC"
	envGroup   = "BQ_SHARE_CHILD_GROUP"
	envJournal = "BQ_SHARE_CHILD_JOURNAL"
	childRecs  = 64 // WithMaxRecords of the consumer process
)

// TestShareConsumerProcess is the consumer process: an App with 8
// handlers of 5 ms on the share group, each handled meta.id appended to the
// journal before the handler returns. It runs until killed.
func TestShareConsumerProcess(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("the consumer process of TestShareKilledConsumersLoseNothing")
	}
	j, err := os.OpenFile(os.Getenv(envJournal), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTransport(t, WithShareGroup(os.Getenv(envGroup)), WithLockDuration(2*time.Second), WithMaxRecords(childRecs))
	q := os.Getenv(envTopic)
	app := newApp(t, tr, q, babelqueue.WithConcurrency(8, babelqueue.OrderNone))
	app.Handle(urn, func(ctx context.Context, env *babelqueue.Envelope) error {
		time.Sleep(5 * time.Millisecond)
		_, err := j.WriteString(env.Meta.ID + "\n") // one write(2) per line, O_APPEND
		return err
	})
	_ = app.Consume(context.Background(), q)
}

// Chaos: consumer processes SIGKILLed mid-run (4 kills, each after the
// member joined and was handling) lose nothing: every message is handled,
// those in flight at a kill come back when their 2 s lock runs out, and
// the duplicates stay within the records acquired per kill. The file is
// tagged restart with the broker-restart tests: make share-chaos runs it
// on a broker of its own (in make chaos-ci), make integration does not.
func TestShareKilledConsumersLoseNothing(t *testing.T) {
	killedConsumers(t, 1500, 4, nil)
}

// killedConsumers publishes n envelopes and SIGKILLs kills consumer
// processes, each once it handled something; midRun, when not nil, runs
// after the first kill's incarnation handled, before it is killed (a
// broker restart). The last process drains the topic.
func killedConsumers(t *testing.T, n, kills int, midRun func()) {
	q := newTopic(t, 3)
	group := fmt.Sprintf("sg-kill-%d", time.Now().UnixNano())
	tr := newTransport(t, WithShareGroup(group))
	app := newApp(t, tr, q)
	ctx := context.Background()
	for i := range n {
		if _, err := app.Publish(ctx, urn, map[string]int{"i": i}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(fmt.Sprintf("m-%05d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	journal := filepath.Join(t.TempDir(), "handled")
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestShareConsumerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChild+"=1", envTopic+"="+q, envGroup+"="+group, envJournal+"="+journal)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	read := func() (distinct, lines int) {
		f, err := os.Open(journal)
		if err != nil {
			return 0, 0
		}
		defer f.Close()
		seen := map[string]bool{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if id := strings.TrimSpace(sc.Text()); id != "" {
				seen[id] = true
				lines++
			}
		}
		return len(seen), lines
	}
	killed := 0
	for killed < kills {
		before, _ := read()
		cmd := start()
		// Kill once this incarnation handled something (it joined), or
		// after 15 s.
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if d, _ := read(); d > before+50 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if midRun != nil && killed == 0 {
			midRun()
			// The incarnation goes on after the restart until it
			// handles again.
			after, _ := read()
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if d, _ := read(); d > after+50 || d >= n {
					break
				}
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		killed++
		if d, _ := read(); d >= n {
			break
		}
	}
	last := start()
	defer func() { _ = last.Process.Signal(syscall.SIGKILL); _ = last.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if d, _ := read(); d >= n {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	distinct, lines := read()
	// A consumer process holds at most its members (the default) ×
	// childRecs records.
	childHeld := defaults().members * childRecs
	lost, dups, bound := n-distinct, lines-distinct, killed*childHeld
	restart := "no"
	if midRun != nil {
		restart = "yes"
		bound += childHeld // the records held across the broker restart
	}
	line := fmt.Sprintf("chaos: broker=kafkashare n=%d kills=%d broker-restart=%s lost=%d duplicates=%d bound=%d", n, killed, restart, lost, dups, bound)
	fmt.Println(line)
	t.Log(line)
	if lost != 0 {
		t.Errorf("lost=%d, want 0", lost)
	}
	if dups > bound {
		t.Errorf("duplicates=%d, above the %d records acquired per kill", dups, bound)
	}
	if killed < kills {
		t.Errorf("only %d kills before the %d messages were handled", killed, n)
	}
}
