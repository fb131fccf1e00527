package outbox

import (
	"testing"
	"time"
)

// t0 is the time of the claims that do not test the floors' lifetime.
var t0 = time.Unix(1_000_000_000, 0)

// claimOf is a claim of buckets 0 and 1 on server "s1" that read rows up
// to id 100 (seq 120) in a snapshot of xmin 50, taking transaction id 60.
func claimOf() *claimFloors {
	return &claimFloors{ok: true, buckets: []int32{0, 1}, seq: 120, xmin: 50, xid: 60, maxID: 100, server: "s1"}
}

// claimAfterAProbe records, in f, a first claim's probe (seq 120, xid 60),
// then reads a claim of buckets 0 and 1 whose snapshot saw every
// transaction of that probe end (xmin 60, its own xid 70): its horizon
// is 120.
func claimAfterAProbe(f *floors) *claimFloors {
	f.read(claimOf())
	c := claimOf()
	c.xmin, c.xid = 60, 70
	f.read(c)
	return c
}

func TestFloorsWaitForTheTransactionsOfAProbe(t *testing.T) {
	var f floors
	// The first claim has no earlier probe: its horizon is 0, so nothing
	// rises, though it read rows up to 100.
	c1 := claimOf()
	f.read(c1)
	f.raise(c1)
	if got, _, _ := f.all(t0); got[0] != 0 || got[1] != 0 {
		t.Fatalf("floors %v after the first claim, want 0", got[:2])
	}
	// A claim whose snapshot still sees a transaction older than the first
	// probe's xid (xmin 59 < 60) cannot use it.
	c2 := claimOf()
	c2.xmin, c2.xid, c2.seq = 59, 70, 150
	f.read(c2)
	if c2.horizon != 0 {
		t.Fatalf("horizon %d while a transaction of the probe may run, want 0", c2.horizon)
	}
	// Once every transaction of the first probe ended (xmin 60), the ids up
	// to its sequence value (120) are settled; the second probe (xid 70)
	// is not yet.
	c3 := claimOf()
	c3.xmin, c3.xid, c3.seq, c3.maxID = 60, 80, 200, 190
	f.read(c3)
	if c3.horizon != 120 {
		t.Fatalf("horizon %d, want 120", c3.horizon)
	}
	f.raise(c3)
	if got, _, _ := f.all(t0); got[0] != 120 || got[1] != 120 || got[2] != 0 {
		t.Fatalf("floors %v, want 120 for the claim's buckets only", got[:3])
	}
}

func TestFloorsStayBelowWhatAClaimLeftOrDidNotRead(t *testing.T) {
	var f floors
	c := claimAfterAProbe(&f) // horizon 120
	c.full = true
	c.maxID = 90 // its limit cut the scan at 90: rows above were not read
	c.keep(1, 40)
	c.keep(1, 55) // bucket 1 keeps rows 40 and 55 pending
	f.raise(c)
	got, _, highest := f.all(t0)
	if got[0] != 90 || got[1] != 39 {
		t.Fatalf("floors %v, want 90 (the last row read) and 39 (below the row left)", got[:2])
	}
	if highest != 90 {
		t.Fatalf("highest %d, want 90", highest)
	}
	// Floors never go down: a later claim with a lower horizon leaves them.
	low := claimOf()
	low.gen, low.horizon, low.full, low.maxID = c.gen, 0, false, 10
	f.raise(low)
	if got, _, _ := f.all(t0); got[0] != 90 {
		t.Fatalf("floor %d after a lower claim, want 90", got[0])
	}
}

func TestFloorsDoNotRiseAfterRowsWerePassedOver(t *testing.T) {
	var f floors
	c := claimAfterAProbe(&f)
	c.blocked = true // a failed row waits: rows of its key were not returned
	f.raise(c)
	if got, _, _ := f.all(t0); got[0] != 0 {
		t.Fatalf("floor %d after a blocked claim, want 0", got[0])
	}
	c.blocked, c.ok = false, false // a claim that did not read through pgx
	f.raise(c)
	if got, _, _ := f.all(t0); got[0] != 0 {
		t.Fatalf("floor %d after a claim that read nothing, want 0", got[0])
	}
}

func TestFloorsDropWhenTheServerOrTheSequenceChanges(t *testing.T) {
	rise := func(f *floors, seq int64, server string) {
		for _, xmin := range []int64{60, 70} {
			c := claimOf()
			c.seq, c.server, c.xmin, c.xid = seq, server, xmin, xmin+10
			f.read(c)
			f.raise(c)
		}
	}
	var f floors
	rise(&f, 120, "s1")
	if got, server, _ := f.all(t0); got[0] != 120 || server != "s1" {
		t.Fatalf("floors %v on %q, want 120 on s1", got[:2], server)
	}
	// Another server (a restart may have lost committed deletions): every
	// floor and probe goes, and a claim read before the restart raises none.
	f.read(&claimFloors{server: "s2", seq: 120})
	if got, server, _ := f.all(t0); got[0] != 0 || server != "s2" {
		t.Fatalf("floors %v on %q after a restart, want 0 on s2", got[:2], server)
	}
	old := claimOf()
	old.server = "s2"
	f.read(old) // read before the restart...
	f.read(&claimFloors{server: "s3", seq: 120})
	old.horizon = 120
	f.raise(old) // ...settled after it
	if got, _, _ := f.all(t0); got[0] != 0 {
		t.Fatalf("floor %d raised by a claim of the old server", got[0])
	}
	// A sequence below the highest floor (restarted): every floor goes.
	rise(&f, 120, "s2")
	f.read(&claimFloors{server: "s2", seq: 5})
	if got, _, _ := f.all(t0); got[0] != 0 {
		t.Fatalf("floor %d after the sequence went back, want 0", got[0])
	}
	// And after an error.
	rise(&f, 120, "s2")
	f.drop()
	if got, _, _ := f.all(t0); got[0] != 0 {
		t.Fatalf("floor %d after drop, want 0", got[0])
	}
}

func TestParseBuckets(t *testing.T) {
	got, err := parseBuckets("{3,4,63}")
	if err != nil || len(got) != 3 || got[0] != 3 || got[2] != 63 {
		t.Fatalf("parseBuckets: %v, %v", got, err)
	}
	if got, err := parseBuckets("{}"); err != nil || len(got) != 0 {
		t.Fatalf("parseBuckets of none: %v, %v", got, err)
	}
	for _, bad := range []string{"{64}", "{-1}", "{a}"} {
		if _, err := parseBuckets(bad); err == nil {
			t.Fatalf("parseBuckets(%q) took it", bad)
		}
	}
}

func TestFloorsLastTheirLifetime(t *testing.T) {
	var f floors
	c := claimAfterAProbe(&f)
	f.raise(c) // floors 120 (the first probe) for buckets 0 and 1
	if got, _, _ := f.all(t0); got[0] != 120 {
		t.Fatalf("floors %v, want 120", got[:2])
	}
	// The first use started the lifetime; just before its end they hold.
	if got, _, _ := f.all(t0.Add(floorLifetime - time.Nanosecond)); got[0] != 120 || got[1] != 120 {
		t.Fatalf("floors %v before their lifetime ended, want 120", got[:2])
	}
	got, _, highest := f.all(t0.Add(floorLifetime))
	if got[0] != 0 || got[1] != 0 || highest != 0 {
		t.Fatalf("floors %v (highest %d) once their lifetime ended, want 0", got[:2], highest)
	}
	// A claim read before the drop raises nothing; a new claim raises them
	// again, for a new lifetime from the drop on.
	f.raise(c)
	if got, _, _ := f.all(t0.Add(floorLifetime)); got[0] != 0 {
		t.Fatalf("floors %v after a claim read before the drop, want 0", got[:2])
	}
	c = claimAfterAProbe(&f)
	f.raise(c)
	if got, _, _ := f.all(t0.Add(2*floorLifetime - time.Nanosecond)); got[0] != 120 {
		t.Fatalf("floors %v raised in their second lifetime, want 120", got[:2])
	}
}

func TestFloorsEndWhenTheClockGoesBack(t *testing.T) {
	var f floors
	c := claimAfterAProbe(&f)
	f.raise(c)
	if got, _, _ := f.all(t0); got[0] != 120 {
		t.Fatalf("floors %v, want 120", got[:2])
	}
	if got, _, _ := f.all(t0.Add(-time.Hour)); got[0] != 0 {
		t.Fatalf("floors %v once the clock went an hour back, want 0", got[:2])
	}
}

func TestFloorsAfterASettlementLeaveTheFloorsAlone(t *testing.T) {
	var f floors
	c := claimAfterAProbe(&f) // horizon 120
	c.keep(1, 40)             // bucket 1 keeps row 40 pending
	got, _, highest := f.after(t0, c)
	if got[0] != 120 || got[1] != 39 || got[2] != 0 || highest != 120 {
		t.Fatalf("floors after the settlement %v (highest %d), want 120, 39 and 0 (highest 120)", got[:3], highest)
	}
	// Only raise, once the settlement is known to have deleted its rows,
	// raises the floors themselves.
	if now, _, highest := f.all(t0); now[0] != 0 || now[1] != 0 || highest != 0 {
		t.Fatalf("floors %v (highest %d) before raise, want 0", now[:2], highest)
	}
	// A claim read before the floors were dropped raises nothing, after
	// them either.
	f.drop()
	if got, _, _ := f.after(t0, c); got[0] != 0 || got[1] != 0 {
		t.Fatalf("floors after a settlement read before a drop %v, want 0", got[:2])
	}
	// A claim that passed rows over raises nothing.
	b := claimAfterAProbe(&f)
	b.blocked = true
	if got, _, _ := f.after(t0, b); got[0] != 0 {
		t.Fatalf("floors after a blocked claim's settlement %v, want 0", got[:1])
	}
	if got, _, _ := f.after(t0, nil); got[0] != 0 {
		t.Fatalf("floors after no settlement %v, want 0", got[:1])
	}
}

// TestClaimAheadOnlyPastASettledRead checks when a claim may be followed
// by one past its last row (claims ahead): only when its horizon covers
// every id it read, no failed row waited, and it left no row it read
// pending.
func TestClaimAheadOnlyPastASettledRead(t *testing.T) {
	var f floors
	c := claimAfterAProbe(&f) // horizon 120, read up to 100
	if !c.ahead() {
		t.Fatal("a claim read below its horizon may be followed ahead")
	}
	first := claimOf()
	f.read(first) // no probe before it: horizon 0
	if first.ahead() {
		t.Fatal("a claim whose horizon is below the ids it read was followed ahead")
	}
	blocked := claimAfterAProbe(&floors{})
	blocked.blocked = true
	if blocked.ahead() {
		t.Fatal("a claim that passed rows over was followed ahead")
	}
	left := claimAfterAProbe(&floors{})
	left.keep(1, 90)
	if left.ahead() {
		t.Fatal("a claim that leaves a row it read pending was followed ahead")
	}
	if (&claimFloors{}).ahead() {
		t.Fatal("a claim not read was followed ahead")
	}
}

// TestClaimAheadKeepsWhatTheClaimBeforeLeft checks that a claim ahead
// takes on the rows the claim before it left pending: its settlement
// raises no floor past them.
func TestClaimAheadKeepsWhatTheClaimBeforeLeft(t *testing.T) {
	var f floors
	before := claimAfterAProbe(&f)
	before.keep(0, 95)
	ahead := claimOf()
	ahead.xmin, ahead.xid, ahead.maxID = 60, 70, 110
	f.readAhead(ahead)
	if ahead.horizon != 120 {
		t.Fatalf("horizon %d of the claim ahead, want 120 (the probe of its transaction)", ahead.horizon)
	}
	ahead.keepAll(before)
	f.raise(ahead)
	if got, _, _ := f.all(t0); got[0] != 94 || got[1] != 120 {
		t.Fatalf("floors %v, want 94 (below the row left pending) and 120", got[:2])
	}
}
