package outbox

import (
	"slices"
	"sync"
	"time"
)

// The SQL the floors rest on (PostgreSQL): the table's id sequence's last
// value (0 before its first), the server's start time, the migration that
// makes the id column's default take the inserting transaction's id
// before the next id (a CASE evaluates its condition first), and the
// check that the default does so. A claim uses its floors only while the
// server and the sequence are those the floors rose on and the default
// takes the transaction id first (a table whose default takes the id
// alone, migrated by an earlier version or changed by hand, is read from
// its lowest pending id, as before floors).
const (
	seqLast           = `coalesce(pg_sequence_last_value(pg_get_serial_sequence('{t}', 'id')::regclass), 0)`
	serverStart       = `pg_postmaster_start_time()::text`
	xidFirstDefaultIs = `CASEWHEN(pg_current_xact_id()ISNOTNULL)THENnextval(` // white space removed
	xidFirstCheck     = `EXISTS (SELECT 1 FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
      WHERE d.adrelid = '{t}'::regclass AND a.attname = 'id' AND starts_with(translate(pg_get_expr(d.adbin, d.adrelid), E' \t\r\n', ''), '` + xidFirstDefaultIs + `'))`
	xidFirstMigration = `DO $$ BEGIN
  IF NOT ` + xidFirstCheck + ` THEN
    EXECUTE format('ALTER TABLE %s ALTER COLUMN id SET DEFAULT (CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval(%L::regclass) END)',
      '{t}'::regclass, pg_get_serial_sequence('{t}', 'id'));
  END IF;
END $$`
)

// A PostgreSQL claim reads its buckets' pending rows in id order, and a
// deleted row's index entry is read again by every claim until a scan
// finds the row dead to every transaction (DESIGN.md, "Floors"). A floor
// per key bucket lets a claim start past the rows its relay deleted: the
// floor of bucket b is an id at or below which b holds no pending row and
// never will again, because every row of b up to it was deleted by a
// committed settlement and every id up to it was taken by a transaction
// that had ended before the claim that read past it.
//
// floors is a relay's floors, and what it needs to raise them: probes of
// the id sequence, each with the transactions it must wait for.
type floors struct {
	mu     sync.Mutex
	floor  [keyBuckets]int64
	probes [floorProbes]probe // a ring, newest at next-1
	next   int
	server string    // the server's start time, as the claims read it
	gen    int       // counts the drops: a claim read before one raises nothing
	since  time.Time // when the claims began to use this generation (zero: not yet)
}

// floorLifetime is how long a relay keeps its floors: the first claim
// after it drops them all and reads its buckets from their lowest pending
// id again. A row inserted with an explicit id below a floor (bypassing
// the id column's default, so no floor waited for it) is passed over for
// at most this long. One claim per bucket then reads again the deleted
// rows PostgreSQL still indexes.
const floorLifetime = 30 * time.Second

// floorProbes bounds the probes a relay keeps.
const floorProbes = 32

// probe is the id sequence's last value, read by a claim, and the
// transaction id the claim took after reading it: every transaction that
// took an id up to seq had taken its transaction id before (the id
// column's default takes it first), so below xid, and once a later
// snapshot's xmin reaches xid all of them have ended. (A snapshot's xmax
// would not do: it is one past the latest transaction to end, and a
// transaction that took a newer id and still runs is at or above it,
// listed nowhere.)
type probe struct{ seq, xid int64 }

// claimFloors is what one claim tells about its buckets: what it read, in
// the snapshot it read them in.
type claimFloors struct {
	ok      bool    // the claim read them (through pgx, with no error)
	buckets []int32 // the buckets it locked
	seq     int64   // the id sequence's last value, read before xid was taken
	xmin    int64   // its snapshot's xmin: every transaction below it had ended
	xid     int64   // its own transaction id, taken after seq was read
	blocked bool    // a failed row waits out its backoff: rows were passed over
	full    bool    // it returned as many rows as its limit (rows after the last were not read)
	maxID   int64   // the highest id it returned
	server  string  // the server's start time
	gen     int     // the floors' generation when it read
	horizon int64   // set by read: every id up to it was taken by a transaction that ended before the snapshot
	// unsent holds, per bucket, the lowest id of a row the claim read and
	// did not delete (dropped beyond its waves, failed, held back); 0: none.
	unsent [keyBuckets]int64
}

// keep records that the claim read row id of bucket b and leaves it pending.
func (c *claimFloors) keep(b int32, id int64) {
	if c.unsent[b] == 0 || id < c.unsent[b] {
		c.unsent[b] = id
	}
}

// keepAll records that the claim leaves pending what o (a claim before
// it in its transaction) does: it read past those rows.
func (c *claimFloors) keepAll(o *claimFloors) {
	for b, id := range o.unsent {
		if id != 0 {
			c.keep(int32(b), id)
		}
	}
}

// all returns a copy of the floors (a claim's statement picks those of the
// buckets it locks), the start time of the server they hold on, and the
// highest of them: the statement uses none when its server started at
// another time or the id sequence is below the highest. At now, floors
// used for floorLifetime (or since a time after now) are dropped first.
func (f *floors) all(now time.Time) ([]int64, string, int64) {
	return f.after(now, nil)
}

// after is all with the floors as settled's settlement raises them, for
// the claim that follows that settlement on its connection, in its
// pipeline: the claim runs only once the settlement committed, and its
// rows are used only when the deletion found every row it was given
// (settlePgx), which is when raise raises the floors themselves. A nil
// settled is all.
func (f *floors) after(now time.Time, settled *claimFloors) ([]int64, string, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// A clock set back ends the lifetime too: it could otherwise last as
	// long as the step back.
	if d := now.Sub(f.since); !f.since.IsZero() && (d >= floorLifetime || d < 0) {
		f.reset()
	}
	if f.since.IsZero() {
		f.since = now
	}
	floor := f.floor
	if settled != nil && settled.gen == f.gen {
		settled.raises(func(b int32, v int64) { floor[b] = max(floor[b], v) })
	}
	return floor[:], f.server, slices.Max(floor[:])
}

// read records a claim's probe and returns the id horizon of its snapshot:
// the highest probed value whose transactions had all ended when it was
// taken. A server that restarted (a lost asynchronous commit may have
// brought deleted rows back) or a sequence that went back (restarted, or
// ids written by hand) drops every floor.
func (f *floors) read(c *claimFloors) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.server != f.server || c.seq < f.highest() {
		f.reset()
		f.server = c.server
	}
	f.horizonOf(c)
	f.probes[f.next] = probe{seq: c.seq, xid: c.xid}
	f.next = (f.next + 1) % floorProbes
}

// readAhead is read for a claim ahead (chain.go), in the transaction of
// the claim whose probe it shares: its horizon, from the probes it
// finds, and no probe of its own.
func (f *floors) readAhead(c *claimFloors) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.horizonOf(c)
}

// horizonOf sets c's generation and its horizon: the highest probed value
// whose transactions had all ended before c's snapshot (f.mu held).
func (f *floors) horizonOf(c *claimFloors) {
	c.gen = f.gen
	for _, p := range f.probes {
		if p.xid != 0 && p.xid <= c.xmin && p.seq > c.horizon {
			c.horizon = p.seq
		}
	}
}

// highest returns the highest floor (f.mu held).
func (f *floors) highest() int64 { return slices.Max(f.floor[:]) }

// raise raises the floors of a claim's buckets once its settlement
// committed: up to its horizon, to the last id it read when its limit cut
// the scan, and below every row of the bucket it read and did not delete.
// Nothing is raised after a claim that passed rows over (blocked).
func (f *floors) raise(c *claimFloors) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.gen != f.gen {
		return // the floors were dropped since the claim read
	}
	c.raises(func(b int32, v int64) { f.floor[b] = max(f.floor[b], v) })
}

// raises calls set with each of c's buckets and the floor its committed
// settlement allows for it: its horizon, the last id it read when its limit
// cut the scan, one below the lowest row of the bucket it left pending.
// A claim that passed rows over (blocked) allows nothing.
func (c *claimFloors) raises(set func(b int32, v int64)) {
	if !c.ok || c.blocked {
		return
	}
	top := c.horizon
	if c.full {
		top = min(top, c.maxID)
	}
	for _, b := range c.buckets {
		v := top
		if u := c.unsent[b]; u > 0 {
			v = min(v, u-1)
		}
		set(b, v)
	}
}

// reset drops every floor and probe (f.mu held); the next claim starts a
// new lifetime.
func (f *floors) reset() {
	f.gen++
	f.since = time.Time{}
	f.floor = [keyBuckets]int64{}
	f.probes = [floorProbes]probe{}
	f.next = 0
}

// drop drops every floor: after an error, the relay knows nothing of what
// was committed.
func (f *floors) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reset()
}
