package pulsar

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// RedriveJournalSuffix names the journal topic of a redrive cursor. The
// journal of cursor c on the dead-letter topic d is d + "." + c +
// RedriveJournalSuffix.
const RedriveJournalSuffix = ".journal"

// maxJournalMoved bounds the sources a journal record carries forward
// (recovered copies whose dead letter was not read again yet).
const maxJournalMoved = 10000

// journalRecord is one entry of a redrive journal. A run writes one before
// the copies of each batch of moves (Pending and After set), and one when
// it ends cleanly (Pending empty). The last record tells the next run what
// an interrupted run may have left half done.
type journalRecord struct {
	V int `json:"v"`
	// Pending are the sources (see sourceOf) of the batch being moved:
	// their copies may have been written without their dead letters
	// being acknowledged.
	Pending []string `json:"pending,omitempty"`
	// After maps each target topic of the batch to the serialized
	// message ID (base64) its copies land after; "" means from the
	// earliest message.
	After map[string]string `json:"after,omitempty"`
	// Moved are sources whose copy is known to be in a target while the
	// dead letter may still be in the DLQ: a run that reads one
	// acknowledges it without writing it again.
	Moved []string `json:"moved,omitempty"`
	// Guards are the target topics that hold a guard subscription (see
	// guardSubscription) not removed yet.
	Guards []string `json:"guards,omitempty"`
	// From maps each target partition to the serialized message ID the
	// first copies of the run landed after (of the earliest interrupted
	// run it continues, when it recovered one). A broker killed with -9
	// can forget acknowledgements of dead letters it had confirmed, from
	// any batch settled in its last seconds, not only the pending one: a
	// run that recovers an interrupted one scans every target from here
	// and acknowledges, without copying it again, every dead letter whose
	// copy it finds. The guard subscriptions keep those messages.
	From map[string]string `json:"from,omitempty"`
	// Recent, in a closing record (Pending empty), are the sources of the
	// last dead letters the run acknowledged with their copy in a target,
	// newest first (at most maxJournalMoved): a broker killed with -9 after
	// the run ended can forget those acknowledgements and deliver the dead
	// letters again, and the next run then acknowledges them without a
	// copy.
	Recent []string `json:"recent,omitempty"`
	// Base, in the records of a run that still carries the Recent of an
	// earlier closing record, is that record's serialized message ID in
	// the journal (base64), so that a run recovering this one reads it.
	Base string `json:"base,omitempty"`
	// At is when the record was written (Unix milliseconds), for people.
	At int64 `json:"at"`
}

func encodeJournal(r journalRecord) ([]byte, error) {
	r.V = 1
	return json.Marshal(r)
}

func decodeJournal(b []byte) (journalRecord, error) {
	var r journalRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("pulsar: redrive journal record: %w", err)
	}
	if r.V != 1 {
		return r, fmt.Errorf("pulsar: redrive journal record: unknown version %d", r.V)
	}
	return r, nil
}

// encodeID serializes a message ID for a journal record; "" stands for a
// topic that had no message yet.
func encodeID(id pulsar.MessageID) string {
	if id == nil || id.LedgerID() < 0 || id.EntryID() < 0 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(id.Serialize())
}

func decodeID(s string) (pulsar.MessageID, error) {
	if s == "" {
		return pulsar.EarliestMessageID(), nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive journal message ID: %w", err)
	}
	return pulsar.DeserializeMessageID(b)
}

// sourceOf names a dead letter for HeaderRedriveSource: its topic and its
// message ID, which stay the same however often it is redelivered.
func sourceOf(m pulsar.Message) string {
	return m.Topic() + "@" + m.ID().String()
}

// lastJournalRecord returns the last record of the journal topic and its
// serialized message ID, or nil when the journal is empty.
func lastJournalRecord(ctx context.Context, c pulsar.Client, topic string) (*journalRecord, string, error) {
	return journalRecordAt(ctx, c, topic, pulsar.LatestMessageID())
}

// journalRecordAt returns the record of the journal topic at start (the
// last one for pulsar.LatestMessageID()) and its serialized message ID, or
// nil when there is none.
func journalRecordAt(ctx context.Context, c pulsar.Client, topic string, start pulsar.MessageID) (*journalRecord, string, error) {
	r, err := c.CreateReader(pulsar.ReaderOptions{
		Topic:                   topic,
		StartMessageID:          start,
		StartMessageIDInclusive: true,
	})
	if err != nil {
		return nil, "", fmt.Errorf("pulsar: redrive: open journal %s: %w", topic, err)
	}
	defer r.Close()
	last, err := r.GetLastMessageID()
	if err != nil {
		return nil, "", fmt.Errorf("pulsar: redrive: last record of journal %s: %w", topic, err)
	}
	if !validID(last) {
		return nil, "", nil // an empty journal
	}
	if !r.HasNext() {
		// HasNext also says false when it could not ask the broker: a
		// journal that has records must not read as empty.
		return nil, "", fmt.Errorf("pulsar: redrive: journal %s: no record at %s though its last is %s", topic, start, last)
	}
	m, err := r.Next(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("pulsar: redrive: read journal %s: %w", topic, err)
	}
	rec, err := decodeJournal(m.Payload())
	if err != nil {
		return nil, "", fmt.Errorf("%w (journal %s, message %s)", err, topic, m.ID())
	}
	return &rec, encodeID(m.ID()), nil
}

// copiesWritten scans topic from after (exclusive) to its end and returns
// the members of pending found as the bq-redrive-source of a message;
// every source found when pending is nil.
func copiesWritten(ctx context.Context, c pulsar.Client, topic, after string, pending map[string]bool) (map[string]bool, error) {
	start, err := decodeID(after)
	if err != nil {
		return nil, err
	}
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: start})
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: scan %s for copies: %w", topic, err)
	}
	defer r.Close()
	// The end is asked for first: HasNext also says false when it could not
	// ask the broker, which must not pass for a scan that found nothing.
	last, err := r.GetLastMessageID()
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: scan %s for copies: last message: %w", topic, err)
	}
	found := make(map[string]bool)
	var read pulsar.MessageID
	for r.HasNext() {
		m, err := r.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("pulsar: redrive: scan %s for copies: %w", topic, err)
		}
		read = m.ID()
		src := m.Properties()[wire.HeaderRedriveSource]
		switch {
		case src == "":
		case pending == nil:
			found[src] = true
		case pending[src]:
			found[src] = true
			if len(found) == len(pending) {
				return found, nil
			}
		}
	}
	if validID(last) && entryBefore(start, last) && (read == nil || entryBefore(read, last)) {
		return nil, fmt.Errorf("pulsar: redrive: scan %s for copies stopped before its last message %s", topic, last)
	}
	return found, nil
}

// validID reports whether id names a message (a topic without messages
// reports a last ID with negative ledger and entry).
func validID(id pulsar.MessageID) bool {
	return id != nil && id.LedgerID() >= 0 && id.EntryID() >= 0
}

// entryBefore reports whether the entry of a comes before that of b in one
// topic partition; the earliest ID comes before every entry.
func entryBefore(a, b pulsar.MessageID) bool {
	if a.LedgerID() != b.LedgerID() {
		return a.LedgerID() < b.LedgerID()
	}
	return a.EntryID() < b.EntryID()
}

// lastMessageID returns the ID of the last message of topic (an ID with
// negative ledger and entry when it has none).
func lastMessageID(c pulsar.Client, topic string) (pulsar.MessageID, error) {
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.LatestMessageID()})
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: open %s: %w", topic, err)
	}
	defer r.Close()
	id, err := r.GetLastMessageID()
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: last message of %s: %w", topic, err)
	}
	return id, nil
}

// journalRecovery is what the last journal record tells a new run.
type journalRecovery struct {
	// moved are the sources the record carries forward (Moved), and the
	// pending ones whose copy was found: journaled again by the new run.
	moved map[string]bool
	// copied are the sources of every copy found in the targets since the
	// interrupted run's From: acknowledged when read, never journaled.
	copied map[string]bool
	// from is the record's From, the new run's scan start.
	from map[string]string
	// recent are the sources a closing record names as acknowledged last
	// (its own Recent, or that of the record named by Base): acknowledged
	// without a copy when read again. base is that closing record's ID.
	recent      map[string]bool
	base        string
	guards      []string
	interrupted bool
}

// recoverJournal reads the last journal record. When it names a pending
// batch (an interrupted run), it scans each target partition from the
// run's From (the pending batch's After when the record has none) and
// collects the sources of the copies written there. A closing record's
// Recent (or, from a run's batch record, that of the closing record it
// names as Base) are returned as recent: no target is read for them.
func recoverJournal(ctx context.Context, c pulsar.Client, journal string) (journalRecovery, error) {
	out := journalRecovery{moved: map[string]bool{}, copied: map[string]bool{}, from: map[string]string{}, recent: map[string]bool{}}
	rec, id, err := lastJournalRecord(ctx, c, journal)
	if err != nil || rec == nil {
		return out, err
	}
	for _, s := range rec.Moved {
		out.moved[s] = true
	}
	out.guards = rec.Guards
	recent, base := rec.Recent, id
	if len(rec.Pending) > 0 {
		recent, base = nil, rec.Base
		if rec.Base != "" {
			at, err := decodeID(rec.Base)
			if err != nil {
				return journalRecovery{}, err
			}
			closing, _, err := journalRecordAt(ctx, c, journal, at)
			if err != nil {
				return journalRecovery{}, err
			}
			if closing == nil {
				return journalRecovery{}, fmt.Errorf("pulsar: redrive: journal %s: the closing record %s named by the last record is gone", journal, rec.Base)
			}
			recent = closing.Recent
		}
	}
	for _, s := range recent {
		out.recent[s] = true
	}
	if len(out.recent) > 0 {
		out.base = base
	}
	if len(rec.Pending) == 0 {
		return out, nil
	}
	out.interrupted = true
	pending := make(map[string]bool, len(rec.Pending))
	for _, s := range rec.Pending {
		pending[s] = true
	}
	starts := make(map[string]string, len(rec.After)+len(rec.From))
	for part, after := range rec.After {
		starts[part] = after
	}
	for part, from := range rec.From {
		starts[part] = from
		out.from[part] = from
	}
	for scan := 0; ; scan++ {
		for part, start := range starts {
			found, err := copiesWritten(ctx, c, part, start, nil)
			if err != nil {
				return journalRecovery{}, err
			}
			for s := range found {
				if pending[s] {
					out.moved[s] = true
				} else {
					out.copied[s] = true
				}
			}
		}
		if scan > 0 || pendingFound(pending, out.moved) {
			return out, nil
		}
		// Copies of the pending batch are missing: either never sent, or
		// sent by the killed run and still being stored. The broker took
		// every send of the killed run before it let this run take the
		// cursor (one connection, read in order), so they are stored
		// within a bookie write; scan once more after that.
		if err := sleepCtx(ctx, inFlightSettle); err != nil {
			return journalRecovery{}, err
		}
	}
}

// inFlightSettle is how long a recovering run waits before it scans the
// targets a second time for pending copies the first scan did not find.
const inFlightSettle = 2 * time.Second

// pendingFound reports whether every pending source is in moved.
func pendingFound(pending, moved map[string]bool) bool {
	for s := range pending {
		if !moved[s] {
			return false
		}
	}
	return true
}

// sleepCtx waits d, or until ctx ends (returning its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// guardSubscription names the subscription a run keeps on each target
// while copies it wrote may still have to be found by a later run: the
// broker keeps every message after its position, so a copy consumed by
// the target's consumers is still there to be found.
func guardSubscription(cursor string) string { return cursor + ".guard" }

// addGuard creates the guard subscription of cursor on topic at its end,
// when it does not exist yet (an existing one keeps its older position).
func addGuard(c pulsar.Client, topic, cursor string) error {
	cons, err := c.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            guardSubscription(cursor),
		Type:                        pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionLatest,
		ReceiverQueueSize:           1,
	})
	if err != nil {
		return fmt.Errorf("pulsar: redrive: guard subscription on %s: %w", topic, err)
	}
	cons.Close()
	return nil
}

// removeGuard deletes the guard subscription of cursor on topic.
func removeGuard(c pulsar.Client, topic, cursor string) error {
	cons, err := c.Subscribe(pulsar.ConsumerOptions{
		Topic:             topic,
		SubscriptionName:  guardSubscription(cursor),
		Type:              pulsar.Shared,
		ReceiverQueueSize: 1,
	})
	if err != nil {
		return fmt.Errorf("pulsar: redrive: guard subscription on %s: %w", topic, err)
	}
	if err := cons.Unsubscribe(); err != nil {
		cons.Close()
		return fmt.Errorf("pulsar: redrive: remove guard subscription on %s: %w", topic, err)
	}
	cons.Close()
	return nil
}

// writeJournal appends rec to the journal and waits for the broker.
func writeJournal(ctx context.Context, p pulsar.Producer, rec journalRecord) (pulsar.MessageID, error) {
	rec.At = time.Now().UnixMilli()
	b, err := encodeJournal(rec)
	if err != nil {
		return nil, err
	}
	id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: b})
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: write journal: %w", err)
	}
	return id, nil
}

// retainSubscription names the durable subscription a run keeps on its
// journal topic. A topic without subscriptions may be trimmed, or deleted
// once inactive (the broker's default brokerDeleteInactiveTopicsEnabled),
// which would lose the record of a batch an interrupted run left half
// done; the retain subscription keeps the journal. It is never consumed: a
// run that ends cleanly moves it to its closing record, so the journal's
// backlog is that one record.
func retainSubscription(cursor string) string { return cursor + ".retain" }

// retainJournal subscribes the retain subscription to the journal topic,
// from its earliest record.
func retainJournal(c pulsar.Client, topic, cursor string) (pulsar.Consumer, error) {
	cons, err := c.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            retainSubscription(cursor),
		Type:                        pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		ReceiverQueueSize:           1,
	})
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: retain subscription %s on journal %s: %w", retainSubscription(cursor), topic, err)
	}
	return cons, nil
}

// movedList returns up to maxJournalMoved members of moved.
func movedList(moved map[string]bool) []string {
	out := make([]string, 0, min(len(moved), maxJournalMoved))
	for s := range moved {
		if len(out) == maxJournalMoved {
			break
		}
		out = append(out, s)
	}
	return out
}
