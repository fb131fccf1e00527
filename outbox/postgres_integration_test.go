//go:build integration

package outbox_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/outbox"
)

func TestPostgres(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	runOutboxTests(t, db, outbox.Postgres)
}

// TestPostgresDatabaseSQL is TestPostgres with the claims and their
// settlement through database/sql, the path of a driver other than pgx's.
func TestPostgresDatabaseSQL(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	relayOpts = []outbox.RelayOption{outbox.WithDatabaseSQLClaims()}
	t.Cleanup(func() { relayOpts = nil })
	runOutboxTests(t, db, outbox.Postgres)
}

// TestPostgresSimpleProtocol is TestPostgres with pgx in its simple
// protocol: every column and parameter in text format.
func TestPostgresSimpleProtocol(t *testing.T) {
	_, url := brokertest.Postgres(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := sql.Open("pgx", url+sep+"default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	runOutboxTests(t, db, outbox.Postgres)
}

// TestPostgresClaimsThroughPgx checks that a relay on pgx's driver
// reads its claims through pgx, and one told otherwise through
// database/sql, each row with its own queue.
func TestPostgresClaimsThroughPgx(t *testing.T) {
	db, _ := brokertest.Postgres(t)
	for _, plain := range []bool{false, true} {
		ob := newOutbox(t, db, outbox.Postgres)
		write(t, db, ob, true, outbox.Message{Queue: "q", Body: []byte("b")}, outbox.Message{Queue: "q2", Body: []byte("c")},
			outbox.Message{Queue: "q", Body: []byte("d")})
		var opts []outbox.RelayOption
		if plain {
			opts = append(opts, outbox.WithDatabaseSQLClaims())
		}
		s := &recordingSender{}
		r := newRelay(t, db, ob, s, opts...)
		if n, err := r.RunOnce(context.Background()); err != nil || n != 3 || len(s.got) != 3 {
			t.Fatalf("RunOnce: %d, %v, sent %d; want 3 rows", n, err, len(s.got))
		}
		for _, g := range s.got {
			if want := map[string]string{"b": "q", "c": "q2", "d": "q"}[string(g.body)]; g.queue != want {
				t.Fatalf("row %s sent to %q, want %q", g.body, g.queue, want)
			}
		}
		if r.ClaimsThroughPgx() == plain {
			t.Fatalf("claims through pgx: %v, want %v", r.ClaimsThroughPgx(), !plain)
		}
	}
}
