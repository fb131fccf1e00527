package babelqueue

import (
	"context"
	"testing"
)

// BenchmarkPublishNop measures the App's side of one Publish with small map
// data and a key (make, validate, encode, project) on a transport that
// does nothing: the cost ours adds to a broker's produce.
func BenchmarkPublishNop(b *testing.B) {
	a, err := NewApp(&nopBatchTransport{}, WithDefaultQueue("bench"), WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	key := []byte("42")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Publish(ctx, "urn:babel:orders:created", map[string]any{"n": 1}, WithKey(key)); err != nil {
			b.Fatal(err)
		}
	}
}
