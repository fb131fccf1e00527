package driver

import (
	"maps"
	"slices"
	"strconv"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Verbatim reports whether the intent writes Outgoing.Headers exactly as
// given, with nothing projected from the body (IntentForward and
// IntentRestore).
func (i Intent) Verbatim() bool { return i == IntentForward || i == IntentRestore }

// KeepsRoute reports whether a bq-job in Outgoing.Headers wins over the URN
// of the body, as for IntentRetry, IntentRelease and IntentDeadLetter. The
// copy of a delivered message keeps the route it was delivered on, so that
// it reaches the same handler even when its header and body disagree.
func (i Intent) KeepsRoute() bool {
	return i == IntentRetry || i == IntentRelease || i == IntentDeadLetter
}

// OutgoingHeaders returns the headers a binding writes for out, in order.
// A verbatim intent gives every entry of out.Headers whose key is not
// blank, blank values included, in key order; every other intent gives the contract projection of out.Body
// followed by out.Headers by the wire.MergeHeaders rules, the projected bq-job
// replaced by the one in out.Headers when the intent keeps the route, and,
// on IntentRetry, the projected bq-attempts by the one in out.Headers (a
// poison body keeps its bytes, so only the header carries the count).
// Bindings with a faster path of their own must give the same result.
func OutgoingHeaders(out *Outgoing) []wire.Header {
	if out.Intent.Verbatim() {
		hs := make([]wire.Header, 0, len(out.Headers))
		for _, k := range slices.Sorted(maps.Keys(out.Headers)) {
			if !wire.IsBlank(k) {
				hs = append(hs, wire.Header{Key: k, Value: out.Headers[k]})
			}
		}
		return hs
	}
	// The projection the writer gave (SetProjection), else the body
	// parsed: a publish through the App is not parsed again.
	hs := wire.MergeHeaders(out.Projection().Headers(), out.Headers)
	if out.Intent.KeepsRoute() {
		if job, ok := out.Headers[wire.HeaderJob]; ok && !wire.IsBlank(job) {
			hs = withHeader(hs, wire.HeaderJob, job)
		}
	}
	if out.Intent == IntentRetry {
		if n, ok := out.Headers[wire.HeaderAttempts]; ok && !wire.IsBlank(n) {
			hs = withHeader(hs, wire.HeaderAttempts, n)
		}
	}
	return hs
}

// withHeader sets key to value in hs, in place when present, else at the
// end.
func withHeader(hs []wire.Header, key, value string) []wire.Header {
	for i := range hs {
		if hs[i].Key == key {
			hs[i].Value = value
			return hs
		}
	}
	return append(hs, wire.Header{Key: key, Value: value})
}

func itoa(n int) string { return strconv.Itoa(n) }
