package pulsar

// maxRecentAcks bounds the sources a run remembers as acknowledged after
// their copies were written (about 150 bytes each).
const maxRecentAcks = 20000

// recentAcks remembers the sources of the last dead letters a run
// acknowledged whose copy is in a target (moved, or found already copied),
// oldest first. A broker killed with -9 forgets only acknowledgements it
// confirmed in its last seconds, so a redelivered dead letter is one of
// these: the run acknowledges it without a copy and reads no target.
// Once it has forgotten a source to stay within its bound (evicted), a
// redelivery may concern a source it no longer holds, and the run falls
// back to scanning the targets.
type recentAcks struct {
	ring    []string // circular, len(ring) <= max
	head    int      // index of the oldest when the ring is full
	set     map[string]struct{}
	max     int
	evicted bool
}

func newRecentAcks(max int) *recentAcks {
	return &recentAcks{set: make(map[string]struct{}), max: max}
}

// add remembers src as the newest, forgetting the oldest beyond the bound.
func (a *recentAcks) add(src string) {
	if _, ok := a.set[src]; ok {
		return
	}
	a.set[src] = struct{}{}
	if len(a.ring) < a.max {
		a.ring = append(a.ring, src)
		return
	}
	delete(a.set, a.ring[a.head])
	a.ring[a.head] = src
	a.head = (a.head + 1) % len(a.ring)
	a.evicted = true
}

func (a *recentAcks) has(src string) bool {
	_, ok := a.set[src]
	return ok
}

// newest returns up to n sources, the newest first.
func (a *recentAcks) newest(n int) []string {
	n = min(n, len(a.ring))
	out := make([]string, 0, n)
	for i := range n {
		// The newest sits just before head (at the end while filling).
		j := (a.head - 1 - i + 2*len(a.ring)) % len(a.ring)
		out = append(out, a.ring[j])
	}
	return out
}
