//go:build integration

package sqlstore_test

import (
	"os"
	"testing"

	"github.com/babelqueue/babelqueue-go/idempotency/sqlstore"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

// TestBenchOverheadPostgres prints the overhead line of the PostgreSQL
// store (make bench sets BQ_BENCH=1).
func TestBenchOverheadPostgres(t *testing.T) {
	if os.Getenv("BQ_BENCH") == "" {
		t.Skip("benchmark: set BQ_BENCH=1 (make bench)")
	}
	db := openPostgres(t)
	storetest.PrintOverhead(t, "postgres", newStore(t, db, sqlstore.Postgres, sqlstore.WithTable("bq_idempotency_bench")), 5000)
}
