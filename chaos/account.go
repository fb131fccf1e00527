package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Copy is a record read back from a topic: the envelope id it carries, its
// attempts and its timestamp (for a re-injected copy, when the re-injector
// wrote it).
type Copy struct {
	ID       string
	Attempts int
	At       time.Time
}

// ReadBack is what the driver read from the topics after draining.
type ReadBack struct {
	// DeadLetters has one entry per record of the DLQ (distinct records:
	// two entries with one id are two dead letters).
	DeadLetters []Copy
	// Reinjected has one entry per record of the work topic the
	// re-injector wrote (Kafka; empty on Pulsar).
	Reinjected []Copy
	// PublishRetries counts publishes the producer repeated, with the same
	// id, after an error: each may have been written twice.
	PublishRetries int
	// Lag is the lag measured after every process stopped.
	Lag int64
}

// Windows are the time spans of the duplicate bound (see Bound).
type Windows struct {
	// Commit is how long a handled record may stay uncommitted
	// (unacknowledged on Pulsar) by a healthy process: the binding's commit
	// interval plus its batching plus a round trip, with margin.
	Commit time.Duration
	// Rebalance is how long after a group change (a consumer started,
	// killed or stopped) another consumer may still hand out and handle
	// records whose commit the change makes it lose (Kafka: the rebalance
	// revokes its partitions). 0 means a group change costs the other
	// consumers nothing (a Pulsar Shared subscription) and adds no window.
	Rebalance time.Duration
	// Reach is how long after the broker is back commits (acknowledgements)
	// may still be refused or lost.
	Reach time.Duration
	// BrokerLoss is how far back a broker killed with -9 may forget
	// acknowledgements it had confirmed: Kafka's committed offsets are
	// appended to its log at once (a process kill keeps the page cache),
	// Pulsar persists a cursor's acknowledgements lazily.
	BrokerLoss time.Duration
	// PerStop is what each SIGTERM (a Term event) adds: the graceful
	// variant allows one record whose commit races the shutdown.
	PerStop int
	// InFlight is how many records a consumer handles at once (its App's
	// concurrency); 0 counts as 1. A killed consumer may have recorded that
	// many handlings whose outcome never reached the broker.
	InFlight int
}

// Report is the outcome of a run.
type Report struct {
	Produced       int // distinct ids produced
	Handled        int // distinct produced ids handled successfully at least once
	DeadLettered   int // distinct produced ids with at least one dead letter
	Lost           int // produced ids neither handled successfully nor dead-lettered
	Duplicates     int // successful handlings beyond the first, plus dead letters beyond the first, per id
	Contradictions int // ids whose outcomes contradict each other or their class
	Bound          int // the duplicate bound (Bound)
	// Unexplained counts duplicated ids none of whose earlier handlings
	// (all but the latest) nor re-injected copies fell in a window of the
	// bound: a duplicate no disruption accounts for. Reported, not failed
	// on: a member starved of CPU can miss its heartbeats and cause a
	// rebalance no event records.
	Unexplained    int
	Kills          int // SIGKILL and SIGTERM events of the driver
	Crashes        int // processes that exited on their own
	BrokerRestarts int

	LostIDs      []string // sorted, at most 20
	Contradicted []string // "id: reason", sorted, at most 20
}

// Line is the `chaos:` line of r (lag is measured separately).
func (r Report) Line(broker string, lag int64) string {
	return fmt.Sprintf("chaos: broker=%s produced=%d handled=%d dead_lettered=%d lost=%d duplicates=%d contradictions=%d kills=%d broker_restarts=%d lag=%d",
		broker, r.Produced, r.Handled, r.DeadLettered, r.Lost, r.Duplicates, r.Contradictions, r.Kills, r.BrokerRestarts, lag)
}

// Failed reports whether the run must exit 1: a lost id, a contradiction,
// a lag, or more duplicates than the bound.
func (r Report) Failed(lag int64) bool {
	return r.Lost != 0 || r.Contradictions != 0 || lag != 0 || r.Duplicates > r.Bound
}

// Account computes the report from the records and the read-back.
//
//   - lost: a produced id with no successful handling and no dead letter;
//   - contradiction: an id both handled successfully and dead-lettered, a
//     Doomed id handled successfully, a dead letter of an id that is not
//     Doomed, or a handling or dead letter of an id never produced;
//   - duplicates: for every id, its successful handlings beyond the first
//     plus its dead letters beyond the first.
func Account(rec *Records, rb ReadBack, w Windows) Report {
	var r Report
	produced := make(map[string]bool, len(rec.Produced))
	for _, id := range rec.Produced {
		produced[id] = true
	}
	r.Produced = len(produced)
	ok := make(map[string]int)
	for _, h := range rec.Handlings {
		if h.OK {
			ok[h.ID]++
		}
	}
	dead := make(map[string]int)
	for _, c := range rb.DeadLetters {
		dead[c.ID]++
	}
	var lost, contra []string
	seenContra := map[string]bool{}
	contradict := func(id, why string) {
		if !seenContra[id] {
			seenContra[id] = true
			contra = append(contra, id+": "+why)
		}
	}
	for id := range produced {
		n, d := ok[id], dead[id]
		if n > 0 {
			r.Handled++
			r.Duplicates += n - 1
		}
		if d > 0 {
			r.DeadLettered++
			r.Duplicates += d - 1
		}
		switch {
		case n == 0 && d == 0:
			lost = append(lost, id)
		case n > 0 && d > 0:
			contradict(id, "handled successfully and dead-lettered")
		case n > 0 && ClassOf(id) == Doomed:
			contradict(id, "doomed id handled successfully")
		case d > 0 && ClassOf(id) != Doomed:
			contradict(id, ClassOf(id).String()+" id dead-lettered")
		}
	}
	for id := range ok {
		if !produced[id] {
			contradict(id, "handled but never produced")
		}
	}
	for id := range dead {
		if !produced[id] {
			contradict(id, "dead-lettered but never produced")
		}
	}
	sort.Strings(lost)
	sort.Strings(contra)
	r.Lost, r.Contradictions = len(lost), len(contra)
	r.LostIDs, r.Contradicted = head(lost, 20), head(contra, 20)
	for _, e := range rec.Events {
		switch e.Kind {
		case Kill, Term:
			r.Kills++
		case Crash:
			r.Crashes++
		case BrokerKill:
			r.BrokerRestarts++
		}
	}
	var countedH, countedC []bool
	r.Bound, countedH, countedC = bound(rec, rb, w)
	r.Unexplained = unexplained(rec, rb, ok, dead, countedH, countedC)
	return r
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// IsConsumer reports whether an incarnation name is a consumer's.
func IsConsumer(proc string) bool { return strings.HasPrefix(proc, "consumer-") }

// IsReinjector reports whether an incarnation name is the re-injector's.
func IsReinjector(proc string) bool { return strings.HasPrefix(proc, "reinjector") }

// Bound is the number of duplicates a run may show: what was in flight at
// each disruption, each handling and each re-injected copy counted once
// even when several windows cover it. In flight are:
//
//   - at a SIGKILL (or a crash) of a consumer at t: the records in its handlers
//     (InFlight) and
//     every record it handled in (t - Commit, t], whose commit may not have
//     reached the broker;
//   - at any group change at t (a consumer killed, stopped or started),
//     when Rebalance is not 0: every record the other consumers handled in
//     [t - Commit, t + Rebalance], whose commit the rebalance may refuse;
//   - at a SIGKILL of the re-injector at t: every copy it wrote to the work
//     topic in (t - Commit, t], whose tier offset may not be committed (each
//     such copy can be handled once more);
//   - during a broker restart (kill -9 at t1, serving again at t2): every
//     record handled and every copy re-injected in
//     [t1 - max(Commit, BrokerLoss), t2 + Reach];
//   - every publish the producer repeated after an error (PublishRetries).
//
// A SIGTERM'd process commits what it handled before it exits, so a Term
// adds only PerStop and its group change.
func Bound(rec *Records, rb ReadBack, w Windows) int {
	n, _, _ := bound(rec, rb, w)
	return n
}

// bound is Bound, with the handlings and copies it counted.
func bound(rec *Records, rb ReadBack, w Windows) (int, []bool, []bool) {
	countedH := make([]bool, len(rec.Handlings))
	countedC := make([]bool, len(rb.Reinjected))
	n := rb.PublishRetries
	markH := func(from, to time.Time, incl func(Handling) bool, openFrom bool) {
		for i, h := range rec.Handlings {
			if countedH[i] || !incl(h) || h.At.After(to) || h.At.Before(from) || (openFrom && h.At.Equal(from)) {
				continue
			}
			countedH[i] = true
			n++
		}
	}
	markC := func(from, to time.Time, openFrom bool) {
		for i, c := range rb.Reinjected {
			if countedC[i] || c.At.After(to) || c.At.Before(from) || (openFrom && c.At.Equal(from)) {
				continue
			}
			countedC[i] = true
			n++
		}
	}
	var brokerDown time.Time
	for _, e := range rec.Events {
		switch {
		case (e.Kind == Kill || e.Kind == Crash) && IsConsumer(e.Proc):
			n += max(w.InFlight, 1) // the records in its handlers
			markH(e.At.Add(-w.Commit), e.At, func(h Handling) bool { return h.Proc == e.Proc }, true)
			if w.Rebalance > 0 {
				markH(e.At.Add(-w.Commit), e.At.Add(w.Rebalance), func(h Handling) bool { return h.Proc != e.Proc }, false)
			}
		case e.Kind == Term:
			n += w.PerStop
			if IsConsumer(e.Proc) && w.Rebalance > 0 {
				markH(e.At.Add(-w.Commit), e.At.Add(w.Rebalance), func(h Handling) bool { return h.Proc != e.Proc }, false)
			}
		case e.Kind == Start && IsConsumer(e.Proc) && w.Rebalance > 0:
			markH(e.At.Add(-w.Commit), e.At.Add(w.Rebalance), func(h Handling) bool { return h.Proc != e.Proc }, false)
		case (e.Kind == Kill || e.Kind == Crash) && IsReinjector(e.Proc):
			markC(e.At.Add(-w.Commit), e.At, true)
		case e.Kind == BrokerKill:
			brokerDown = e.At
		case e.Kind == BrokerUp && !brokerDown.IsZero():
			from, to := brokerDown.Add(-max(w.Commit, w.BrokerLoss)), e.At.Add(w.Reach)
			markH(from, to, func(Handling) bool { return true }, false)
			markC(from, to, false)
			brokerDown = time.Time{}
		}
	}
	return n, countedH, countedC
}

// unexplained counts the duplicated ids that no window of the bound covers.
func unexplained(rec *Records, rb ReadBack, ok, dead map[string]int, countedH, countedC []bool) int {
	latest := map[string]int{} // id -> index of its latest handling
	for i, h := range rec.Handlings {
		if j, seen := latest[h.ID]; !seen || h.At.After(rec.Handlings[j].At) {
			latest[h.ID] = i
		}
	}
	covered := map[string]bool{}
	for i, h := range rec.Handlings {
		if countedH[i] && latest[h.ID] != i {
			covered[h.ID] = true
		}
	}
	for i, c := range rb.Reinjected {
		if countedC[i] {
			covered[c.ID] = true
		}
	}
	n := 0
	for id := range latest {
		if (ok[id] > 1 || dead[id] > 1) && !covered[id] {
			n++
		}
	}
	for id, d := range dead {
		if _, handled := latest[id]; !handled && d > 1 {
			n++ // dead-lettered twice without a recorded handling
		}
	}
	return n
}
