package outbox

// WithDatabaseSQLClaims makes a PostgreSQL relay claim and settle through
// database/sql, as it does when the driver is not pgx's.
func WithDatabaseSQLClaims() RelayOption { return func(c *relayConfig) { c.plainSQL = true } }

// ClaimsThroughPgx reports whether r's PostgreSQL claims go through pgx.
func (r *Relay) ClaimsThroughPgx() bool { return r.ob.dialect == Postgres && !r.plainSQL.Load() }

// LockNamespace is the first key of the advisory locks of ob's key buckets.
func LockNamespace(ob *Outbox) int32 { return lockNamespace(ob.table) }

// Floors returns r's floors by key bucket (PostgreSQL through pgx).
func (r *Relay) Floors() []int64 { f, _, _ := r.floors.all(); return f }
