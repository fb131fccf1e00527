package brokertest

import (
	"database/sql"
	"os"
	"strings"
	"testing"
)

// EnvPostgresURL names the URL of the PostgreSQL of tools/brokers/postgres.sh.
const EnvPostgresURL = "BQ_POSTGRES_URL"

// Postgres opens the PostgreSQL at BQ_POSTGRES_URL with the database/sql
// driver "pgx" (the caller registers it: import _
// "github.com/jackc/pgx/v5/stdlib"), checks that it answers, closes it when
// the test ends, and returns it with its URL. Unlike the broker helpers it
// always fails the test, never skips it, when the variable is missing or
// the server does not answer: it serves integration-tagged tests only.
func Postgres(t testing.TB) (*sql.DB, string) {
	t.Helper()
	url := strings.TrimSpace(os.Getenv(EnvPostgresURL))
	if url == "" {
		t.Fatalf("brokertest: %s is not set: start PostgreSQL with tools/brokers/postgres.sh up (make integration does)", EnvPostgresURL)
		return nil, ""
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatalf("brokertest: open PostgreSQL at %s: %v", url, err)
		return nil, ""
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("brokertest: PostgreSQL at %s: %v", url, err)
		return nil, ""
	}
	return db, url
}
