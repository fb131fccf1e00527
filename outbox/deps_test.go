package outbox_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSQLiteOnlyLinksNoPgx lists what a SQLite-only program links (this
// package and the SQLite driver) and fails when pgx is among it: a user
// pays only for the database they use.
func TestSQLiteOnlyLinksNoPgx(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".", "modernc.org/sqlite").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, want this package's dependencies", len(deps))
	}
	for _, p := range deps {
		if strings.Contains(p, "jackc/pgx") || strings.Contains(p, "jackc/pgconn") {
			t.Fatalf("a SQLite-only program links %s", p)
		}
	}
}
