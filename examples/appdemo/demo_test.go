package appdemo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestDemoAccountsForEveryMessage runs the demo on its embedded broker and
// checks its story and its last line: every message handled or waiting in
// the DLQ, nothing lost.
func TestDemoAccountsForEveryMessage(t *testing.T) {
	var out bytes.Buffer
	a, err := Run(context.Background(), Config{Out: &out, Timeout: 40 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	const want = "accounted: produced=13 handled=11 dead_lettered=4 redriven=2 in_dlq=2 lost=0"
	if last := lines[len(lines)-1]; last != want || a.Line() != want {
		t.Errorf("last line %q (accounting %q), want %q\n%s", last, a.Line(), want, out.String())
	}
	for _, s := range []string{
		"-> orders.retry.1, due in 1s", // a first failure goes to tier 1
		"-> orders.retry.2, due in 2s", // a second one to tier 2
		"reinjector: carried a record from orders.retry.2 back to orders",
		"reinjector backlog: orders.retry.1=",  // the backlog samples
		"delivery 3 on orders         handled", // a flaky order handled after both tiers
		"dead_lettered (failed: shipping address rejected by the carrier) -> orders.dlq",
		"DLQ summary: orders.dlq holds 4 dead letters",
		`dead_letter: {"reason":"unknown_urn"`, // the dead_letter block itself
		"redrive of orders.dlq: examined=4 moved=2 kept=2",
		"still in orders.dlq: ord-12, ref-13",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q\n%s", s, out.String())
		}
	}
}
