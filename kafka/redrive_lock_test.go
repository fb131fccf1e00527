package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
)

// The redrive lock scenarios, run on the embedded broker here and on the
// real broker by redrive_lock_integration_test.go.

func TestRedriveLockBusyWhileRunning(t *testing.T) { scenarioLockBusyWhileRunning(t, embEnv(t)) }

// Simultaneous starts rely on the rebalances of a real group coordinator:
// redrive_lock_integration_test.go tests them.

func TestRedriveLockDeadRunExpires(t *testing.T) { scenarioLockDeadRunExpires(t, embEnv(t)) }

func TestRedriveLockGroupName(t *testing.T) {
	if got := redriveLockGroup(RedriveCursor("orders.dlq")); got != "bq-redrive.orders.dlq.lock" {
		t.Errorf("redriveLockGroup = %q", got)
	}
}

// rdState is what a run may change: the cursor's committed offsets and
// the end offsets of the DLQ and the target.
func rdState(t *testing.T, ctx context.Context, b *redriveBroker, dlq, work string) string {
	t.Helper()
	parts, err := b.partitions(ctx, dlq)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.committed(ctx, RedriveCursor(dlq), dlq, parts)
	if err != nil {
		t.Fatal(err)
	}
	_, dEnd, err := b.bounds(ctx, dlq, parts)
	if err != nil {
		t.Fatal(err)
	}
	wparts, err := b.partitions(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	_, wEnd, err := b.bounds(ctx, work, wparts)
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, p := range parts {
		s += "cursor " + strconv.Itoa(p) + "@" + strconv.FormatInt(c[p].CommittedOffset, 10) + " " + c[p].Metadata +
			"; dlq end " + strconv.FormatInt(dEnd[p], 10) + "; "
	}
	for _, p := range wparts {
		s += "target end " + strconv.FormatInt(wEnd[p], 10) + "; "
	}
	return s
}

// scenarioLockBusyWhileRunning holds a run after its first pending commit:
// a second run on the same cursor fails with ErrRedriveBusy and changes
// nothing, a dry run is not refused, and once the first run ends a run
// proceeds at once (the first left the lock group).
func scenarioLockBusyWhileRunning(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, 2*time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work, dlq := e.topics(t, ctx, 1)
	var seeds []rdSeed
	for i := range 4 {
		seeds = append(seeds, rdSeed{key: []byte("k" + strconv.Itoa(i)), urn: "urn:a"})
	}
	e.seed(t, ctx, b, dlq, work, seeds...)

	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	redriveFault = func(point, kind string, partition int, offset int64) error {
		if point == redriveAfterPending {
			once.Do(func() {
				close(held)
				<-release
			})
		}
		return nil
	}
	t.Cleanup(func() { redriveFault = nil })
	type outcome struct {
		res *redrive.Result
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		res, err := redrive.Run(ctx, tr, dlq)
		first <- outcome{res, err}
	}()
	select {
	case <-held:
	case o := <-first:
		t.Fatalf("first run ended before its first write: %+v, %v", o.res, o.err)
	case <-ctx.Done():
		t.Fatal("first run never reached its first write")
	}

	before := rdState(t, ctx, b, dlq, work)
	res, err := redrive.Run(ctx, e.transport(t), dlq)
	if !errors.Is(err, ErrRedriveBusy) {
		t.Errorf("second run while the first runs: %v, want ErrRedriveBusy", err)
	}
	if res != nil && (res.Examined != 0 || res.Moved != 0) {
		t.Errorf("refused run examined %d, moved %d", res.Examined, res.Moved)
	}
	if after := rdState(t, ctx, b, dlq, work); after != before {
		t.Errorf("the refused run changed the cursor or the topics:\n before %s\n after  %s", before, after)
	}
	dry, err := redrive.Run(ctx, e.transport(t), dlq, redrive.WithDryRun())
	if err != nil || dry.Examined != len(seeds) {
		t.Errorf("dry run while the first runs: %+v, %v", dry, err)
	}

	close(release)
	o := <-first
	if o.err != nil || o.res.Moved != len(seeds) {
		t.Fatalf("first run: %+v, %v", o.res, o.err)
	}
	redriveFault = nil
	if res := runRedrive(t, ctx, tr, dlq); res.Moved != 0 || res.Examined != 0 {
		t.Errorf("run after the first: %+v", res)
	}
	if n := len(rdRead(t, ctx, b, work, nil)); n != len(seeds) {
		t.Errorf("target holds %d records, want %d (no duplicate)", n, len(seeds))
	}
}

// scenarioLockDeadRunExpires simulates a run killed while holding the
// lock (a member that stops heartbeating without leaving): runs are
// refused until its session expires, then a run proceeds and moves every
// dead letter once.
func scenarioLockDeadRunExpires(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, 2*time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work, dlq := e.topics(t, ctx, 1)
	seeds := []rdSeed{{key: []byte("k0"), urn: "urn:a"}, {key: []byte("k1"), urn: "urn:a"}}
	e.seed(t, ctx, b, dlq, work, seeds...)

	dead, err := acquireRedriveLock(ctx, e.broker(t).client, RedriveCursor(dlq), nil)
	if err != nil {
		t.Fatal(err)
	}
	dead.stopHeartbeats() // killed: no more heartbeats, no LeaveGroup
	before := rdState(t, ctx, b, dlq, work)
	if _, err := redrive.Run(ctx, tr, dlq); !errors.Is(err, ErrRedriveBusy) {
		t.Fatalf("run while the dead run's session lasts: %v, want ErrRedriveBusy", err)
	}
	if after := rdState(t, ctx, b, dlq, work); after != before {
		t.Errorf("the refused run changed the cursor or the topics:\n before %s\n after  %s", before, after)
	}
	refused := 1
	for {
		res, err := redrive.Run(ctx, tr, dlq)
		if err == nil {
			if res.Moved != len(seeds) {
				t.Errorf("run after the session expired: %+v", res)
			}
			break
		}
		if !errors.Is(err, ErrRedriveBusy) {
			t.Fatalf("run: %v", err)
		}
		refused++
		select {
		case <-ctx.Done():
			t.Fatalf("the dead run's membership never expired (%d runs refused)", refused)
		case <-time.After(time.Second):
		}
	}
	if n := len(rdRead(t, ctx, b, work, nil)); n != len(seeds) {
		t.Errorf("target holds %d records, want %d", n, len(seeds))
	}
	t.Logf("runs refused before the dead run's session expired: %d", refused)
}

func TestErrRedriveBusyMatchesTheCoreSentinel(t *testing.T) {
	err := fmt.Errorf("redrive orders.dlq: %w", ErrRedriveBusy)
	if !errors.Is(err, babelqueue.ErrRedriveBusy) || !errors.Is(err, ErrRedriveBusy) {
		t.Fatalf("%v matches neither ErrRedriveBusy", err)
	}
}
