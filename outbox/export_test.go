package outbox

// LockNamespace is the first key of the advisory locks of ob's key buckets.
func LockNamespace(ob *Outbox) int32 { return lockNamespace(ob.table) }
