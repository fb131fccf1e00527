package sqlstore_test

import (
	"os"
	"testing"

	"github.com/babelqueue/babelqueue-go/idempotency/sqlstore"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

// TestBenchOverheadSQLite prints the overhead line of the SQLite store
// (make bench sets BQ_BENCH=1).
func TestBenchOverheadSQLite(t *testing.T) {
	if os.Getenv("BQ_BENCH") == "" {
		t.Skip("benchmark: set BQ_BENCH=1 (make bench)")
	}
	db := openSQLite(t)
	storetest.PrintOverhead(t, "sqlite", newStore(t, db, sqlstore.SQLite), 5000)
}
