package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/outbox"
)

// fillOutbox writes three rows (keys a, a, b) to ob's table, publishes the
// row of b and fails the first row of a once: 2 pending, 1 failing.
func fillOutbox(t *testing.T, db *sql.DB, ob *outbox.Outbox) {
	t.Helper()
	ctx := context.Background()
	if err := ob.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "a", "b"} {
		if _, err := ob.Write(ctx, tx, outbox.Message{Queue: "q", Key: []byte(k), Body: []byte(`{"k":"` + k + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	send := outbox.SenderFunc(func(_ context.Context, _ string, key, _ []byte, _ map[string]string) error {
		if string(key) == "a" {
			return errors.New("broker said no")
		}
		return nil
	})
	r, err := outbox.NewRelay(db, ob, send, outbox.WithBackoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL claims all three rows (the second a in a later round,
	// held back once the first fails), SQLite the oldest row of each key.
	if n, err := r.RunOnce(ctx); err != nil || n < 2 {
		t.Fatalf("relay pass: %d rows, %v; want 2 or 3", n, err)
	}
}

// checkOutboxStats runs bq outbox stats with args and checks its JSON.
func checkOutboxStats(t *testing.T, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), append([]string{"outbox", "stats", "--json"}, args...), &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var st outboxStats
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if st.Pending != 2 || st.Failing != 1 || st.Attempts != 1 || st.LastError == nil || !strings.Contains(*st.LastError, "broker said no") {
		t.Fatalf("stats %+v, want 2 pending, 1 failing, 1 attempt, the error", st)
	}
	out.Reset()
	if code := run(context.Background(), append([]string{"outbox", "stats"}, args...), &out, &errOut); code != exitOK || !strings.Contains(out.String(), "pending") {
		t.Fatalf("table output (exit %d): %s", code, out.String())
	}
}

func TestOutboxStatsSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.New(outbox.SQLite, outbox.WithTable("orders_outbox"))
	if err != nil {
		t.Fatal(err)
	}
	fillOutbox(t, db, ob)
	checkOutboxStats(t, "--sqlite", path, "--table", "orders_outbox")
}

func TestOutboxStatsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"outbox", "stats"},
		{"outbox", "stats", "--sqlite", "x.db", "--postgres", "postgres://h/db"},
		{"outbox", "stats", "--sqlite", "x.db", "--table", "no-such table"},
	} {
		var out, errOut bytes.Buffer
		t.Setenv("BQ_OUTBOX_POSTGRES", "")
		if code := run(context.Background(), args, &out, &errOut); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errOut.String())
		}
	}
}
