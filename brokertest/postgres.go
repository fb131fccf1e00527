package brokertest

import (
	"database/sql"
	neturl "net/url"
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
	url := postgresURL(t)
	if url == "" {
		return nil, ""
	}
	return openPostgres(t, url), url
}

// PostgresWith is Postgres with one more connection parameter in the URL
// (such as application_name, so that the pool's backends can be found in
// pg_stat_activity, or pgx's default_query_exec_mode): a pool of its own,
// closed when the test ends.
func PostgresWith(t testing.TB, param, value string) *sql.DB {
	t.Helper()
	url := postgresURL(t)
	if url == "" {
		return nil
	}
	return openPostgres(t, withParam(url, param, value))
}

// postgresURL returns BQ_POSTGRES_URL, failing the test when it is not set.
func postgresURL(t testing.TB) string {
	t.Helper()
	url := strings.TrimSpace(os.Getenv(EnvPostgresURL))
	if url == "" {
		t.Fatalf("brokertest: %s is not set: start PostgreSQL with tools/brokers/postgres.sh up (make integration does)", EnvPostgresURL)
	}
	return url
}

// withParam returns the URL u with param=value added to its query.
func withParam(u, param, value string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + neturl.QueryEscape(param) + "=" + neturl.QueryEscape(value)
}

// openPostgres opens url with the "pgx" driver, checks that it answers
// and closes it when the test ends; it fails the test otherwise.
func openPostgres(t testing.TB, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatalf("brokertest: open PostgreSQL at %s: %v", url, err)
		return nil
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("brokertest: PostgreSQL at %s: %v", url, err)
		return nil
	}
	return db
}
