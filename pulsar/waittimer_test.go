package pulsar

import (
	"testing"
	"time"
)

// A pooled wait timer never fires early for its next user, whether its
// last wait ended by firing (value received or not) or by being stopped.
func TestWaitTimerReuseNeverFiresEarly(t *testing.T) {
	for _, ending := range []string{"fired-received", "fired-unreceived", "stopped"} {
		tm := waitTimer(time.Millisecond)
		switch ending {
		case "fired-received":
			<-tm.C
		case "fired-unreceived":
			time.Sleep(5 * time.Millisecond)
		}
		releaseWaitTimer(tm)
		next := waitTimer(time.Hour)
		select {
		case <-next.C:
			t.Fatalf("%s: a reused timer fired at once", ending)
		case <-time.After(20 * time.Millisecond):
		}
		releaseWaitTimer(next)
	}
}
