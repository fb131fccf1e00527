//go:build integration

package pulsar

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// ackGroupWindow is how long before a SIGKILL an acknowledgement returned
// by Ack may still be in the client's group, never sent: the client's
// grouping time (100 ms) plus 200 ms for its flush to reach the socket on
// a loaded machine.
const ackGroupWindow = 300 * time.Millisecond

// groupedConsumerApp is killConsumerApp with the binding's default,
// grouped acknowledgements.
func groupedConsumerApp(t *testing.T, handle babelqueue.Handler) *babelqueue.App {
	t.Helper()
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared), WithRepublishRetries())
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond),
		babelqueue.WithConcurrency(killInFlight, babelqueue.OrderNone), babelqueue.WithMaxPending(killInFlight))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:kill", handle)
	return app
}

// TestIntegrationKilledGroupedConsumerChild is the consumer child of
// TestIntegrationKilledConsumerGroupedAcksBound: it appends "<unix ns> <id>"
// for each message it handled to BQ_GKILL_FILE, synced before the handler
// returns, until it is killed.
func TestIntegrationKilledGroupedConsumerChild(t *testing.T) {
	queue, file := os.Getenv("BQ_GKILL_QUEUE"), os.Getenv("BQ_GKILL_FILE")
	if queue == "" {
		t.Skip("the child of TestIntegrationKilledConsumerGroupedAcksBound")
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	app := groupedConsumerApp(t, func(_ context.Context, env *babelqueue.Envelope) error {
		time.Sleep(time.Duration(1000+rand.IntN(4001)) * time.Microsecond)
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(f, "%d %s\n", time.Now().UnixNano(), env.Meta.ID); err != nil {
			return err
		}
		return f.Sync()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = app.Consume(ctx, queue)
}

// readTimedIDs reads the child's records: id -> the times it was handled.
func readTimedIDs(t *testing.T, file string) map[string][]time.Time {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string][]time.Time{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		ns, id, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue // a torn last line
		}
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			continue
		}
		out[id] = append(out[id], time.Unix(0, n))
	}
	return out
}

// A consumer child with the default, grouped acknowledgements is
// SIGKILLed while a survivor consumes beside it: nothing is lost, and the
// child's messages handled again by the survivor are no more than it had in
// flight (32) plus those it handled within ackGroupWindow before the kill
// (their acknowledgements may have died in the client's group).
func TestIntegrationKilledConsumerGroupedAcksBound(t *testing.T) {
	const n = 3000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	q := seedKillQueue(t, ctx, n, "g")
	file := filepath.Join(t.TempDir(), "child-handled.txt")
	child := startKillChild(t, ctx, "^TestIntegrationKilledGroupedConsumerChild$", "BQ_GKILL_QUEUE="+q, "BQ_GKILL_FILE="+file)
	waitUntilP(t, 60*time.Second, "the child to handle 300 messages", func() bool { return len(readTimedIDs(t, file)) >= 300 })

	var mu sync.Mutex
	survivor := map[string]int{}
	runApp(t, groupedConsumerApp(t, func(_ context.Context, env *babelqueue.Envelope) error {
		time.Sleep(time.Duration(1000+rand.IntN(4001)) * time.Microsecond)
		mu.Lock()
		survivor[env.Meta.ID]++
		mu.Unlock()
		return nil
	}), q)
	waitUntilP(t, 60*time.Second, "1,200 messages handled by both", func() bool {
		mu.Lock()
		s := len(survivor)
		mu.Unlock()
		return s > 100 && s+len(readTimedIDs(t, file)) >= 1200
	})
	killedAt := child.sigkill(t)
	byChild := readTimedIDs(t, file)
	handled := func() int {
		mu.Lock()
		defer mu.Unlock()
		all := len(byChild)
		for id := range survivor {
			if len(byChild[id]) == 0 {
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
	waitStats(t, q, DefaultSubscription, 30*time.Second, "the backlog to drain",
		func(s subscriptionStats) bool { return s.MsgBacklog == 0 })
	window := 0
	for _, ts := range byChild {
		if killedAt.Sub(ts[len(ts)-1]) < ackGroupWindow {
			window++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for id := range survivor {
		if len(byChild[id]) > 0 {
			dups++
		}
	}
	bound := killInFlight + window
	fmt.Printf("bench: pulsar-kill-grouped-acks-duplicates value=%d bound=%d inflight=%d handled-in-window=%d window-ms=%d child-handled=%d\n",
		dups, bound, killInFlight, window, ackGroupWindow.Milliseconds(), len(byChild))
	if dups > bound {
		t.Errorf("%d messages of the child handled again, more than its %d in flight plus the %d it handled in the last %v",
			dups, killInFlight, window, ackGroupWindow)
	}
}
