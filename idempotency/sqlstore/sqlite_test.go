package sqlstore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/babelqueue/babelqueue-go/idempotency"
	"github.com/babelqueue/babelqueue-go/idempotency/sqlstore"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

func openSQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "idem.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestSQLiteStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) idempotency.Store { return newStore(t, openSQLite(t), sqlstore.SQLite) })
}

func TestSQLiteWrapTx(t *testing.T) {
	db := openSQLite(t)
	runWrapTx(t, db, newStore(t, db, sqlstore.SQLite))
}

func TestSQLiteCleanup(t *testing.T) {
	db := openSQLite(t)
	runCleanup(t, db, sqlstore.SQLite)
}
