//go:build integration

package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The redrive lock scenarios of redrive_lock_test.go on the real Apache
// Kafka broker, whose group coordinator does the rebalances and session
// expiry the lock relies on.

func TestIntegrationRedriveLockBusyWhileRunning(t *testing.T) {
	scenarioLockBusyWhileRunning(t, itEnv(t))
}

func TestIntegrationRedriveLockSimultaneousStarts(t *testing.T) {
	scenarioLockSimultaneousStarts(t, itEnv(t))
}

func TestIntegrationRedriveLockDeadRunExpires(t *testing.T) {
	scenarioLockDeadRunExpires(t, itEnv(t))
}

// scenarioLockSimultaneousStarts takes the lock of one cursor from two
// clients at the same moment, several times: never both hold it.
func scenarioLockSimultaneousStarts(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, 3*time.Minute)
	cursor := rdName("rd-lock")
	b1, b2 := e.broker(t), e.broker(t)
	for round := range 3 {
		var wg sync.WaitGroup
		locks := make([]*redriveLock, 2)
		errs := make([]error, 2)
		for i, b := range []*redriveBroker{b1, b2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				locks[i], errs[i] = acquireRedriveLock(ctx, b.client, cursor, nil)
			}()
		}
		wg.Wait()
		held := 0
		for i := range locks {
			if errs[i] == nil {
				held++
				continue
			}
			if !errors.Is(errs[i], ErrRedriveBusy) {
				t.Errorf("round %d: starter %d: %v, want ErrRedriveBusy", round, i, errs[i])
			}
		}
		if held > 1 {
			t.Fatalf("round %d: both starters hold the lock (lost: %v, %v)", round, locks[0].lostErr(), locks[1].lostErr())
		}
		// The holder keeps the lock through the rebalances the other
		// starter caused (it rejoins), for a few heartbeats.
		time.Sleep(3 * redriveLockHeartbeat)
		for _, l := range locks {
			if l != nil {
				if err := l.lostErr(); err != nil {
					t.Errorf("round %d: the holder lost the lock: %v", round, err)
				}
				l.release()
			}
		}
		// The next round starts when the group is empty again.
		waitLockEmpty(t, ctx, b1, cursor)
	}
}

// waitLockEmpty waits until the lock group of cursor has no member.
func waitLockEmpty(t *testing.T, ctx context.Context, b *redriveBroker, cursor string) {
	t.Helper()
	for {
		l, err := acquireRedriveLock(ctx, b.client, cursor, nil)
		if err == nil {
			l.release()
			return
		}
		if !errors.Is(err, ErrRedriveBusy) {
			t.Fatalf("lock of %q: %v", cursor, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("lock group of %q never emptied", cursor)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
