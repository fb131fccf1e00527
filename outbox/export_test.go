package outbox

import (
	"context"
	"database/sql"
)

// WithDatabaseSQLClaims makes a PostgreSQL relay claim and settle through
// database/sql, as it does when the driver is not pgx's.
func WithDatabaseSQLClaims() RelayOption { return func(c *relayConfig) { c.plainSQL = true } }

// ClaimsThroughPgx reports whether r's PostgreSQL claims go through pgx.
func (r *Relay) ClaimsThroughPgx() bool { return r.ob.dialect == Postgres && !r.plainSQL.Load() }

// LockNamespace is the first key of the advisory locks of ob's key buckets.
func LockNamespace(ob *Outbox) int32 { return lockNamespace(ob.table) }

// Floors returns r's floors by key bucket (PostgreSQL through pgx).
// At the outbox's clock's now, so that floors past their lifetime are
// dropped first, as the next claim would.
func (r *Relay) Floors() []int64 { f, _, _ := r.floors.all(r.ob.now()); return f }

// FloorLifetime is how long a relay keeps its floors.
const FloorLifetime = floorLifetime

// IDDefaultTakesXidFirst reports whether ob's table's id default takes
// the inserting transaction's id first, as a claim checks it (PostgreSQL).
func IDDefaultTakesXidFirst(ctx context.Context, db *sql.DB, ob *Outbox) (bool, error) {
	var ok bool
	err := db.QueryRowContext(ctx, ob.q(`SELECT `+xidFirstCheck)).Scan(&ok)
	return ok, err
}

// RunOneWorker runs a single worker of Run until ctx ends: each of its
// claims takes every free key bucket, and each claim after the first rides
// with the settlement before it.
func (r *Relay) RunOneWorker(ctx context.Context) {
	r.work(ctx, keyBuckets, make(chan struct{}, 1))
}

// ClaimsAhead returns how many claims r made ahead (WithClaimAhead).
func (r *Relay) ClaimsAhead() int64 { return r.claimedAhead.Load() }
