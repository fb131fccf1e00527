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

// TestIntegrationRedriveForgottenAcknowledgementsAfterACleanRun is a run
// that ends cleanly on a broker that then forgets its acknowledgements (as
// a standalone killed with -9 just after the run does; here the redrive
// subscription is reset to its start). The next run finds the sources in
// the closing record (Recent) and acknowledges the dead letters without a
// copy: every dead letter is in the target once.
func TestIntegrationRedriveForgottenAcknowledgementsAfterACleanRun(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	ids := make([]string, RedriveBatchMax+RedriveBatchMax/2)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%03d", i)
	}
	seedDLQ(t, c, dlq, queue, urnA, ids...)

	res, err := runRedrive(t, newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)), dlq)
	if err != nil || res.Moved != len(ids) {
		t.Fatalf("clean run: moved %d, %v; want %d", res.Moved, err, len(ids))
	}
	admin(t, http.MethodPost, dlq+"/subscription/"+DefaultRedriveCursor+"/resetcursor/0")

	res, err = runRedrive(t, newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)), dlq)
	if err != nil {
		t.Fatalf("next run: %v", err)
	}
	if res.Moved != 0 || res.Recovered != len(ids) {
		t.Fatalf("next run: moved %d, already moved %d; want 0 and %d", res.Moved, res.Recovered, len(ids))
	}
	got := idsOf(t, drainAll(t, c, queue, "check", 3*time.Second))
	slices.Sort(got)
	if !slices.Equal(got, ids) {
		t.Fatalf("target holds %d copies, want each of the %d dead letters once", len(got), len(ids))
	}
}

// TestIntegrationRedriveForgottenAcknowledgementsCarriedThroughAnInterruption:
// a clean run, then a broker that forgets its acknowledgements, then a run
// interrupted before the copies of its first batch of new moves (after it
// acknowledged the first run's dead letters again without a copy), then a
// broker that forgets again. The third run reads the first run's closing
// record through the interrupted run's Base: every dead letter, old and
// new, is in the target once.
func TestIntegrationRedriveForgottenAcknowledgementsCarriedThroughAnInterruption(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	old := make([]string, RedriveBatchMax/2)
	for i := range old {
		old[i] = fmt.Sprintf("o%03d", i)
	}
	fresh := make([]string, RedriveBatchMax/2)
	for i := range fresh {
		fresh[i] = fmt.Sprintf("n%03d", i)
	}
	seedDLQ(t, c, dlq, queue, urnA, old...)
	res, err := runRedrive(t, newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)), dlq)
	if err != nil || res.Moved != len(old) {
		t.Fatalf("clean run: moved %d, %v; want %d", res.Moved, err, len(old))
	}
	seedDLQ(t, c, dlq, queue, urnA, fresh...)
	reset := func() { admin(t, http.MethodPost, dlq+"/subscription/"+DefaultRedriveCursor+"/resetcursor/0") }
	reset()

	killed := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	errKilled := errors.New("killed")
	killed.redriveFault = func(s string) error {
		if s == "journaled" {
			return errKilled
		}
		return nil
	}
	if _, err := runRedrive(t, killed, dlq); !errors.Is(err, errKilled) {
		t.Fatalf("interrupted run: %v, want the fault", err)
	}
	_ = killed.Close()
	reset()

	res, err = runRedrive(t, newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)), dlq)
	if err != nil {
		t.Fatalf("third run: %v", err)
	}
	if res.Moved != len(fresh) || res.Recovered != len(old) {
		t.Fatalf("third run: moved %d, already moved %d; want %d and %d", res.Moved, res.Recovered, len(fresh), len(old))
	}
	got := idsOf(t, drainAll(t, c, queue, "check", 3*time.Second))
	slices.Sort(got)
	want := slices.Sorted(slices.Values(append(slices.Clone(fresh), old...)))
	if !slices.Equal(got, want) {
		t.Fatalf("target holds %d copies, want each of the %d dead letters once", len(got), len(want))
	}
}
