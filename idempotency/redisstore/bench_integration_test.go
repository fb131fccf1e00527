//go:build integration

package redisstore_test

import (
	"os"
	"testing"

	"github.com/babelqueue/babelqueue-go/idempotency/redisstore"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

// TestBenchOverheadRedis prints the overhead line of the Redis store
// (make bench sets BQ_BENCH=1).
func TestBenchOverheadRedis(t *testing.T) {
	if os.Getenv("BQ_BENCH") == "" {
		t.Skip("benchmark: set BQ_BENCH=1 (make bench)")
	}
	s, err := redisstore.New(client(t), redisstore.WithPrefix("bq:bench:"))
	if err != nil {
		t.Fatal(err)
	}
	storetest.PrintOverhead(t, "redis", s, 10000)
}
