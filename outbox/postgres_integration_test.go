//go:build integration

package outbox_test

import (
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/outbox"
)

func TestPostgres(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	runOutboxTests(t, db, outbox.Postgres)
}
