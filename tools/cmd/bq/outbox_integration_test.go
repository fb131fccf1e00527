//go:build integration

package main

import (
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/outbox"
)

// TestOutboxStatsPostgres reads the stats of an outbox table on the real
// PostgreSQL of tools/brokers/postgres.sh, through the flag and the
// environment variable.
func TestOutboxStatsPostgres(t *testing.T) {
	url := os.Getenv("BQ_POSTGRES_URL")
	if url == "" {
		t.Fatal("BQ_POSTGRES_URL is not set: start PostgreSQL with tools/brokers/postgres.sh up (make integration does)")
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
