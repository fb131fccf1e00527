package babelqueue

// This file holds the lane table of a concurrent consume loop (lanes.go):
// the lanes by key, by partition, and the single-message lanes of
// OrderNone. Finding the lane of a key does not allocate, an idle lane
// stays in the table (up to maxIdleLanes lanes in all) so that the next
// message of its key finds it, and the lanes the table forgets go to a
// bounded free list for reuse.

const (
	// maxIdleLanes bounds the lanes a table keeps while they are idle.
	maxIdleLanes = 1024
	// maxFreeLanes bounds the free list of forgotten lanes.
	maxFreeLanes = 256
	// maxKeptWaiting bounds the capacity of the waiting slice a lane
	// keeps when it is reused.
	maxKeptWaiting = 16
)

// laneTable maps lane keys to lanes. Its user holds laneSet.mu.
type laneTable struct {
	byKey  map[string]*lane
	byPart map[int32]*lane
	single map[uint64]*lane
	free   []*lane
}

func (t *laneTable) init(pending int) {
	t.byKey = make(map[string]*lane)
	t.byPart = make(map[int32]*lane)
	t.single = make(map[uint64]*lane)
	t.free = make([]*lane, 0, min(pending, maxFreeLanes))
}

// len returns how many lanes the table holds.
func (t *laneTable) len() int {
	return len(t.byKey) + len(t.byPart) + len(t.single)
}

// add makes the lane of k, which the table does not hold, and holds it.
func (t *laneTable) add(k laneKey) *lane {
	var l *lane
	if n := len(t.free); n > 0 {
		l = t.free[n-1]
		t.free[n-1] = nil
		t.free = t.free[:n-1]
	} else {
		l = new(lane)
	}
	l.key, l.inTable = k, true
	switch k.kind {
	case laneByKey:
		t.byKey[k.key] = l
	case laneByPartition:
		t.byPart[k.part] = l
	default:
		t.single[k.seq] = l
	}
	return l
}

// idle is told that l holds nothing and no one runs or pauses it: the
// table keeps it for its key's next message while it holds few lanes,
// else forgets it and keeps the lane for reuse. Telling it twice is
// harmless.
func (t *laneTable) idle(l *lane) {
	if !l.inTable {
		return
	}
	switch l.key.kind {
	case laneByKey:
		if t.len() <= maxIdleLanes {
			return
		}
		delete(t.byKey, l.key.key)
	case laneByPartition:
		if t.len() <= maxIdleLanes {
			return
		}
		delete(t.byPart, l.key.part)
	default:
		delete(t.single, l.key.seq)
	}
	l.inTable = false
	if len(t.free) >= maxFreeLanes {
		return
	}
	w := l.waiting[:0]
	if cap(w) > maxKeptWaiting {
		w = nil
	}
	*l = lane{waiting: w}
	t.free = append(t.free, l)
}

// each calls fn for every lane of the table; fn may call idle.
func (t *laneTable) each(fn func(*lane)) {
	for _, l := range t.byKey {
		fn(l)
	}
	for _, l := range t.byPart {
		fn(l)
	}
	for _, l := range t.single {
		fn(l)
	}
}

// popLocked takes the head of l's waiting messages; l has one. A lane
// left empty keeps its slice for the next message. laneSet.mu held.
func (l *lane) popLocked() *ReceivedMessage {
	msg := l.waiting[0]
	l.waiting[0] = nil
	if len(l.waiting) == 1 {
		l.waiting = l.waiting[:0]
	} else {
		l.waiting = l.waiting[1:]
	}
	return msg
}

// popReadyLocked takes the first lane of the ready queue, which has one.
// laneSet.mu held.
func (s *laneSet) popReadyLocked() *lane {
	l := s.ready[0]
	s.ready[0] = nil
	if len(s.ready) == 1 {
		s.ready = s.ready[:0]
	} else {
		s.ready = s.ready[1:]
	}
	return l
}
