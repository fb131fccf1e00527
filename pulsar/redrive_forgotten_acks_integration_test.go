//go:build integration

package pulsar

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestIntegrationRedriveForgottenAcknowledgements is a run interrupted in
// its third batch on a broker that then forgets the acknowledgements of the
// two batches it had settled (as a standalone killed with -9 does with
// acknowledgements it confirmed in its last seconds; here the redrive
// subscription is reset to its start). The next run finds their copies
// from the interrupted run's first position: every dead letter is in the
// target once.
func TestIntegrationRedriveForgottenAcknowledgements(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	ids := make([]string, 2*RedriveBatchMax+RedriveBatchMax/2)
	for i := range ids {
		ids[i] = fmt.Sprintf("f%03d", i)
	}
	seedDLQ(t, c, dlq, queue, urnA, ids...)

	killed := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	errKilled := errors.New("killed")
	journaled := 0
	killed.redriveFault = func(s string) error {
		if s == "journaled" {
			if journaled++; journaled == 3 {
				return errKilled
			}
		}
		return nil
	}
	res, err := runRedrive(t, killed, dlq)
	if !errors.Is(err, errKilled) || res.Moved != 2*RedriveBatchMax {
		t.Fatalf("interrupted run: moved %d, err %v; want %d moved and the fault", res.Moved, err, 2*RedriveBatchMax)
	}
	_ = killed.Close()
	admin(t, http.MethodPost, dlq+"/subscription/"+DefaultRedriveCursor+"/resetcursor/0")

	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	res, err = runRedrive(t, tr, dlq)
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if !res.Resumed || res.Recovered != 2*RedriveBatchMax || res.Moved != len(ids)-2*RedriveBatchMax {
		t.Fatalf("resumed run: resumed=%v recovered=%d moved=%d; want true, %d, %d",
			res.Resumed, res.Recovered, res.Moved, 2*RedriveBatchMax, len(ids)-2*RedriveBatchMax)
	}
	got := idsOf(t, drainAll(t, c, queue, "check", 3*time.Second))
	slices.Sort(got)
	if !slices.Equal(got, ids) {
		t.Fatalf("target holds %d copies, want each of the %d dead letters once", len(got), len(ids))
	}
}

// TestIntegrationRedriveForgottenAcknowledgementsWithinARun is a run that
// goes on through a broker forgetting acknowledgements: before the copies
// of its third batch, the redrive subscription is reset to its start (as a
// standalone killed with -9 and restarted while the run reconnects comes
// back at an older position), so the consumer receives the two settled
// batches again. The run notices the redelivery, finds their copies in the
// target and acknowledges them without copying: every dead letter is in
// the target once and the run reports each move once.
func TestIntegrationRedriveForgottenAcknowledgementsWithinARun(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	ids := make([]string, 2*RedriveBatchMax+RedriveBatchMax/2)
	for i := range ids {
		ids[i] = fmt.Sprintf("w%03d", i)
	}
	seedDLQ(t, c, dlq, queue, urnA, ids...)

	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	journaled := 0
	tr.redriveFault = func(s string) error {
		if s == "journaled" {
			if journaled++; journaled == 3 {
				admin(t, http.MethodPost, dlq+"/subscription/"+DefaultRedriveCursor+"/resetcursor/0")
			}
		}
		return nil
	}
	res, err := runRedrive(t, tr, dlq)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if journaled < 3 {
		t.Fatalf("the run settled %d batches of moves; the reset needs 3", journaled)
	}
	if res.Moved != len(ids) {
		t.Fatalf("run: moved %d (already moved %d); want %d", res.Moved, res.Recovered, len(ids))
	}
	got := idsOf(t, drainAll(t, c, queue, "check", 3*time.Second))
	slices.Sort(got)
	if !slices.Equal(got, ids) {
		t.Fatalf("target holds %d copies, want each of the %d dead letters once", len(got), len(ids))
	}
}
