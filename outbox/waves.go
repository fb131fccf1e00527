package outbox

import (
	"cmp"
	"context"
	"slices"
)

// A PostgreSQL claim holds every row of its keys until it commits, so it
// may send several rows of one key as long as they leave one after the
// other: the claim's rows are sent in waves, first the oldest pending row
// of each key, then the next one of each key, and so on, each wave once
// the broker acknowledged the one before. One deletion and commit settle
// them all (DESIGN.md, "Waves").

// inWaves orders a claim's rows for sending: at most waves rows of each
// order key (the oldest, by id), grouped into sends of at most size rows
// holding at most one row of a key, a key's rows in id order across the
// sends. It sets each row's wave (its send, numbered from 0) and returns
// the rows ordered by it, then by id.
func inWaves(rows []row, waves, size int) []row {
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	depth := make(map[string]int, len(rows))
	rows = slices.DeleteFunc(rows, func(rw row) bool {
		n := depth[rw.orderKey]
		depth[rw.orderKey] = n + 1
		return n >= waves
	})
	// wave holds each row's depth in its key (0: the key's head) until the
	// rows are ordered by it, then the send it goes in.
	clear(depth)
	for i := range rows {
		rows[i].wave = depth[rows[i].orderKey]
		depth[rows[i].orderKey]++
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.wave, b.wave) })
	// A depth of more than size rows (more keys than a send takes) is
	// sent in several sends, one after the other.
	send, fill, depthOfSend := 0, 0, 0
	for i := range rows {
		if d := rows[i].wave; d != depthOfSend || fill == size {
			send, fill, depthOfSend = send+1, 0, d
		}
		fill++
		rows[i].wave = send
	}
	return rows
}

// waveLen is the number of rows of the wave rows starts with (rows as
// inWaves returned them, not empty).
func waveLen(rows []row) int {
	n := 1
	for n < len(rows) && rows[n].wave == rows[0].wave {
		n++
	}
	return n
}

// sendWaves sends rows (as inWaves returned them) wave by wave, each
// holding a slot of sends while it is sent (when sends is not nil), and
// records each row's outcome in it. Once a wave had a failure, or ctx
// ended, the later waves are not sent: their rows get ErrEarlierFailed,
// so they stay pending and no attempt is counted. It returns false,
// having sent nothing, when ctx ended before the first wave got a slot.
func (r *Relay) sendWaves(ctx context.Context, rows []row, sends chan struct{}) bool {
	for first := true; len(rows) > 0; first = false {
		if sends != nil {
			select {
			case sends <- struct{}{}:
			case <-ctx.Done():
				if first {
					return false
				}
				holdBack(rows)
				return true
			}
		}
		wave := rows[:waveLen(rows)]
		r.send(ctx, wave)
		if sends != nil {
			<-sends
		}
		rows = rows[len(wave):]
		if ctx.Err() != nil || slices.ContainsFunc(wave, func(rw row) bool { return rw.err != nil }) {
			holdBack(rows)
			return true
		}
	}
	return true
}

// holdBack marks rows not sent: they stay pending, without an attempt.
func holdBack(rows []row) {
	for i := range rows {
		rows[i].err = ErrEarlierFailed
	}
}
