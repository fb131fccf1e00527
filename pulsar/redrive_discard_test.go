package pulsar

import (
	"errors"
	"slices"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/redrive"
)

func TestExamineDiscardsAWholeEntry(t *testing.T) {
	r := newExamineRun(redrive.WithDiscard())
	r.examine(entryOf(t, 1, 2, "urn:a", "urn:b"))
	if got := actions(r); !slices.Equal(got, []redriveAction{actDiscard, actDiscard}) || r.batchMoves != 2 {
		t.Fatalf("actions %v, moves %d", got, r.batchMoves)
	}
	if it := r.batch[0].item; it.Outcome != redrive.Discarded || it.Body == "" || it.Target != "" {
		t.Fatalf("item %+v", it)
	}
}

func TestExamineKeepsAnEntryWithALetterThatIsNotDiscarded(t *testing.T) {
	r := newExamineRun(redrive.WithDiscard(), redrive.WithSelector(redrive.SelectURN("urn:a")))
	r.examine(entryOf(t, 1, 2, "urn:a", "urn:b"))
	if got := actions(r); !slices.Equal(got, []redriveAction{actKeep, actKeep}) || r.batchMoves != 0 {
		t.Fatalf("actions %v, moves %d", got, r.batchMoves)
	}
	if it := r.batch[0].item; it.Outcome != redrive.Unselected || !errors.Is(it.Err, ErrBatchEntryKept) || it.Body != "" {
		t.Fatalf("item %+v", it)
	}
}

func TestExamineDiscardsAnUndecodableLetterOnlyWhenSelected(t *testing.T) {
	msgs := entryOf(t, 2, 0, "urn:a")
	msgs[0].(*entryMessage).payload = []byte("{poison")
	r := newExamineRun(redrive.WithDiscard())
	r.examine(msgs)
	if e := r.batch[0]; e.act != actKeep || e.item.Outcome != redrive.Undecodable {
		t.Fatalf("unselected poison: act %v item %+v", e.act, e.item)
	}
	r = newExamineRun(redrive.WithDiscard(), redrive.WithUndecodable())
	r.examine(msgs)
	if e := r.batch[0]; e.act != actDiscard || e.item.Outcome != redrive.Discarded || e.item.Body != "{poison" {
		t.Fatalf("selected poison: act %v item %+v", e.act, e.item)
	}
}
