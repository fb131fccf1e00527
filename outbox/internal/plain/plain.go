// Package plain lets the outbox's bench run a relay without one of its
// PostgreSQL speed mechanisms, to measure what each one earns.
package plain

// Forms names the mechanisms a relay runs without; zero: none.
type Forms struct {
	NoBitmask bool // the read selects the locked buckets as a set: no mask test, no range
}

// Option returns an outbox.RelayOption (as any) running a relay in f.
var Option func(f Forms) any
