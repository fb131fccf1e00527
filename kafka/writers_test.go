package kafka

import "testing"

// Concurrent single records travel in batches capped at singlesBatchSize,
// and SendBatch calls of at most fewBatchSize records in batches capped at
// fewBatchSize, or at WithBatchSize when that is smaller; the batching
// writer keeps the configured cap, and the lone writer sends each record
// alone.
func TestWriterBatchCaps(t *testing.T) {
	for _, tc := range []struct {
		opts                 []Option
		own, many, few, lone int
	}{
		{nil, DefaultBatchSize, singlesBatchSize, fewBatchSize, 1},
		{[]Option{WithBatchSize(10)}, 10, 10, 10, 1},
		{[]Option{WithBatchSize(5000)}, 5000, singlesBatchSize, fewBatchSize, 1},
	} {
		tr, err := New(append([]Option{WithBrokers("127.0.0.1:1")}, tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		got := [4]int{tr.ownWriter.BatchSize, tr.manyWriter.BatchSize, tr.fewWriter.BatchSize, tr.loneWriter.BatchSize}
		if want := [4]int{tc.own, tc.many, tc.few, tc.lone}; got != want {
			t.Errorf("batch caps (own, many, few, lone) = %v, want %v", got, want)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
