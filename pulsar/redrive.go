package pulsar

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Redrive settings.
const (
	// DefaultRedriveCursor is the subscription a redrive consumes the
	// dead-letter queue with when the plan names none
	// (redrive.WithCursor).
	DefaultRedriveCursor = "bq-redrive"
	// RedriveBatchMax bounds the moves settled together: one journal
	// record, the copies written, then one acknowledgement of their dead
	// letters.
	RedriveBatchMax = 100
	// RedriveBatchIdle is how long a run waits for another message before
	// it settles the moves it has.
	RedriveBatchIdle = 50 * time.Millisecond
	// redriveSettleTimeout bounds the settlement of the last batch of a
	// run whose context ended.
	redriveSettleTimeout = 30 * time.Second
)

// ErrRedriveBusy is returned (wrapped) by Redrive when another run holds
// the redrive cursor of the dead-letter queue: its Exclusive subscription
// already has a consumer. It matches babelqueue.ErrRedriveBusy.
var ErrRedriveBusy = fmt.Errorf("pulsar: %w (the dead-letter queue's redrive subscription has a consumer)", babelqueue.ErrRedriveBusy)

// ErrBatchEntryKept is the Err of a dead letter that would have moved but
// shares a broker batch entry with a message that stays. Pulsar
// acknowledges a batch entry as a whole, so the entry stays in full.
var ErrBatchEntryKept = errors.New("pulsar: redrive: kept with its batch entry, which holds a message that stays")

var _ redrive.Redriver = (*Transport)(nil)

// Redrive implements redrive.Redriver: redrive.Run hands it the
// whole run. It consumes the topic of dlq on an Exclusive subscription
// named plan.Cursor (DefaultRedriveCursor when empty); a second run on the
// same queue and cursor fails at once with an error matching
// ErrRedriveBusy.
//
// Guarantees: a dead letter is acknowledged only after the broker
// acknowledged its copy in the target (wire.ClearDeadLetter of it,
// key and ordering key kept, plan.MovedHeaders and bq-redrive-source
// added); a run killed at any point and run again with the same cursor
// neither loses nor duplicates one (a journal topic per cursor records
// each batch, see DESIGN.md); messages that stay, and every message of a
// dry run, are left unacknowledged in place and in order. A failed write or
// acknowledgement stops the run with an error wrapping
// babelqueue.ErrSettle. Redrive needs a Transport built by New.
func (t *Transport) Redrive(ctx context.Context, dlq string, plan redrive.Plan) (*redrive.Result, error) {
	res := &redrive.Result{DryRun: plan.DryRun}
	if t.isClosed() {
		return res, errClosed("redrive " + dlq)
	}
	pc := rawClientOf(t.client)
	if pc == nil {
		return res, fmt.Errorf("pulsar: redrive %s: %w: the Transport has no pulsar.Client", dlq, babelqueue.ErrInvalidOption)
	}
	if wire.IsBlank(dlq) {
		return res, invalid("redrive: dead-letter queue is blank")
	}
	cursor := plan.Cursor
	if wire.IsBlank(cursor) {
		cursor = DefaultRedriveCursor
	}
	if plan.OnTotal != nil {
		plan.OnTotal(-1)
	}
	r := &redriveRun{
		t: t, c: pc, plan: plan, res: res, dlq: dlq, topic: t.Topic(dlq), cursor: cursor,
		producers: make(map[string]pulsar.Producer),
		parts:     make(map[string][]string),
		after:     make(map[string]string),
		guards:    make(map[string]bool),
		highest:   make(map[string]pulsar.MessageID),
		recent:    newRecentAcks(maxRecentAcks),
	}
	defer r.close()
	if err := r.open(ctx); err != nil {
		return res, err
	}
	err := r.run(ctx)
	return res, err
}

// redriveRun is the state of one Redrive call.
type redriveRun struct {
	t      *Transport
	c      pulsar.Client
	plan   redrive.Plan
	res    *redrive.Result
	dlq    string
	topic  string
	cursor string

	cons      pulsar.Consumer
	journal   pulsar.Producer
	retain    pulsar.Consumer            // the journal's retain subscription
	producers map[string]pulsar.Producer // target topic -> producer
	parts     map[string][]string        // target topic -> its partitions (itself when not partitioned)
	after     map[string]string          // partition topic -> encoded ID the next copies land after
	guards    map[string]bool            // target topics holding the guard subscription
	moved     map[string]bool            // sources already copied (from the journal)
	copied    map[string]bool            // sources whose copy a recovery scan found (not journaled)
	from      map[string]string          // partition topic -> encoded ID the run's first copies land after
	recent    *recentAcks                // sources this run acknowledged with a copy in a target
	inherited map[string]bool            // sources an earlier clean run acknowledged last (its closing record's Recent)
	base      string                     // the journal ID of that closing record ("" when none)
	journaled bool                       // this run wrote a journal record
	recovered bool                       // the journal named work to carry on

	highest   map[string]pulsar.MessageID // DLQ partition topic -> highest ID received since the last rescan
	rewoundAt pulsar.Message              // a message received at or below highest: a redelivery

	lookahead  pulsar.Message
	batch      []*redriveEntry
	batchMoves int
}

type redriveAction int

const (
	actKeep redriveAction = iota
	actMove
	actAck     // already copied by an interrupted run
	actDiscard // a discard run acknowledges it without a copy
)

// redriveEntry is one examined message waiting for its batch to settle.
type redriveEntry struct {
	msg    pulsar.Message
	rm     *babelqueue.ReceivedMessage
	env    *babelqueue.Envelope
	source string
	act    redriveAction
	item   redrive.Item
}

// journalTopic names the journal of the run's cursor.
func (r *redriveRun) journalTopic() string {
	return r.topic + "." + r.cursor + RedriveJournalSuffix
}

// open subscribes (taking the cursor), then recovers what the journal
// names.
func (r *redriveRun) open(ctx context.Context) error {
	cons, err := r.c.Subscribe(pulsar.ConsumerOptions{
		Topic:                       r.topic,
		SubscriptionName:            r.cursor,
		Type:                        pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		AckWithResponse:             true,
	})
	if err != nil {
		if isConsumerBusy(err) {
			return fmt.Errorf("%w: subscription %s on %s: %w", ErrRedriveBusy, r.cursor, r.topic, err)
		}
		return fmt.Errorf("pulsar: redrive: subscribe %s to %s: %w", r.cursor, r.topic, err)
	}
	r.cons = cons
	rec, err := recoverJournal(ctx, r.c, r.journalTopic())
	if err != nil {
		return err
	}
	r.moved, r.copied, r.from = rec.moved, rec.copied, rec.from
	r.inherited, r.base = rec.recent, rec.base
	r.recovered = rec.interrupted || len(rec.moved) > 0 || len(rec.recent) > 0
	for _, g := range rec.guards {
		r.guards[g] = true
	}
	r.res.Resumed = rec.interrupted
	if r.plan.DryRun {
		return nil
	}
	retain, err := retainJournal(r.c, r.journalTopic(), r.cursor)
	if err != nil {
		return err
	}
	r.retain = retain
	p, err := r.c.CreateProducer(pulsar.ProducerOptions{Topic: r.journalTopic(), DisableBatching: true})
	if err != nil {
		return fmt.Errorf("pulsar: redrive: journal producer for %s: %w", r.journalTopic(), err)
	}
	r.journal = p
	return nil
}

func isConsumerBusy(err error) bool {
	var pe *pulsar.Error
	if errors.As(err, &pe) && pe.Result() == pulsar.ConsumerBusy {
		return true
	}
	return strings.Contains(err.Error(), "ConsumerBusy")
}

// close releases the consumer (its unacknowledged messages go back to the
// subscription) and the producers of the run.
func (r *redriveRun) close() {
	if r.cons != nil {
		r.cons.Close()
	}
	for _, p := range r.producers {
		p.Close()
	}
	if r.journal != nil {
		r.journal.Close()
	}
	if r.retain != nil {
		r.retain.Close()
	}
}

// run reads, examines and settles until the queue is drained, the max is
// reached or ctx ends.
func (r *redriveRun) run(ctx context.Context) error {
	var stop error
	for {
		if r.plan.Max > 0 && r.res.Moved+r.res.Discarded+r.batchMoves >= r.plan.Max {
			break
		}
		if err := ctx.Err(); err != nil {
			stop = err
			break
		}
		wait := r.plan.PollTimeout
		if len(r.batch) > 0 {
			wait = min(wait, RedriveBatchIdle)
		}
		m, err := r.receive(ctx, wait)
		if err != nil {
			if ctx.Err() != nil {
				stop = ctx.Err()
				break
			}
			return errors.Join(err, r.settle(context.WithoutCancel(ctx)))
		}
		if m == nil {
			if len(r.batch) > 0 {
				if err := r.settle(ctx); err != nil {
					return err
				}
				continue
			}
			break
		}
		if m == r.rewoundAt {
			if err := r.rescan(ctx, m); err != nil {
				if ctx.Err() != nil {
					stop = ctx.Err()
					break
				}
				return err
			}
		}
		group, err := r.entry(ctx, m)
		if err != nil {
			if ctx.Err() != nil {
				stop = ctx.Err()
				break
			}
			return errors.Join(err, r.settle(context.WithoutCancel(ctx)))
		}
		if r.examine(group) {
			break // the entry would pass the max
		}
		if r.batchMoves >= RedriveBatchMax || len(r.batch) >= RedriveBatchMax {
			if err := r.settle(ctx); err != nil {
				return err
			}
		}
	}
	sctx := ctx
	if stop != nil {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), redriveSettleTimeout)
		defer cancel()
		sctx = c
	}
	if err := r.settle(sctx); err != nil {
		return errors.Join(stop, err)
	}
	if err := r.finish(sctx); err != nil {
		return errors.Join(stop, err)
	}
	return stop
}

// receive returns the next message, or nil when none arrived within wait.
func (r *redriveRun) receive(ctx context.Context, wait time.Duration) (pulsar.Message, error) {
	if m := r.lookahead; m != nil {
		r.lookahead = nil
		return m, nil
	}
	rctx, cancel := context.WithTimeout(ctx, wait)
	m, err := r.cons.Receive(rctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, nil
		}
		return nil, fmt.Errorf("pulsar: redrive: receive from %s: %w", r.topic, err)
	}
	r.observe(m)
	return m, nil
}

// observe notes the ID of a message read from the consumer. The Exclusive
// cursor delivers each partition in order, so a message at or below the
// highest ID received is a redelivery: the consumer reconnected and the
// broker delivers again from its acknowledged position, which a broker
// killed with -9 may have forgotten moving (see rescan). The message is
// then kept in rewoundAt for run.
func (r *redriveRun) observe(m pulsar.Message) {
	id := m.ID()
	if h, ok := r.highest[m.Topic()]; ok && !idAfter(id, h) {
		r.rewoundAt = m
		return
	}
	r.highest[m.Topic()] = id
}

// idAfter reports whether a comes after b in one topic partition.
func idAfter(a, b pulsar.MessageID) bool {
	if a.LedgerID() != b.LedgerID() {
		return a.LedgerID() > b.LedgerID()
	}
	if a.EntryID() != b.EntryID() {
		return a.EntryID() > b.EntryID()
	}
	return a.BatchIdx() > b.BatchIdx()
}

// rescan handles a redelivery (m, see observe) within a run. A Pulsar
// broker killed with -9 can forget acknowledgements it had confirmed (it
// persists a cursor's position lazily), and then delivers again dead
// letters this run already moved. rescan settles the batch in hand. While
// the run remembers every source it acknowledged with a copy (recent has
// forgotten none), examine recognises such a dead letter and nothing is
// read. Past that bound it collects the sources of every copy written to
// the targets since the run's first position (from; the guard
// subscriptions keep them), so that such a dead letter is acknowledged
// without being copied again.
func (r *redriveRun) rescan(ctx context.Context, m pulsar.Message) error {
	r.rewoundAt = nil
	if err := r.settle(ctx); err != nil {
		return err
	}
	if !r.plan.DryRun && len(r.from) > 0 && r.recent.evicted {
		r.t.warn(fmt.Sprintf("redrive: %s delivered %s again (a reconnect; acknowledgements the broker forgot are redelivered): scanning %d target partitions for copies already written", r.topic, m.ID(), len(r.from)))
		for part, from := range r.from {
			found, err := copiesWritten(ctx, r.c, part, from, nil)
			if err != nil {
				return fmt.Errorf("%w: %w", babelqueue.ErrSettle, err)
			}
			for s := range found {
				if !r.moved[s] {
					r.copied[s] = true
				}
			}
		}
	}
	clear(r.highest)
	r.highest[m.Topic()] = m.ID()
	return nil
}

// entry returns m with the other messages of its broker batch entry,
// which the broker delivers one after the other. A message of another
// entry read meanwhile is kept for the next receive.
func (r *redriveRun) entry(ctx context.Context, m pulsar.Message) ([]pulsar.Message, error) {
	group := []pulsar.Message{m}
	size := int(m.ID().BatchSize())
	for len(group) < size {
		n, err := r.receive(ctx, r.plan.PollTimeout)
		if err != nil {
			return nil, err
		}
		if n == nil {
			break
		}
		if n == r.rewoundAt || !sameEntry(m.ID(), n.ID()) {
			r.lookahead = n
			break
		}
		group = append(group, n)
	}
	return group, nil
}

func sameEntry(a, b pulsar.MessageID) bool {
	return a.LedgerID() == b.LedgerID() && a.EntryID() == b.EntryID() && a.PartitionIdx() == b.PartitionIdx()
}

// examine decides what happens to the messages of one batch entry and
// adds them to the batch. It reports true when moving the entry would pass
// the max: the entry is then kept, and the run ends.
func (r *redriveRun) examine(group []pulsar.Message) bool {
	entries := make([]*redriveEntry, 0, len(group))
	moves, keeps := 0, 0
	for _, m := range group {
		e := &redriveEntry{msg: m, rm: rawReceived(r.dlq, r.cons, m), source: sourceOf(m)}
		if r.moved[e.source] || r.copied[e.source] || r.inherited[e.source] || r.recent.has(e.source) {
			e.act = actAck
			e.item = redrive.Item{Outcome: redrive.AlreadyMoved}
			if env, err := babelqueue.Decode([]byte(e.rm.Body)); err == nil {
				e.item.MessageID, e.item.URN = env.Meta.ID, env.URN()
				if env.DeadLetter != nil {
					e.item.Reason = env.DeadLetter.Reason
				}
			}
			e.item.Redrives = redrive.Count(e.rm.Headers)
		} else {
			e.item, e.env = r.plan.Examine(r.dlq, e.rm)
			switch e.item.Outcome {
			case redrive.Moved:
				e.act = actMove
				moves++
			case redrive.Discarded:
				e.act = actDiscard
				moves++
			default:
				keeps++
			}
		}
		e.item.Position = m.ID().String()
		entries = append(entries, e)
	}
	size := int(group[0].ID().BatchSize())
	whole := size <= 1 || len(group) == size
	passesMax := r.plan.Max > 0 && r.res.Moved+r.res.Discarded+r.batchMoves+moves > r.plan.Max
	if keeps > 0 || !whole || passesMax {
		for _, e := range entries {
			if e.act == actKeep {
				continue
			}
			e.act = actKeep
			if e.item.Outcome == redrive.Moved || e.item.Outcome == redrive.Discarded {
				e.item.Outcome = redrive.Unselected
				e.item.Body, e.item.Key, e.item.Headers = "", nil, nil
				e.item.Err = ErrBatchEntryKept
				if passesMax && keeps == 0 && whole {
					e.item.Err = fmt.Errorf("%w: moving its batch entry of %d would pass the max of %d", ErrBatchEntryKept, size, r.plan.Max)
				}
			}
		}
		moves = 0
	}
	r.batch = append(r.batch, entries...)
	r.batchMoves += moves
	return passesMax
}

// rawReceived wraps m as received, without the attempts rule of Pop (the
// body is cleared before it moves).
func rawReceived(queue string, c pulsar.Consumer, m pulsar.Message) *babelqueue.ReceivedMessage {
	props := m.Properties()
	headers := make(map[string]string, len(props))
	for k, v := range props {
		headers[k] = v
	}
	rm := &babelqueue.ReceivedMessage{
		Body:    string(m.Payload()),
		Queue:   queue,
		Headers: headers,
		Handle:  &delivery{msg: m, consumer: c, topic: m.Topic()},
	}
	rm.Key, rm.Partition = orderOf(m)
	return rm
}

// settle writes the journal record and the copies of the batch, then
// acknowledges its moved dead letters, and reports every entry.
func (r *redriveRun) settle(ctx context.Context) error {
	batch := r.batch
	r.batch, r.batchMoves = nil, 0
	if len(batch) == 0 {
		return nil
	}
	if r.plan.DryRun {
		for _, e := range batch {
			if e.act == actMove || e.act == actDiscard {
				e.item.Outcome = redrive.DryOutcome(e.item.Outcome)
			}
			e.item.Disposition = redrive.DispositionReserved
			r.plan.Report(r.res, e.item)
		}
		return nil
	}
	var moves, acks []*redriveEntry
	for _, e := range batch {
		switch e.act {
		case actMove:
			moves = append(moves, e)
			acks = append(acks, e)
		case actAck, actDiscard:
			acks = append(acks, e)
		}
	}
	err := r.writeCopies(ctx, moves)
	if err == nil && len(acks) > 0 {
		err = r.fault("sent")
		if err == nil {
			ids := make([]pulsar.MessageID, len(acks))
			for i, e := range acks {
				ids[i] = e.msg.ID()
			}
			if aerr := r.cons.AckIDList(ids); aerr != nil {
				err = fmt.Errorf("%w: redrive: acknowledging %d dead letters in %s after their copies were written (the next run recognises them from the journal): %w",
					babelqueue.ErrSettle, len(ids), r.topic, aerr)
			}
		}
	}
	for _, e := range batch {
		switch {
		case e.act == actKeep:
			e.item.Disposition = redrive.DispositionReserved
		case err != nil:
			e.item.Outcome, e.item.Err = redrive.Failed, err
			e.item.Disposition = redrive.DispositionReserved
		default:
			e.item.Disposition = redrive.DispositionRemoved
			if e.act == actAck {
				delete(r.moved, e.source)
				delete(r.copied, e.source)
				delete(r.inherited, e.source)
			}
			if e.act == actMove || e.act == actAck {
				r.recent.add(e.source)
			}
		}
		r.plan.Report(r.res, e.item)
	}
	return err
}

// writeCopies journals the moves, then writes their copies and waits for
// the broker to acknowledge every one.
func (r *redriveRun) writeCopies(ctx context.Context, moves []*redriveEntry) error {
	if len(moves) == 0 {
		return nil
	}
	rec := journalRecord{After: make(map[string]string), Moved: movedList(r.moved)}
	msgs := make([]*pulsar.ProducerMessage, len(moves))
	topics := make([]string, len(moves))
	for i, e := range moves {
		cleared, err := wire.ClearDeadLetter([]byte(e.rm.Body))
		if err != nil {
			return fmt.Errorf("%w: redrive %s: clearing the dead letter: %w", babelqueue.ErrSettle, e.item.MessageID, err)
		}
		headers := r.plan.MovedHeaders(e.rm)
		headers[wire.HeaderRedriveSource] = e.source
		msgs[i] = message(&driver.Outgoing{Intent: driver.IntentRedrive, Queue: e.item.Target,
			Body: string(cleared), From: e.rm, Headers: headers})
		topics[i] = r.t.Topic(e.item.Target)
		rec.Pending = append(rec.Pending, e.source)
		parts, err := r.partitions(topics[i])
		if err != nil {
			return fmt.Errorf("%w: %w", babelqueue.ErrSettle, err)
		}
		for _, part := range parts {
			rec.After[part] = r.after[part]
		}
	}
	rec.Guards = r.guardList()
	rec.From = maps.Clone(r.from)
	// Carried even once every inherited source was read again: their
	// acknowledgements by this run may be forgotten too, and their copies
	// lie before this run's from.
	rec.Base = r.base
	if _, err := writeJournal(ctx, r.journal, rec); err != nil {
		return fmt.Errorf("%w: %w", babelqueue.ErrSettle, err)
	}
	r.journaled = true
	if err := r.fault("journaled"); err != nil {
		return err
	}
	ids := make([]pulsar.MessageID, len(moves))
	errs := make([]error, len(moves))
	var wg sync.WaitGroup
	used := make(map[string]pulsar.Producer)
	for i, msg := range msgs {
		p, err := r.producer(topics[i])
		if err != nil {
			errs[i] = err
			continue
		}
		used[topics[i]] = p
		wg.Add(1)
		p.SendAsync(ctx, msg, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			ids[i], errs[i] = id, err
			wg.Done()
		})
	}
	for _, p := range used {
		_ = p.FlushWithCtx(ctx)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%w: redrive %s to %s: %w", babelqueue.ErrSettle, moves[i].item.MessageID, topics[i], err)
		}
		// The sends of one producer to one partition complete in order.
		parts := r.parts[topics[i]]
		part := parts[0]
		if len(parts) > 1 {
			idx := int(ids[i].PartitionIdx())
			if idx < 0 || idx >= len(parts) {
				return fmt.Errorf("%w: redrive %s to %s: copy written to unknown partition %d", babelqueue.ErrSettle, moves[i].item.MessageID, topics[i], idx)
			}
			part = parts[idx]
		}
		r.after[part] = encodeID(ids[i])
	}
	return nil
}

// partitions returns the topics target is made of (itself when it is not
// partitioned). On first use of target in the run it creates the guard
// subscription, then notes the last message of each partition: the
// copies land after it.
func (r *redriveRun) partitions(target string) ([]string, error) {
	if parts, ok := r.parts[target]; ok {
		return parts, nil
	}
	// The guard first: it then keeps everything from before the point
	// the copies land after.
	if err := addGuard(r.c, target, r.cursor); err != nil {
		return nil, err
	}
	r.guards[target] = true
	parts, err := r.c.TopicPartitions(target)
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: partitions of %s: %w", target, err)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("pulsar: redrive: %s has no partition", target)
	}
	for _, part := range parts {
		id, err := lastMessageID(r.c, part)
		if err != nil {
			return nil, err
		}
		r.after[part] = encodeID(id)
		if _, ok := r.from[part]; !ok {
			r.from[part] = r.after[part]
		}
	}
	r.parts[target] = parts
	return parts, nil
}

// producer returns the run's producer for topic.
func (r *redriveRun) producer(topic string) (pulsar.Producer, error) {
	if p, ok := r.producers[topic]; ok {
		return p, nil
	}
	opts := pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: DefaultBatchingMaxPublishDelay}
	if r.t.cfg.producerOptions != nil {
		r.t.cfg.producerOptions(&opts)
	}
	p, err := r.c.CreateProducer(opts)
	if err != nil {
		return nil, fmt.Errorf("pulsar: redrive: create producer for %s: %w", topic, err)
	}
	r.producers[topic] = p
	return p, nil
}

// finish ends a run that settled everything with a journal record naming
// no pending batch, so that the next run scans nothing, then removes the
// guard subscriptions no record needs any more. The record names the
// sources acknowledged last (Recent): a broker killed with -9 after the
// run ended may deliver those dead letters again, and the next run then
// acknowledges them without a copy.
func (r *redriveRun) finish(ctx context.Context) error {
	if r.plan.DryRun || (!r.journaled && !r.recovered && len(r.guards) == 0) {
		return nil
	}
	rec := journalRecord{Moved: movedList(r.moved), Guards: r.guardList(), Recent: r.recentList()}
	last, err := writeJournal(ctx, r.journal, rec)
	if err != nil {
		return fmt.Errorf("%w: %w", babelqueue.ErrSettle, err)
	}
	defer func() { r.trimJournal(last) }()
	if len(r.guards) == 0 {
		return nil
	}
	var errs []error
	for _, g := range rec.Guards {
		if err := removeGuard(r.c, g, r.cursor); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(r.guards, g)
	}
	if id, err := writeJournal(ctx, r.journal, journalRecord{Moved: rec.Moved, Guards: r.guardList(), Recent: rec.Recent}); err != nil {
		errs = append(errs, err)
	} else {
		last = id
	}
	if err := errors.Join(errs...); err != nil {
		// Everything was settled; a guard left in place is removed by
		// the next run.
		r.t.warn("redrive: " + err.Error())
	}
	return nil
}

// trimJournal moves the journal's retain subscription to last, the run's
// closing record, so that the broker keeps that record and may drop the
// ones before it. A failure only costs space: it is logged.
func (r *redriveRun) trimJournal(last pulsar.MessageID) {
	if r.retain == nil || last == nil {
		return
	}
	if err := r.retain.Seek(last); err != nil {
		r.t.warn("redrive: trimming journal " + r.journalTopic() + ": " + err.Error())
	}
}

// recentList returns the sources a closing record names as acknowledged
// last: this run's, newest first, then those it inherited and did not
// read again, at most maxJournalMoved in all.
func (r *redriveRun) recentList() []string {
	out := r.recent.newest(maxJournalMoved)
	for s := range r.inherited {
		if len(out) == maxJournalMoved {
			break
		}
		if !r.recent.has(s) {
			out = append(out, s)
		}
	}
	return out
}

// guardList returns the targets holding a guard subscription, sorted.
func (r *redriveRun) guardList() []string {
	out := make([]string, 0, len(r.guards))
	for g := range r.guards {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// fault runs the test hook of the Transport, if any.
func (r *redriveRun) fault(stage string) error {
	if f := r.t.redriveFault; f != nil {
		return f(stage)
	}
	return nil
}
