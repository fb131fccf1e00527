package driver

// BatchReleaser is an optional interface of a BatchSender. ReleasesBatch
// reports whether, once a SendBatch returned a nil error, the binding and
// its broker client keep no reference to the Outgoings of that call, nor
// to the bytes of their bodies, keys and headers, so that the caller may
// reuse that memory for a later batch. A binding unsure of its client (an
// injected writer) reports false.
type BatchReleaser interface {
	ReleasesBatch() bool
}
