package brokertest

import (
	"strings"
	"testing"
)

func TestPostgresFailsWithoutItsVariable(t *testing.T) {
	t.Setenv(EnvPostgresURL, " ")
	t.Setenv(EnvCI, "") // a failure even outside CI
	f := run("T", func(tb testing.TB) { Postgres(tb) })
	if f.fatal == "" || f.skip != "" || !strings.Contains(f.fatal, EnvPostgresURL) {
		t.Fatalf("want a failure naming %s, got fatal=%q skip=%q", EnvPostgresURL, f.fatal, f.skip)
	}
}

func TestPostgresFailsWithoutItsDriver(t *testing.T) {
	t.Setenv(EnvPostgresURL, "postgres://bq@127.0.0.1:1/postgres")
	f := run("T", func(tb testing.TB) { Postgres(tb) })
	if f.fatal == "" || !strings.Contains(f.fatal, "pgx") {
		t.Fatalf("want a failure naming the unregistered driver, got fatal=%q skip=%q", f.fatal, f.skip)
	}
}

func TestWithParamAddsToTheQuery(t *testing.T) {
	for u, want := range map[string]string{
		"postgres://bq@127.0.0.1:25432/postgres":                 "postgres://bq@127.0.0.1:25432/postgres?application_name=a+b",
		"postgres://bq@127.0.0.1:25432/postgres?sslmode=disable": "postgres://bq@127.0.0.1:25432/postgres?sslmode=disable&application_name=a+b",
	} {
		if got := withParam(u, "application_name", "a b"); got != want {
			t.Errorf("withParam(%q) = %q, want %q", u, got, want)
		}
	}
}
