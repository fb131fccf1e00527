package pulsar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestJournalRecordRoundTrip(t *testing.T) {
	in := journalRecord{Pending: []string{"t@1:2:-1"}, After: map[string]string{"q": "abc=", "r": ""}, Moved: []string{"t@0:1:0"}, At: 7}
	b, err := encodeJournal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeJournal(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.V != 1 || !slices.Equal(out.Pending, in.Pending) || !slices.Equal(out.Moved, in.Moved) ||
		out.After["q"] != "abc=" || out.After["r"] != "" || out.At != 7 {
		t.Fatalf("round trip: %+v", out)
	}
}

func TestJournalRecordRejectsUnknownVersion(t *testing.T) {
	for _, b := range []string{`{"v":2}`, `{}`, `not json`} {
		if _, err := decodeJournal([]byte(b)); err == nil {
			t.Errorf("decodeJournal(%s) accepted", b)
		}
	}
}

func TestJournalMessageIDs(t *testing.T) {
	if got := encodeID(nil); got != "" {
		t.Errorf("encodeID(nil) = %q", got)
	}
	if got := encodeID(pulsar.EarliestMessageID()); got != "" {
		t.Errorf("encodeID(earliest) = %q, want the empty topic marker", got)
	}
	id, err := decodeID("")
	if err != nil || id.LedgerID() != pulsar.EarliestMessageID().LedgerID() {
		t.Errorf("decodeID(\"\") = %v, %v", id, err)
	}
	if _, err := decodeID("%%%"); err == nil {
		t.Error("decodeID accepted bad base64")
	}
}

func TestMovedListIsBounded(t *testing.T) {
	m := make(map[string]bool, maxJournalMoved+5)
	for i := range maxJournalMoved + 5 {
		m[string(rune(i))+"x"] = true
	}
	if got := len(movedList(m)); got != maxJournalMoved {
		t.Fatalf("movedList holds %d, want %d", got, maxJournalMoved)
	}
}

func TestRedriveNeedsARealClient(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	res, err := redrive.Run(context.Background(), s.tr, "q.dlq")
	if !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("err = %v, want ErrInvalidOption", err)
	}
	if res == nil || res.Examined != 0 {
		t.Fatalf("result = %+v", res)
	}
}

func TestRedriveAfterClose(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	_ = s.tr.Close()
	if _, err := redrive.Run(context.Background(), s.tr, "q.dlq"); !errors.Is(err, babelqueue.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// fakeID is a pulsar.MessageID of a message in a batch entry.
type fakeID struct {
	pulsar.MessageID
	ledger, entry int64
	idx, size     int32
}

func (f fakeID) LedgerID() int64     { return f.ledger }
func (f fakeID) EntryID() int64      { return f.entry }
func (f fakeID) BatchIdx() int32     { return f.idx }
func (f fakeID) BatchSize() int32    { return f.size }
func (f fakeID) PartitionIdx() int32 { return -1 }
func (f fakeID) String() string      { return fmt.Sprintf("%d:%d:%d", f.ledger, f.entry, f.idx) }

// entryMessage is a fakeMessage of the DLQ with a message ID.
type entryMessage struct {
	fakeMessage
	id fakeID
}

func (m *entryMessage) ID() pulsar.MessageID { return m.id }
func (m *entryMessage) Topic() string        { return "persistent://public/default/q.dlq" }

// entryOf returns the messages of one batch entry, one per URN.
func entryOf(t *testing.T, entry int64, size int32, urns ...string) []pulsar.Message {
	t.Helper()
	out := make([]pulsar.Message, 0, len(urns))
	for i, urn := range urns {
		env, err := babelqueue.Make(urn, map[string]int{"i": i}, babelqueue.WithQueue("q"), babelqueue.WithID(urn+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := env.Encode()
		b, err = wire.AnnotateDeadLetter(b, wire.DeadLetter{Reason: wire.ReasonFailed, OriginalQueue: "q", Attempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &entryMessage{fakeMessage: fakeMessage{payload: b, props: map[string]string{}},
			id: fakeID{ledger: 1, entry: entry, idx: int32(i), size: size}})
	}
	return out
}

func newExamineRun(opts ...redrive.Option) *redriveRun {
	return &redriveRun{plan: redrive.NewPlan(opts...), res: &redrive.Result{}, dlq: "q.dlq",
		moved: map[string]bool{}, recent: newRecentAcks(maxRecentAcks)}
}

func actions(r *redriveRun) []redriveAction {
	var out []redriveAction
	for _, e := range r.batch {
		out = append(out, e.act)
	}
	return out
}

func TestExamineMovesAWholeEntry(t *testing.T) {
	r := newExamineRun()
	if r.examine(entryOf(t, 1, 3, "urn:a", "urn:a", "urn:a")) {
		t.Fatal("examine reported the max passed")
	}
	if got := actions(r); !slices.Equal(got, []redriveAction{actMove, actMove, actMove}) || r.batchMoves != 3 {
		t.Fatalf("actions %v, moves %d", got, r.batchMoves)
	}
	if r.batch[1].item.Position == "" || r.batch[1].item.Target != "q" {
		t.Fatalf("item %+v", r.batch[1].item)
	}
}

func TestExamineKeepsAnEntryWithAMessageThatStays(t *testing.T) {
	r := newExamineRun(redrive.WithSelector(redrive.SelectURN("urn:a")))
	r.examine(entryOf(t, 1, 3, "urn:a", "urn:b", "urn:a"))
	if got := actions(r); !slices.Equal(got, []redriveAction{actKeep, actKeep, actKeep}) || r.batchMoves != 0 {
		t.Fatalf("actions %v, moves %d", got, r.batchMoves)
	}
	for i, e := range r.batch {
		if e.item.Outcome != redrive.Unselected {
			t.Errorf("item %d: outcome %s", i, e.item.Outcome)
		}
		if moved := i != 1; moved != errors.Is(e.item.Err, ErrBatchEntryKept) {
			t.Errorf("item %d: err %v", i, e.item.Err)
		}
	}
}

func TestExamineKeepsAnIncompleteEntry(t *testing.T) {
	r := newExamineRun()
	r.examine(entryOf(t, 1, 3, "urn:a", "urn:a"))
	if got := actions(r); !slices.Equal(got, []redriveAction{actKeep, actKeep}) || !errors.Is(r.batch[0].item.Err, ErrBatchEntryKept) {
		t.Fatalf("actions %v, err %v", got, r.batch[0].item.Err)
	}
}

func TestExamineStopsBeforeAnEntryPassingTheMax(t *testing.T) {
	r := newExamineRun(redrive.WithMax(2))
	if !r.examine(entryOf(t, 1, 3, "urn:a", "urn:a", "urn:a")) {
		t.Fatal("examine did not report the max passed")
	}
	if got := actions(r); !slices.Equal(got, []redriveAction{actKeep, actKeep, actKeep}) || !errors.Is(r.batch[0].item.Err, ErrBatchEntryKept) {
		t.Fatalf("actions %v, err %v", got, r.batch[0].item.Err)
	}
}

func TestExamineAcknowledgesWhatAnInterruptedRunCopied(t *testing.T) {
	r := newExamineRun(redrive.WithSelector(redrive.SelectURN("urn:other")))
	msgs := entryOf(t, 4, 0, "urn:a")
	r.moved[sourceOf(msgs[0])] = true
	r.examine(msgs)
	e := r.batch[0]
	if e.act != actAck || e.item.Outcome != redrive.AlreadyMoved || e.item.MessageID != "urn:aa" || r.batchMoves != 0 {
		t.Fatalf("entry %+v, act %v", e.item, e.act)
	}
}

func TestErrRedriveBusyMatchesTheCoreSentinel(t *testing.T) {
	if err := fmt.Errorf("redrive: %w", ErrRedriveBusy); !errors.Is(err, babelqueue.ErrRedriveBusy) {
		t.Fatalf("%v does not match babelqueue.ErrRedriveBusy", err)
	}
}
