//go:build integration

package pulsar

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

const killInFlight = 32

// killConsumerApp is the App of both sides of the SIGKILL test: a Shared
// subscription, 32 handlers and at most 32 messages received and not
// settled. Acknowledgements wait for the broker's answer
// (AckWithResponse), so a message the handler finished is unacknowledged
// only while it holds one of the 32 slots. With the client's default
// grouped acknowledgements (sent up to 100 ms after Ack returns nil) a
// SIGKILL also loses the acknowledgements of that window: measured 73
// duplicates against the 32 in flight in one of two runs.
func killConsumerApp(t *testing.T, handle babelqueue.Handler) (*babelqueue.App, *Transport) {
	t.Helper()
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared), WithRepublishRetries(),
		WithConsumerOptions(func(o *pulsar.ConsumerOptions) { o.AckWithResponse = true }))
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond),
		babelqueue.WithConcurrency(killInFlight, babelqueue.OrderNone), babelqueue.WithMaxPending(killInFlight))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:kill", handle)
	return app, tr
}

// TestIntegrationKilledConsumerChild is the consumer child of
// TestIntegrationKilledConsumerLosesNothing: it appends the id of each
// message it handled to BQ_PKILL_FILE, synced to disk before the handler
// returns (so before the acknowledgement), until it is killed.
func TestIntegrationKilledConsumerChild(t *testing.T) {
	queue, file := os.Getenv("BQ_PKILL_QUEUE"), os.Getenv("BQ_PKILL_FILE")
	if queue == "" {
		t.Skip("the child of TestIntegrationKilledConsumerLosesNothing")
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	app, _ := killConsumerApp(t, func(_ context.Context, env *babelqueue.Envelope) error {
		time.Sleep(time.Duration(1000+rand.IntN(4001)) * time.Microsecond)
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintln(f, env.Meta.ID); err != nil {
			return err
		}
		return f.Sync()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = app.Consume(ctx, queue)
}

// readIDs reads the ids the child recorded.
func readIDs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// A consumer child process on a Shared subscription is SIGKILLed mid-run
// while a survivor consumes beside it: the broker hands the child's
// unacknowledged messages to the survivor, nothing is lost, and the
// messages handled twice are no more than the child had in flight (32).
func TestIntegrationKilledConsumerLosesNothing(t *testing.T) {
	const n = 3000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	q := seedKillQueue(t, ctx, n, "m")
	file := filepath.Join(t.TempDir(), "child-handled.txt")
	child := startKillChild(t, ctx, "^TestIntegrationKilledConsumerChild$", "BQ_PKILL_QUEUE="+q, "BQ_PKILL_FILE="+file)
	waitUntilP(t, 60*time.Second, "the child to handle 300 messages", func() bool { return len(readIDs(t, file)) >= 300 })

	// The survivor consumes beside the child.
	var mu sync.Mutex
	survivor := map[string][]time.Time{}
	app, _ := killConsumerApp(t, func(_ context.Context, env *babelqueue.Envelope) error {
		time.Sleep(time.Duration(1000+rand.IntN(4001)) * time.Microsecond)
		mu.Lock()
		survivor[env.Meta.ID] = append(survivor[env.Meta.ID], time.Now())
		mu.Unlock()
		return nil
	})
	runApp(t, app, q)
	waitUntilP(t, 60*time.Second, "1,200 messages handled by both", func() bool {
		mu.Lock()
		s := len(survivor)
		mu.Unlock()
		return s > 100 && s+len(readIDs(t, file)) >= 1200
	})
	killedAt := child.sigkill(t)
	childIDs := readIDs(t, file)
	byChild := make(map[string]int, len(childIDs))
	for _, id := range childIDs {
		byChild[id]++
	}
	handled := func() int {
		mu.Lock()
		defer mu.Unlock()
		all := len(byChild)
		for id := range survivor {
			if byChild[id] == 0 {
				all++
			}
		}
		return all
	}
	for deadline := time.Now().Add(90 * time.Second); handled() < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages handled; subscription %+v", handled(), n, subscriptionStatsOf(t, q, DefaultSubscription))
		}
	}
	allAt := time.Since(killedAt)
	drained := waitStats(t, q, DefaultSubscription, 30*time.Second, "the backlog to drain",
		func(s subscriptionStats) bool { return s.MsgBacklog == 0 })
	mu.Lock()
	defer mu.Unlock()
	dups, own, childOwn := 0, 0, 0
	var firstDup, lastDup time.Duration
	for id, ts := range survivor {
		own += len(ts) - 1
		if byChild[id] > 0 {
			dups++
			at := ts[0].Sub(killedAt)
			if firstDup == 0 || at < firstDup {
				firstDup = at
			}
			lastDup = max(lastDup, at)
		}
	}
	for _, c := range byChild {
		childOwn += c - 1
	}
	fmt.Printf("bench: pulsar-kill-duplicates value=%d child-handled=%d survivor-handled=%d records=%d inflight-bound=%d\n",
		dups, len(byChild), len(survivor), n, killInFlight)
	fmt.Printf("bench: pulsar-kill-redelivery-ms first=%d last=%d all-handled=%d\n",
		firstDup.Milliseconds(), lastDup.Milliseconds(), allAt.Milliseconds())
	t.Logf("after the kill: %d of the child's messages handled again by the survivor (first %v, last %v after the kill), all %d handled %v after it; subscription %+v",
		dups, firstDup.Round(time.Millisecond), lastDup.Round(time.Millisecond), n, allAt.Round(time.Millisecond), drained)
	if dups > killInFlight {
		t.Errorf("%d messages of the child handled again, more than its %d in flight", dups, killInFlight)
	}
	if own != 0 || childOwn != 0 {
		t.Errorf("the survivor handled %d messages twice and the child %d: neither was killed mid-message", own, childOwn)
	}
}

func waitUntilP(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seedKillQueue returns a new queue holding n messages (ids idPrefix and a
// 5-digit number), published from 8 goroutines after a Shared subscription
// was made, so that none is lost to retention before the consumers come.
func seedKillQueue(t *testing.T, ctx context.Context, n int, idPrefix string) string {
	t.Helper()
	q := uniqueQueue(t)
	sub := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	if _, err := sub.consumerFor(q); err != nil { // subscribe before publishing
		t.Fatal(err)
	}
	_ = sub.Close()
	pub, err := babelqueue.NewApp(newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Value
	for p := range 8 {
		wg.Go(func() {
			for i := p; i < n; i += 8 {
				if _, err := pub.Publish(ctx, "urn:it:kill", map[string]int{"n": i}, babelqueue.ToQueue(q),
					babelqueue.WithEnvelopeOptions(babelqueue.WithID(fmt.Sprintf("%s%05d", idPrefix, i)))); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	return q
}

// killChild is a consumer child process: this test binary running one
// child test. It is killed at the test's end unless sigkill killed it.
type killChild struct {
	cmd    *exec.Cmd
	killed bool
}

// startKillChild starts the test binary running the test matching run,
// with env added to its environment.
func startKillChild(t *testing.T, ctx context.Context, run string, env ...string) *killChild {
	t.Helper()
	c := &killChild{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run", run, "-test.count=1")}
	c.cmd.Env = append(os.Environ(), env...)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !c.killed {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// sigkill kills the child with SIGKILL, waits for it, and returns when
// the signal was sent.
func (c *killChild) sigkill(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.killed = true
	_ = c.cmd.Wait()
	return at
}
