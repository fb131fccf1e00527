package kafka

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// predecodeBacklog is the number of records waiting for Pop from which the
// prefetching goroutine also decodes the bodies ahead (see run).
const predecodeBacklog = prefetchBuffer / 4

// prefetchBuffer bounds the records a prefetchReader holds ahead of Pop
// (besides the batch Pop is working through, which is at most as long).
const prefetchBuffer = 256

// prefetchReader is the Reader the transport puts in front of each group
// reader it builds: a goroutine fetches ahead into a bounded buffer and
// prepares each delivery, and Receive takes the buffer a batch at a time.
// Commits go through a commitBatcher when the group reader commits
// asynchronously. What is buffered when it closes was never delivered nor
// committed, and comes again to the partition's next reader (DESIGN.md,
// section 4).
type prefetchReader struct {
	r       groupReader
	commits *commitBatcher // nil when the group reader commits synchronously
	t       *Transport
	queue   string
	ctx     context.Context // the goroutine's; cancelled by Close
	cancel  context.CancelFunc
	start   sync.Once     // starts the goroutine at the first pop, or marks it ended at Close
	done    chan struct{} // closed when the goroutine returned (or Close came first)

	mu    sync.Mutex
	buf   []fetched     // fetched, not yet taken by Pop
	full  bool          // the goroutine waits for room
	ready chan struct{} // 1-buffered: buf went from empty to not empty, or the goroutine ended
	room  chan struct{} // 1-buffered: Pop emptied a full buf

	pending atomic.Int64 // fetched and not yet taken by Pop

	// deferHeaders is set once the queue is read with its headers
	// deferred (Receive); until then the goroutine builds each delivery's
	// header map ahead, off Pop's side.
	deferHeaders atomic.Bool

	// Pop's side, touched only by the goroutine calling Pop.
	cur  []fetched
	next int
}

// groupReader is the reader a prefetchReader reads ahead of: a
// *kafkago.Reader.
type groupReader interface {
	Reader
	io.Closer
}

// fetched is one result of the group reader: a delivery or an error.
type fetched struct {
	d   *delivery
	err error
}

var _ Reader = (*prefetchReader)(nil)

// newPrefetchReader starts prefetching the records of r for queue.
func newPrefetchReader(t *Transport, queue string, r groupReader) *prefetchReader {
	ctx, cancel := context.WithCancel(context.Background())
	p := &prefetchReader{
		r: r, t: t, queue: queue, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		buf:   make([]fetched, 0, prefetchBuffer),
		ready: make(chan struct{}, 1), room: make(chan struct{}, 1),
	}
	if t.cfg.commitInterval > 0 {
		p.commits = newCommitBatcher(r, t.cfg.log())
	}
	return p
}

// begin starts the prefetching goroutine at the first pop, which tells
// whether the queue's headers are deferred before any record is read
// ahead, and records a later pop's deferral.
func (p *prefetchReader) begin(deferHeaders bool) {
	if deferHeaders && !p.deferHeaders.Load() {
		p.deferHeaders.Store(true)
	}
	p.start.Do(func() { go p.run(p.ctx) })
}

// fetchErrorPause spaces the fetches after an error, so that a group
// reader reporting the same error again does not spin the goroutine.
const fetchErrorPause = 100 * time.Millisecond

// run is the prefetching goroutine. It ends when ctx ends or the group
// reader is closed.
func (p *prefetchReader) run(ctx context.Context) {
	defer func() {
		close(p.done)
		signal(p.ready)
	}()
	for {
		m, err := p.r.FetchMessage(ctx)
		if ctx.Err() != nil {
			return
		}
		var f fetched
		if err != nil {
			f.err = err
		} else {
			f.d = p.t.newDelivery(p.queue, m)
			// Decode ahead only while Pop's side has a backlog: then the
			// consume loop is the slower of the two goroutines, and this
			// one takes work off it. Otherwise this goroutine is the
			// slower one, and the App decodes the body itself (once, as
			// always).
			prepare(f.d, p.pending.Load() >= predecodeBacklog)
			if !p.deferHeaders.Load() {
				f.d.rm.FillHeaders()
			}
		}
		if !p.put(ctx, f) {
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return // the group reader was closed
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(fetchErrorPause):
			}
		}
	}
}

// put appends f to the buffer, waiting for room while it is full. It
// returns false when ctx ended first.
func (p *prefetchReader) put(ctx context.Context, f fetched) bool {
	for {
		p.mu.Lock()
		if len(p.buf) < prefetchBuffer {
			wasEmpty := len(p.buf) == 0
			p.buf = append(p.buf, f)
			p.mu.Unlock()
			p.pending.Add(1)
			if wasEmpty {
				signal(p.ready)
			}
			return true
		}
		p.full = true
		p.mu.Unlock()
		select {
		case <-p.room:
		case <-ctx.Done():
			return false
		}
	}
}

// signal wakes the waiter of ch, if any, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// take returns the next fetched result without waiting, and false when
// none is buffered. Only Pop's goroutine calls it.
func (p *prefetchReader) take() (fetched, bool) {
	if p.next == len(p.cur) {
		// Hand the drained batch back as the next buffer, and take the
		// buffer as the batch to work through.
		clear(p.cur)
		p.mu.Lock()
		p.cur, p.buf = p.buf, p.cur[:0]
		wasFull := p.full
		p.full = false
		p.mu.Unlock()
		p.next = 0
		if wasFull {
			signal(p.room)
		}
		if len(p.cur) == 0 {
			return fetched{}, false
		}
	}
	f := p.cur[p.next]
	p.cur[p.next] = fetched{}
	p.next++
	p.pending.Add(-1)
	return f, true
}

// fetch returns the next fetched result, waiting until ctx ends. It
// returns io.EOF once the reader was closed and everything it fetched
// before was taken.
func (p *prefetchReader) fetch(ctx context.Context) (fetched, error) {
	for {
		if f, ok := p.take(); ok {
			return f, nil
		}
		select {
		case <-p.done:
			// The goroutine ended; what it put before is in buf.
			if f, ok := p.take(); ok {
				return f, nil
			}
			return fetched{}, io.EOF
		default:
		}
		select {
		case <-p.ready:
		case <-ctx.Done():
			return fetched{}, ctx.Err()
		}
	}
}

// FetchMessage returns the next prefetched record (Reader).
func (p *prefetchReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	p.begin(false)
	f, err := p.fetch(ctx)
	if err != nil {
		return kafkago.Message{}, err
	}
	if f.err != nil {
		return kafkago.Message{}, f.err
	}
	return f.d.msg, nil
}

// CommitMessages commits through the group reader, gathered by the
// commitBatcher when the group reader commits asynchronously.
func (p *prefetchReader) CommitMessages(ctx context.Context, msgs ...kafkago.Message) error {
	if p.commits != nil {
		return p.commits.commit(ctx, msgs)
	}
	return p.r.CommitMessages(ctx, msgs...)
}

// Close stops the prefetching goroutine, drops what it buffered, hands
// the gathered commits to the group reader and closes it, which flushes
// the pending commits.
func (p *prefetchReader) Close() error {
	p.cancel()
	p.start.Do(func() { close(p.done) }) // never started: nothing to wait for
	<-p.done
	p.mu.Lock()
	clear(p.buf)
	p.buf = p.buf[:0]
	p.mu.Unlock()
	var err error
	if p.commits != nil {
		err = p.commits.close()
	}
	return errors.Join(err, p.r.Close())
}
