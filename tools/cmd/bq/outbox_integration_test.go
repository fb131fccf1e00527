//go:build integration

package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/outbox"
)

// TestOutboxStatsPostgres reads the stats of an outbox table on the real
// PostgreSQL of tools/brokers/postgres.sh, through the flag and the
// environment variable.
func TestOutboxStatsPostgres(t *testing.T) {
	db, url := brokertest.Postgres(t)
	table := fmt.Sprintf("bq_outbox_stats_%d", time.Now().UnixNano())
	ob, err := outbox.New(outbox.Postgres, outbox.WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	fillOutbox(t, db, ob)
	checkOutboxStats(t, "--postgres", url, "--table", table)
	t.Setenv("BQ_OUTBOX_POSTGRES", url)
	checkOutboxStats(t, "--table", table)
}
