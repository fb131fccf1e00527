//go:build integration

package outbox_test

import (
	"database/sql"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/babelqueue/babelqueue-go/outbox"
)

func TestPostgres(t *testing.T) {
	url := os.Getenv("BQ_POSTGRES_URL")
	if url == "" {
		t.Fatal("BQ_POSTGRES_URL is not set: start PostgreSQL with tools/brokers/postgres.sh up (make integration does)")
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	runOutboxTests(t, db, outbox.Postgres)
}
