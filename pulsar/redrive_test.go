package pulsar

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
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
	res, err := babelqueue.Redrive(context.Background(), s.tr, "q.dlq")
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
	if _, err := babelqueue.Redrive(context.Background(), s.tr, "q.dlq"); !errors.Is(err, babelqueue.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}
