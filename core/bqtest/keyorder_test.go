package bqtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestKeyOrderCountsOutOfOrderHandlings(t *testing.T) {
	o := NewKeyOrder()
	for _, m := range []KeyedSeq{{0, 0}, {1, 0}, {0, 1}, {1, 2}, {0, 2}, {1, 1}} {
		o.See(m)
	}
	// key 1 saw 0, 2 (want 1), 1 (want 3): two violations.
	if o.Handled() != 6 || o.Violations() != 2 {
		t.Fatalf("handled=%d violations=%d, want 6 and 2", o.Handled(), o.Violations())
	}
}

func TestPublishKeyedSeqKeepsEachKeyInOrderAndReportsAnError(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]int{}
	err := PublishKeyedSeq(context.Background(), 3, 50, func(_ context.Context, key []byte, m KeyedSeq) error {
		mu.Lock()
		got[string(key)] = append(got[string(key)], m.N)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		seq := got[string(SeqKey(k))]
		if len(seq) != 50 {
			t.Fatalf("key %d: %d published, want 50", k, len(seq))
		}
		for i, n := range seq {
			if n != i {
				t.Fatalf("key %d published %v, not in order", k, seq)
			}
		}
	}
	boom := errors.New("boom")
	if err := PublishKeyedSeq(context.Background(), 2, 5, func(context.Context, []byte, KeyedSeq) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("PublishKeyedSeq = %v, want boom", err)
	}
}

func TestKeyOrderHandlerDecodesAndRecords(t *testing.T) {
	o := NewKeyOrder()
	h := o.Handler(time.Millisecond)
	for i := range 3 {
		env, err := wire.Make("urn:it:seq", KeyedSeq{K: 7, N: i})
		if err != nil {
			t.Fatal(err)
		}
		if err := h(context.Background(), env); err != nil {
			t.Fatal(err)
		}
	}
	if got := o.WaitHandled(3, time.Second); got != 3 || o.Violations() != 0 {
		t.Fatalf("handled=%d violations=%d, want 3 and 0", got, o.Violations())
	}
}
