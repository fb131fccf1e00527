package kafka

import "testing"

// Concurrent single records travel in batches capped at singlesBatchSize,
// or at WithBatchSize when that is smaller; the batching writer keeps the
// configured cap, and the lone writer sends each record alone.
func TestWriterBatchCaps(t *testing.T) {
	for _, tc := range []struct {
		opts            []Option
		own, many, lone int
	}{
		{nil, DefaultBatchSize, singlesBatchSize, 1},
		{[]Option{WithBatchSize(10)}, 10, 10, 1},
		{[]Option{WithBatchSize(5000)}, 5000, singlesBatchSize, 1},
	} {
		tr, err := New(append([]Option{WithBrokers("127.0.0.1:1")}, tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]int{tr.ownWriter.BatchSize, tr.manyWriter.BatchSize, tr.loneWriter.BatchSize}; got != [3]int{tc.own, tc.many, tc.lone} {
			t.Errorf("batch caps (own, many, lone) = %v, want %v", got, [3]int{tc.own, tc.many, tc.lone})
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
