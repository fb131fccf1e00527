package pulsar

import (
	"slices"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/redrive"
)

func TestRecentAcksKeepsTheNewestWithinItsBound(t *testing.T) {
	a := newRecentAcks(3)
	for _, s := range []string{"a", "b", "a", "c"} {
		a.add(s)
	}
	if a.evicted || !slices.Equal(a.newest(5), []string{"c", "b", "a"}) {
		t.Fatalf("before the bound: evicted=%v newest=%v", a.evicted, a.newest(5))
	}
	a.add("d")
	a.add("e")
	if !a.evicted || a.has("a") || a.has("b") || !a.has("c") || !a.has("e") {
		t.Fatalf("after the bound: evicted=%v set=%v", a.evicted, a.set)
	}
	if got := a.newest(2); !slices.Equal(got, []string{"e", "d"}) {
		t.Fatalf("newest(2) = %v, want [e d]", got)
	}
	if got := a.newest(10); !slices.Equal(got, []string{"e", "d", "c"}) {
		t.Fatalf("newest(10) = %v, want [e d c]", got)
	}
}

// TestExamineAcknowledgesWhatWasAcknowledgedWithACopy: a dead letter this
// run, or the clean run before it, acknowledged after writing its copy is
// acknowledged again without a copy when the broker delivers it again
// (it forgot the acknowledgement), whatever the selectors say.
func TestExamineAcknowledgesWhatWasAcknowledgedWithACopy(t *testing.T) {
	for _, by := range []string{"this run", "the run before"} {
		r := newExamineRun()
		msgs := entryOf(t, 4, 0, "urn:a")
		if by == "this run" {
			r.recent.add(sourceOf(msgs[0]))
		} else {
			r.inherited = map[string]bool{sourceOf(msgs[0]): true}
		}
		r.examine(msgs)
		if e := r.batch[0]; e.act != actAck || e.item.Outcome != redrive.AlreadyMoved || r.batchMoves != 0 {
			t.Errorf("acknowledged by %s: entry %+v, act %v, want it acknowledged without a copy", by, e.item, e.act)
		}
	}
}

// TestClosingRecordNamesTheNewestAcknowledgementsFirst: the closing
// record's Recent lists this run's acknowledgements newest first, then the
// inherited ones not read again, within maxJournalMoved.
func TestClosingRecordNamesTheNewestAcknowledgementsFirst(t *testing.T) {
	r := newExamineRun()
	r.inherited = map[string]bool{"old": true, "b": true}
	r.recent.add("a")
	r.recent.add("b")
	got := r.recentList()
	if !slices.Equal(got, []string{"b", "a", "old"}) {
		t.Fatalf("recentList = %v, want [b a old]", got)
	}
	for i := range maxJournalMoved + 10 {
		r.recent.add(string(rune(0x1000 + i)))
	}
	if got := r.recentList(); len(got) != maxJournalMoved || got[0] != string(rune(0x1000+maxJournalMoved+9)) {
		t.Fatalf("recentList holds %d, first %q; want %d, the newest first", len(got), got[0], maxJournalMoved)
	}
}
