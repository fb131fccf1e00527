package kafka

import (
	"context"
	"errors"
	"io"
	"sync"

	kafkago "github.com/segmentio/kafka-go"
)

// fakeLog is an in-memory set of topic partitions with offsets.
type fakeLog struct {
	mu      sync.Mutex
	parts   map[string][][]kafkago.Message
	changed chan struct{}
}

func newFakeLog() *fakeLog {
	return &fakeLog{parts: make(map[string][][]kafkago.Message), changed: make(chan struct{})}
}

func (l *fakeLog) create(topic string, partitions int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts[topic] = make([][]kafkago.Message, partitions)
}

// append adds m to topic/partition and returns it with its offset.
func (l *fakeLog) append(topic string, partition int, m kafkago.Message) kafkago.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.parts[topic]
	if ps == nil {
		ps = make([][]kafkago.Message, partition+1)
	}
	for len(ps) <= partition {
		ps = append(ps, nil)
	}
	m.Topic, m.Partition, m.Offset = topic, partition, int64(len(ps[partition]))
	ps[partition] = append(ps[partition], m)
	l.parts[topic] = ps
	close(l.changed)
	l.changed = make(chan struct{})
	return m
}

func (l *fakeLog) records(topic string) []kafkago.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []kafkago.Message
	for _, p := range l.parts[topic] {
		out = append(out, p...)
	}
	return out
}

// at returns the record at offset, waiting for it until ctx ends.
func (l *fakeLog) at(ctx context.Context, topic string, partition int, offset int64) (kafkago.Message, error) {
	for {
		l.mu.Lock()
		ps := l.parts[topic]
		if partition < len(ps) && offset < int64(len(ps[partition])) {
			m := ps[partition][offset]
			l.mu.Unlock()
			return m, nil
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return kafkago.Message{}, ctx.Err()
		}
	}
}

// fakeWriter writes into a fakeLog, placing keyed records with murmur2.
type fakeWriter struct {
	log   *fakeLog
	mu    sync.Mutex
	fail  func(msgs []kafkago.Message) error // nil: every write succeeds
	rr    int
	calls []int // records per successful WriteMessages call
}

func (w *fakeWriter) WriteMessages(ctx context.Context, msgs ...kafkago.Message) error {
	w.mu.Lock()
	fail := w.fail
	w.mu.Unlock()
	if fail != nil {
		if err := fail(msgs); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.calls = append(w.calls, len(msgs))
	w.mu.Unlock()
	for _, m := range msgs {
		n := 1
		w.log.mu.Lock()
		if ps := w.log.parts[m.Topic]; len(ps) > 0 {
			n = len(ps)
		}
		w.log.mu.Unlock()
		p := 0
		if m.Key != nil {
			p = PartitionForKey(m.Key, n)
		} else {
			w.mu.Lock()
			p = w.rr % n
			w.rr++
			w.mu.Unlock()
		}
		w.log.append(m.Topic, p, m)
	}
	return nil
}

func (w *fakeWriter) setFail(f func(msgs []kafkago.Message) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail = f
}

// fakeReader is a group reader of one topic over a fakeLog: it reads every
// partition from the group's committed offsets, and CommitMessages stores
// the next offset like a coordinator.
type fakeReader struct {
	log     *fakeLog
	group   *fakeOffsets
	topic   string
	mu      sync.Mutex
	pos     map[int]int64
	closed  bool
	commits []kafkago.Message
}

type fakeOffsets struct {
	mu        sync.Mutex
	committed map[string]map[int]int64
}

func newFakeOffsets() *fakeOffsets { return &fakeOffsets{committed: make(map[string]map[int]int64)} }

func (o *fakeOffsets) get(topic string, p int) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.committed[topic][p]
}

func (o *fakeOffsets) set(topic string, p int, next int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.committed[topic] == nil {
		o.committed[topic] = make(map[int]int64)
	}
	o.committed[topic][p] = next
}

func newFakeReader(log *fakeLog, group *fakeOffsets, topic string) *fakeReader {
	return &fakeReader{log: log, group: group, topic: topic, pos: make(map[int]int64)}
}

func (r *fakeReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return kafkago.Message{}, io.EOF
		}
		r.log.mu.Lock()
		ps := r.log.parts[r.topic]
		ch := r.log.changed
		for p := range ps {
			off, ok := r.pos[p]
			if !ok {
				off = r.group.get(r.topic, p)
			}
			if off < int64(len(ps[p])) {
				m := ps[p][off]
				r.pos[p] = off + 1
				r.log.mu.Unlock()
				r.mu.Unlock()
				return m, nil
			}
		}
		r.log.mu.Unlock()
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return kafkago.Message{}, ctx.Err()
		}
	}
}

func (r *fakeReader) CommitMessages(_ context.Context, msgs ...kafkago.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return io.ErrClosedPipe
	}
	for _, m := range msgs {
		r.commits = append(r.commits, m)
		r.group.set(m.Topic, m.Partition, m.Offset+1)
	}
	return nil
}

func (r *fakeReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// fakeGroup hands out the generations a test pushes.
type fakeGroup struct {
	gens   chan *fakeGen
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	last   *fakeGen
}

func newFakeGroup() *fakeGroup {
	return &fakeGroup{gens: make(chan *fakeGen, 4), closed: make(chan struct{})}
}

func (g *fakeGroup) Next(ctx context.Context) (groupGeneration, error) {
	select {
	case gen := <-g.gens:
		g.mu.Lock()
		g.last = gen
		g.mu.Unlock()
		return gen, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.closed:
		return nil, errors.New("fake group closed")
	}
}

// Close leaves the group: like kafka-go, it ends the current generation
// and waits for its functions.
func (g *fakeGroup) Close() error {
	g.once.Do(func() { close(g.closed) })
	g.mu.Lock()
	last := g.last
	g.mu.Unlock()
	if last != nil {
		last.End()
	}
	return nil
}

// fakeGen is one generation: its assignments start at the committed
// offsets, its functions stop when End is called.
type fakeGen struct {
	log     *fakeLog
	offsets *fakeOffsets
	assign  map[string][]kafkago.PartitionAssignment
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	buffers []int

	mu        sync.Mutex
	opened    []*fakePartition
	commitErr error
	commitLog []map[string]map[int]int64
}

func newFakeGen(log *fakeLog, offsets *fakeOffsets, topics map[string][]int) *fakeGen {
	ctx, cancel := context.WithCancel(context.Background())
	g := &fakeGen{log: log, offsets: offsets, assign: make(map[string][]kafkago.PartitionAssignment), ctx: ctx, cancel: cancel}
	for topic, parts := range topics {
		for _, p := range parts {
			g.assign[topic] = append(g.assign[topic], kafkago.PartitionAssignment{ID: p, Offset: offsets.get(topic, p)})
		}
	}
	return g
}

func (g *fakeGen) Assignments() map[string][]kafkago.PartitionAssignment { return g.assign }

func (g *fakeGen) Start(fn func(ctx context.Context)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn(g.ctx)
	}()
}

func (g *fakeGen) CommitOffsets(offsets map[string]map[int]int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.commitErr != nil {
		return g.commitErr
	}
	cp := make(map[string]map[int]int64)
	for t, ps := range offsets {
		cp[t] = make(map[int]int64)
		for p, o := range ps {
			cp[t][p] = o
			g.offsets.set(t, p, o)
		}
	}
	g.commitLog = append(g.commitLog, cp)
	return nil
}

func (g *fakeGen) OpenPartition(topic string, partition int, offset int64, buffer int) partitionReader {
	g.mu.Lock()
	g.buffers = append(g.buffers, buffer)
	g.mu.Unlock()
	if offset < 0 {
		offset = 0
	}
	fp := &fakePartition{log: g.log, topic: topic, partition: partition, next: offset}
	g.mu.Lock()
	g.opened = append(g.opened, fp)
	g.mu.Unlock()
	return fp
}

// fetchedUpTo reports whether every opened reader of topic/partition has
// handed out records up to offset next.
func (g *fakeGen) fetchedUpTo(topic string, partition int, next int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	found := false
	for _, p := range g.opened {
		if p.topic == topic && p.partition == partition {
			found = true
			p.mu.Lock()
			n := p.next
			p.mu.Unlock()
			if n < next {
				return false
			}
		}
	}
	return found
}

// End revokes every partition and waits for the generation's functions.
func (g *fakeGen) End() {
	g.cancel()
	g.wg.Wait()
}

type fakePartition struct {
	log       *fakeLog
	topic     string
	partition int
	mu        sync.Mutex
	next      int64
}

func (p *fakePartition) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	p.mu.Lock()
	next := p.next
	p.mu.Unlock()
	m, err := p.log.at(ctx, p.topic, p.partition, next)
	if err != nil {
		return m, err
	}
	p.mu.Lock()
	p.next++
	p.mu.Unlock()
	return m, nil
}

func (p *fakePartition) Close() error { return nil }
