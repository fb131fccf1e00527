//go:build integration

package sqlstore_test

import (
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/idempotency"
	"github.com/babelqueue/babelqueue-go/idempotency/sqlstore"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

// openPostgres opens BQ_POSTGRES_URL (tools/brokers/postgres.sh up); the
// test fails when it is not set.
func openPostgres(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := brokertest.Postgres(t)
	return db
}

func TestPostgresStore(t *testing.T) {
	db := openPostgres(t)
	storetest.Run(t, func(t *testing.T) idempotency.Store { return newStore(t, db, sqlstore.Postgres) })
}

func TestPostgresWrapTx(t *testing.T) {
	db := openPostgres(t)
	runWrapTx(t, db, newStore(t, db, sqlstore.Postgres))
}

func TestPostgresCleanup(t *testing.T) {
	runCleanup(t, openPostgres(t), sqlstore.Postgres)
}
