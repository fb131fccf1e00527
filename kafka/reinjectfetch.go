package kafka

import "time"

// A re-injector's fetches gather records instead of answering one fetch per
// record written to a retry partition: a record waits out its tier after
// it is fetched, so fetching it a little later costs no lateness, while a
// fetch answered per record costs the broker (and the host it shares) a
// round trip for every record, in the very bursts whose due records the
// workers are writing back. See DESIGN.md, "Retry tiers and the Reinjector".
const (
	// reinjectFetchMinBytes is what a retry partition's fetch waits to
	// gather before the broker answers it (unless its wait ends first).
	reinjectFetchMinBytes = 64 << 10
	// reinjectFetchMaxWait is the longest such a fetch waits.
	reinjectFetchMaxWait = 250 * time.Millisecond
	// minReinjectFetchWait is the shortest gathering wait worth having;
	// a tier whose quarter is shorter fetches every record at once.
	minReinjectFetchWait = 10 * time.Millisecond
)

// reinjectFetchWait is how long a fetch of a retry partition of tier
// gathers records: a quarter of the tier, at most reinjectFetchMaxWait, so
// that a record written when it was stamped reaches its worker three
// quarters of its tier before it is due; 0 (no gathering) when that is
// below minReinjectFetchWait.
func reinjectFetchWait(tier time.Duration) time.Duration {
	wait := min(tier/4, reinjectFetchMaxWait)
	if wait < minReinjectFetchWait {
		return 0
	}
	return wait
}

// reinjectOpener is a generation that opens a retry partition whose
// fetches wait for minBytes or maxWait and whose records carry the broker's
// append time on a LogAppendTime topic (kafkaGeneration, appendtime.go);
// fakes open plain ones, whose records carry their own Time.
type reinjectOpener interface {
	openReinjectPartition(topic string, partition int, offset int64, buffer, minBytes int, maxWait time.Duration) partitionReader
}

// open returns the reader of the worker's partition from its offset.
func (w *partitionWorker) open(buffer int) partitionReader {
	g, ok := w.gen.(reinjectOpener)
	if !ok {
		return w.gen.OpenPartition(w.topic, w.partition, w.offset, buffer)
	}
	minBytes, wait := 1, defaultFetchMaxWait
	if gather := reinjectFetchWait(w.tier); gather > 0 {
		minBytes, wait = reinjectFetchMinBytes, gather
	}
	return g.openReinjectPartition(w.topic, w.partition, w.offset, buffer, minBytes, wait)
}
