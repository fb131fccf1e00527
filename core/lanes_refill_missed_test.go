package babelqueue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// lateMemory is notifyingMemory whose ReceiveReady, once armed, looks
// before a message arrives and comes back empty after it arrived and was
// announced: the announcement reaches the loop while the receiver role is
// still held by that empty receive.
type lateMemory struct {
	*notifyingMemory
	arrive atomic.Pointer[func()]
}

func (l *lateMemory) ReceiveReady(queue string) (*ReceivedMessage, bool) {
	if msg, ok := l.notifyingMemory.ReceiveReady(queue); ok {
		return msg, true
	}
	if f := l.arrive.Swap(nil); f != nil {
		(*f)() // arrives and is announced after the look above
	}
	return nil, false
}

// An announcement that comes while the receiver role is held by a receive
// that looked too early is not lost: once the role is free, a parked
// worker is woken to receive the announced message, which then runs beside
// a slow one instead of waiting for it.
func TestLanesAnnouncementDuringAnEmptyReadyReceiveIsNotLost(t *testing.T) {
	mem := &lateMemory{notifyingMemory: newNotifyingMemory(bqtest.WithMemoryPartitions(2))}
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(2, OrderKey))
	release := make(chan struct{})
	var fastDone atomic.Bool
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		var m seqMsg
		if err := env.BindData(&m); err != nil {
			return err
		}
		if m.K == "slow" {
			<-release
			return nil
		}
		fastDone.Store(true)
		return nil
	})
	publish := func(k string) {
		if _, err := a.Publish(context.Background(), "urn:t:seq", seqMsg{K: k}, ToQueue("q"), WithKey([]byte(k))); err != nil {
			t.Error(err)
		}
	}
	// The fast message arrives during the first ReceiveReady, which the
	// worker that received the slow one calls before running it.
	arrive := func() { publish("fast") }
	mem.arrive.Store(&arrive)
	stop := lanesRun(t, a, "q")
	publish("slow")
	deadline := time.Now().Add(3 * time.Second)
	for !fastDone.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	handled := fastDone.Load()
	close(release)
	if !handled {
		t.Fatal("the message announced during an empty ReceiveReady waited for the slow one (announcement lost)")
	}
	bqtest.WaitUntil(t, 10*time.Second, "both acknowledged", func() bool { return mem.Acked("q") == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if mem.arrive.Load() != nil {
		t.Fatal("ReceiveReady was never called: the test did not reach the window it checks")
	}
}
