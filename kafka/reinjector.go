package kafka

import (
	"context"
	"log/slog"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Reinjector carries the records of the retry topics "<topic>.retry.<n>"
// back to their work topics once their tier has elapsed (CONTRACT.md 6.4). A
// deployment that configures retry tiers must run one, in a consumer group
// of its own, or retried and delayed records are never delivered again.
//
// For every record it waits until the record timestamp + the tier, clamped
// to [now, now+tier]; writes the value and key byte for byte,
// every header but bq-delay and bq-original-topic, to the topic
// bq-original-topic names; and commits the retry offset only after the
// broker acknowledged that write (at-least-once). Partitions wait
// independently and each is carried in offset order. Retry topics should be
// created with message.timestamp.type=LogAppendTime (EnsureTopics does):
// the record timestamp is then the broker's append time, read from the
// batch headers of the Reinjector's own fetches.
// The per-partition workers, commits and hooks are described in DESIGN.md,
// "Retry tiers and the Reinjector".
type Reinjector struct {
	t         *Transport
	groupID   string
	topics    []string                 // retry topics consumed
	tierOf    map[string]time.Duration // retry topic -> tier
	indexOf   map[string]int           // retry topic -> 1-based tier index
	workOf    map[string]string        // retry topic -> work topic
	newMember func(groupID string, topics []string) (groupMember, error)
	clock     driver.Clock
	log       *slog.Logger
}

// NewReinjector builds a Reinjector for workTopics with the transport's
// tiers, writer, brokers, security and clock, in a consumer group of its own.
//
// Its group is ReinjectGroupID: the one WithReinjectGroupID names, else
// the WithGroupID group followed by ReinjectGroupSuffix ("orders-workers"
// gives "orders-workers.reinject"), so that it never shares the group of
// the App consuming the work topics on the same transport (a shared group
// would rebalance both on every start). It consumes
// RetryTopic(topic, 1) ... RetryTopic(topic, N) of every work topic. It
// returns ErrDelayUnsupported when no tiers are configured, ErrEmptyTopic
// for a missing or blank work topic, ErrNoGroupID without a group id and
// ErrNoBrokers without brokers: the Reinjector joins the group itself
// (kafka-go's ConsumerGroup), because it must see each rebalance to stop
// waiting on partitions it lost, which a Reader from WithReaderFactory
// cannot tell it. Close the transport only after Run has returned.
func (t *Transport) NewReinjector(workTopics ...string) (*Reinjector, error) {
	if len(t.cfg.tiers) == 0 {
		return nil, ErrDelayUnsupported
	}
	if len(workTopics) == 0 {
		return nil, ErrEmptyTopic
	}
	group := t.ReinjectGroupID()
	if group == "" {
		return nil, ErrNoGroupID
	}
	r := &Reinjector{
		t:       t,
		groupID: group,
		tierOf:  make(map[string]time.Duration),
		indexOf: make(map[string]int),
		workOf:  make(map[string]string),
		clock:   t.cfg.clock,
		log:     t.cfg.log(),
	}
	for _, w := range workTopics {
		if isBlank(w) {
			return nil, ErrEmptyTopic
		}
		for i, tier := range t.cfg.tiers {
			rt := RetryTopic(w, i+1)
			if _, dup := r.tierOf[rt]; dup {
				continue
			}
			r.topics = append(r.topics, rt)
			r.tierOf[rt] = tier
			r.indexOf[rt] = i + 1
			r.workOf[rt] = w
		}
	}
	switch {
	case t.cfg.groupFactory != nil:
		r.newMember = func(g string, topics []string) (groupMember, error) { return t.cfg.groupFactory(g, topics), nil }
	case len(t.cfg.brokers) > 0:
		// A re-injector always starts a new group at the oldest record: a
		// retry copy written before it first ran must still be re-injected.
		r.newMember = func(g string, topics []string) (groupMember, error) {
			return t.newKafkaMember(g, topics, kafkago.FirstOffset)
		}
	default:
		return nil, ErrNoBrokers
	}
	return r, nil
}

// GroupID returns the consumer group the Reinjector joins (see
// NewReinjector).
func (r *Reinjector) GroupID() string { return r.groupID }

// Run consumes the retry topics until ctx ends, then returns nil once every
// worker has stopped and the commits of written records were flushed.
//
// A ctx cancelled or past its deadline is a normal stop, even during the
// connection check or the group join (the stop rule of package
// babelqueue). Group errors that heal (a coordinator moving or loading, a
// rebalance, a lost connection) are logged and retried; Run returns an
// error for one that does not (authentication, authorization, an invalid
// group id), and at once, wrapping ErrConnectionRejected, when the brokers
// reject the connection settings. Records fetched but not yet written are
// left uncommitted for the next run.
func (r *Reinjector) Run(ctx context.Context) error {
	if err := r.t.checkConnection(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return wrapf(err, "re-injector: group %q", r.groupID)
	}
	writer, closeWriter := r.t.newReinjectWriter()
	defer closeWriter() // last: closing the member stops the workers first
	m, err := r.newMember(r.groupID, r.topics)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return wrapf(err, "re-injector: join group %q", r.groupID)
	}
	defer m.Close()
	defer r.startBacklog(ctx)()
	for {
		gen, err := m.Next(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && permanent(err):
			return wrapf(err, "re-injector: group %q", r.groupID)
		case err != nil:
			// The group retries by itself (with its join backoff).
			r.log.Warn("kafka: re-injector group error; retrying", "group", r.groupID, "err", err)
		default:
			r.runGeneration(gen, writer)
		}
	}
}

// runGeneration starts a worker per assigned partition, writing through
// writer, and the committer; they all stop when the generation ends.
func (r *Reinjector) runGeneration(gen groupGeneration, writer Writer) {
	c := &committer{gen: gen, pending: make(map[string]map[int]int64), dirty: make(chan struct{}, 1), log: r.log,
		every: r.t.cfg.commitInterval, clock: r.clock}
	for topic, parts := range gen.Assignments() {
		tier, ok := r.tierOf[topic]
		if !ok {
			continue
		}
		for _, p := range parts {
			w := &partitionWorker{r: r, gen: gen, topic: topic, partition: p.ID, offset: p.Offset, tier: tier,
				tierIndex: r.indexOf[topic], commit: c, writer: writer}
			c.workers.Add(1)
			gen.Start(func(ctx context.Context) {
				defer c.workers.Done()
				w.run(ctx)
			})
		}
	}
	gen.Start(c.run)
}

// partitionWorker carries one partition's records in offset order.
type partitionWorker struct {
	r         *Reinjector
	gen       groupGeneration
	topic     string
	partition int
	offset    int64
	tier      time.Duration
	tierIndex int
	commit    *committer
	writer    Writer
}

// maxReinjectBatch caps the records one re-inject write carries.
const maxReinjectBatch = 500

func (w *partitionWorker) run(ctx context.Context) {
	buffer := w.r.t.cfg.reinjectBuffer
	src := w.open(buffer)
	// The fetcher keeps at most buffer records ready for the worker, so the
	// worker can take every record that is already due without blocking.
	fetched := make(chan kafkago.Message, buffer)
	fetchDone := make(chan struct{})
	go func() {
		defer close(fetchDone)
		w.fetch(ctx, src, fetched)
	}()
	defer func() {
		<-fetchDone // ctx has ended: the fetcher returns
		src.Close()
	}()
	backoff := newBackoff()
	var head *kafkago.Message
	var headDue time.Time
	batch := make([]kafkago.Message, 0, 16)
	hooked := len(w.r.t.cfg.reinjectHooks) > 0
	var ins []kafkago.Message // with hooks: ins[i] is the retry record batch[i] carries
	var dues []time.Time      // and dues[i] its due time
	for {
		if head == nil {
			select {
			case m := <-fetched:
				head, headDue = &m, w.due(m.Time, w.r.clock.Now())
			case <-ctx.Done():
				return
			}
		}
		if !sleep(ctx, w.r.clock, headDue.Sub(w.r.clock.Now())) {
			return // revoked or stopped while waiting: not written, not committed
		}
		// The head is due; so may be the records behind it. Carry them in
		// one write, in offset order, up to the first that must wait.
		batch = append(batch[:0], w.r.reinjected(*head))
		if hooked {
			ins, dues = append(ins[:0], *head), append(dues[:0], headDue)
		}
		last := head.Offset
		head = nil
	collect:
		for len(batch) < maxReinjectBatch {
			select {
			case m := <-fetched:
				now := w.r.clock.Now()
				due := w.due(m.Time, now)
				if due.After(now) {
					head, headDue = &m, due
					break collect
				}
				batch = append(batch, w.r.reinjected(m))
				if hooked {
					ins, dues = append(ins, m), append(dues, due)
				}
				last = m.Offset
			default:
				break collect
			}
		}
		for {
			err := w.writer.WriteMessages(ctx, batch...)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			w.r.log.Warn("kafka: re-inject write failed; retrying", "from", w.topic, "partition", w.partition,
				"records", len(batch), "last_offset", last, "err", err)
			if hooked {
				now := w.r.clock.Now()
				for i := range batch {
					w.report(ctx, &batch[i], &ins[i], dues[i], now, err)
				}
			}
			if !sleep(ctx, w.r.clock, backoff.next()) {
				return
			}
		}
		backoff.reset()
		if hooked {
			written := w.r.clock.Now()
			for i := range batch {
				w.report(ctx, &batch[i], &ins[i], dues[i], written, nil)
			}
		}
		w.commit.mark(w.topic, w.partition, last+1)
	}
}

// due is when a record stamped ts becomes due, seen at now: ts + the tier,
// but at most now + the tier (a future-dated record waits one tier), as
// reinjectWait clamps it.
func (w *partitionWorker) due(ts, now time.Time) time.Time {
	if ts.After(now) {
		ts = now
	}
	return ts.Add(w.tier)
}

// reinjectFetchPause is the most fetch waits after an error. kafka-go's
// partition reader paces its own reconnections (ReadBackoffMax) and queues
// one error per failed attempt; a longer pause here would drain that queue
// slower than it fills, and keep the partition stalled for minutes after
// its new leader is up.
const reinjectFetchPause = 250 * time.Millisecond

// fetchErrorLogEvery bounds how often fetch logs a run of errors.
const fetchErrorLogEvery = 5 * time.Second

// fetch reads src into out until ctx ends.
func (w *partitionWorker) fetch(ctx context.Context, src partitionReader, out chan<- kafkago.Message) {
	backoff := newBackoff()
	var failed int
	var logged time.Time
	for {
		m, err := src.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failed++
			if now := w.r.clock.Now(); failed == 1 || now.Sub(logged) >= fetchErrorLogEvery {
				w.r.log.Warn("kafka: re-injector fetch failed", "topic", w.topic, "partition", w.partition, "failures", failed, "err", err)
				logged = now
			}
			if !sleep(ctx, w.r.clock, min(backoff.next(), reinjectFetchPause)) {
				return
			}
			continue
		}
		if failed > 0 {
			w.r.log.Info("kafka: re-injector fetch recovered", "topic", w.topic, "partition", w.partition, "failures", failed)
			failed = 0
		}
		backoff.reset()
		select {
		case out <- m:
		case <-ctx.Done():
			return
		}
	}
}

// reinjected builds the work-topic copy of a retry-topic record: value and
// key byte for byte, every header but bq-delay and bq-original-topic.
func (r *Reinjector) reinjected(m kafkago.Message) kafkago.Message {
	dest, ok := lastHeader(m.Headers, wire.HeaderOriginalTopic)
	if !ok || isBlank(dest) {
		dest = r.workOf[m.Topic]
	}
	hs := make([]kafkago.Header, 0, len(m.Headers))
	for _, h := range m.Headers {
		if !isTierHeader(h.Key) {
			hs = append(hs, h)
		}
	}
	return kafkago.Message{Topic: dest, Key: m.Key, Value: m.Value, Headers: hs, Time: r.clock.Now()}
}

// committer commits the offsets of written records, at most once per
// every (WithCommitInterval; with 0, as soon as the commit before has
// returned), coalescing what was written meanwhile, and flushes them when
// the generation ends.
type committer struct {
	gen     groupGeneration
	log     *slog.Logger
	every   time.Duration
	clock   driver.Clock
	workers sync.WaitGroup // the final flush waits for the workers' last writes
	mu      sync.Mutex
	pending map[string]map[int]int64
	dirty   chan struct{}
}

// mark records that every record of topic/partition before next was
// written.
func (c *committer) mark(topic string, partition int, next int64) {
	c.mu.Lock()
	ps := c.pending[topic]
	if ps == nil {
		ps = make(map[int]int64)
		c.pending[topic] = ps
	}
	if next > ps[partition] {
		ps[partition] = next
	}
	c.mu.Unlock()
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

func (c *committer) run(ctx context.Context) {
	for {
		select {
		case <-c.dirty:
			c.flush()
			// What the workers write meanwhile waits for one commit;
			// when the generation ends first, the final flush commits it.
			sleep(ctx, c.clock, c.every)
		case <-ctx.Done():
			c.workers.Wait()
			c.flush()
			return
		}
	}
}

func (c *committer) flush() {
	c.mu.Lock()
	batch := c.pending
	c.pending = make(map[string]map[int]int64)
	c.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := c.gen.CommitOffsets(batch); err != nil {
		c.log.Warn("kafka: re-injector commit failed; the records may be carried again", "err", err)
		c.mu.Lock()
		for topic, ps := range batch {
			for p, off := range ps {
				cur := c.pending[topic]
				if cur == nil {
					cur = make(map[int]int64)
					c.pending[topic] = cur
				}
				if off > cur[p] {
					cur[p] = off
				}
			}
		}
		c.mu.Unlock()
	}
}

// sleep waits d on clock; it reports false when ctx ended first.
func sleep(ctx context.Context, clock driver.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := clock.NewTimer(d)
	select {
	case <-timer.C():
		return ctx.Err() == nil
	case <-ctx.Done():
		timer.Stop()
		return false
	}
}

// backoff doubles from 100ms up to 5s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{} }

func (b *backoff) next() time.Duration {
	switch {
	case b.d == 0:
		b.d = 100 * time.Millisecond
	case b.d < 5*time.Second:
		b.d = min(2*b.d, 5*time.Second)
	}
	return b.d
}

func (b *backoff) reset() { b.d = 0 }
