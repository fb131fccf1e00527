//go:build integration

package pulsar

import (
	"fmt"
	"testing"
	"time"

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
	return killApp(t, handle)
}

// TestIntegrationKilledGroupedConsumerChild is the consumer child of
// TestIntegrationKilledConsumerGroupedAcksBound (runKillChild).
func TestIntegrationKilledGroupedConsumerChild(t *testing.T) {
	runKillChild(t, "BQ_GKILL_QUEUE", "BQ_GKILL_FILE", "TestIntegrationKilledConsumerGroupedAcksBound", groupedConsumerApp)
}

// A consumer child with the default, grouped acknowledgements is
// SIGKILLed while a survivor consumes beside it: nothing is lost, and the
// child's messages handled again by the survivor are no more than it had in
// flight (32) plus those it handled within ackGroupWindow before the kill
// (their acknowledgements may have died in the client's group).
func TestIntegrationKilledConsumerGroupedAcksBound(t *testing.T) {
	run := runConsumerKill(t, 3000, "g", "TestIntegrationKilledGroupedConsumerChild", "BQ_GKILL_QUEUE", "BQ_GKILL_FILE", groupedConsumerApp)
	window := 0
	for _, ts := range run.byChild {
		if run.killedAt.Sub(ts[len(ts)-1]) < ackGroupWindow {
			window++
		}
	}
	dups := 0
	for id := range run.survivor {
		if len(run.byChild[id]) > 0 {
			dups++
		}
	}
	bound := killInFlight + window
	fmt.Printf("bench: pulsar-kill-grouped-acks-duplicates value=%d bound=%d inflight=%d handled-in-window=%d window-ms=%d child-handled=%d\n",
		dups, bound, killInFlight, window, ackGroupWindow.Milliseconds(), len(run.byChild))
	if dups > bound {
		t.Errorf("%d messages of the child handled again, more than its %d in flight plus the %d it handled in the last %v",
			dups, killInFlight, window, ackGroupWindow)
	}
}
