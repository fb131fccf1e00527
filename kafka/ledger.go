package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	kafkago "github.com/segmentio/kafka-go"
)

// consumer is the reader of one queue together with the ledger of the
// deliveries it handed out. Receive, Ack and HandBack may be called from
// several goroutines and settle deliveries in any order: the ledger
// commits, per partition, only the end of the contiguous prefix of handed
// out offsets that are all settled, so a slow or unacknowledged delivery
// holds back the commit of its partition and a handed-back one is never
// passed (see DESIGN.md, "Acknowledgement ledger").
type consumer struct {
	queue  string
	r      Reader        // nil for a member reader
	member *memberReader // the group member reading queue, when built from the brokers (member.go)

	// fetchMu serialises the fetches of concurrent Receive calls: a Kafka
	// reader hands its records out one at a time, in partition order.
	fetchMu sync.Mutex

	mu      sync.Mutex
	parts   map[partitionKey]*partitionLedger
	last    *partitionLedger // the ledger of the latest hand-out
	rewound bool             // HandBack closed the reader: nothing more is committed

	// commitMu orders the commits handed to the reader, so that the
	// committed offset of a partition never moves backwards.
	commitMu sync.Mutex
}

type partitionKey struct {
	topic     string
	partition int
}

// partitionLedger is the state of one partition: the offsets handed out
// and not yet passed by the commit point, in offset order.
type partitionLedger struct {
	key       partitionKey
	out       []ledgerEntry
	settled   int64 // the end of the settled prefix: the highest offset that may be committed; -1 none
	committed int64 // the highest offset handed to the reader's CommitMessages; -1 none

	scratch [1]kafkago.Message // the commit handed to the reader, under commitMu
}

type ledgerEntry struct {
	offset  int64
	settled bool
}

// errRewound is the cause of an Ack that came after a HandBack of the same
// reader, or after it was closed: the record will be delivered again. It
// wraps io.ErrClosedPipe, as the group reader's own refusal does.
var errRewound = fmt.Errorf("the reader was rewound or closed; the record will be delivered again: %w", io.ErrClosedPipe)

func newConsumer(queue string, r Reader) *consumer {
	return &consumer{queue: queue, r: r, parts: make(map[partitionKey]*partitionLedger)}
}

// handOut records that d is handed out, before anyone can settle it.
func (c *consumer) handOut(d *delivery) {
	k := partitionKey{d.msg.Topic, d.msg.Partition}
	c.mu.Lock()
	p := c.last
	if p == nil || p.key != k {
		if p = c.parts[k]; p == nil {
			p = &partitionLedger{key: k, settled: -1, committed: -1}
			c.parts[k] = p
		}
		c.last = p
	}
	off := d.msg.Offset
	if n := len(p.out); n == 0 || p.out[n-1].offset <= off {
		p.out = append(p.out, ledgerEntry{offset: off})
	} else {
		// A partition read again from its committed offset (a rebalance
		// gave it back): keep the entries in offset order.
		i := sort.Search(n, func(i int) bool { return p.out[i].offset > off })
		p.out = append(p.out, ledgerEntry{})
		copy(p.out[i+1:], p.out[i:])
		p.out[i] = ledgerEntry{offset: off}
	}
	c.mu.Unlock()
	d.cons, d.part = c, p
}

// settle marks d settled and reports whether the settled prefix of its
// partition now reaches past what was committed.
func (c *consumer) settle(d *delivery) (advanced bool, err error) {
	p, off := d.part, d.msg.Offset
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rewound {
		return false, errRewound
	}
	i := sort.Search(len(p.out), func(i int) bool { return p.out[i].offset >= off })
	for i < len(p.out) && p.out[i].offset == off && p.out[i].settled {
		i++
	}
	if i == len(p.out) || p.out[i].offset != off {
		return false, errors.New("the record is not reserved (already settled)")
	}
	p.out[i].settled = true
	n := 0
	for n < len(p.out) && p.out[n].settled {
		n++
	}
	if n < len(p.out) {
		// A settled copy of the first unsettled offset (a replayed
		// partition) waits for it.
		for stop := p.out[n].offset; n > 0 && p.out[n-1].offset == stop; {
			n--
		}
	}
	if n > 0 {
		p.settled = max(p.settled, p.out[n-1].offset)
		clear(p.out[:n])
		if n == len(p.out) {
			p.out = p.out[:0] // keep the array: the next hand-out needs no allocation
		} else {
			p.out = p.out[n:]
		}
	}
	return p.settled > p.committed, nil
}

// commit hands the end of p's settled prefix to the reader, unless an
// earlier commit already covered it.
func (c *consumer) commit(ctx context.Context, p *partitionLedger) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.mu.Lock()
	target, done, rewound := p.settled, p.committed, c.rewound
	c.mu.Unlock()
	if rewound {
		return errRewound
	}
	if target <= done {
		return nil
	}
	p.scratch[0] = kafkago.Message{Topic: p.key.topic, Partition: p.key.partition, Offset: target}
	err := c.r.CommitMessages(ctx, p.scratch[:]...)
	p.scratch[0] = kafkago.Message{}
	if err != nil {
		if errors.Is(err, io.ErrClosedPipe) {
			return errRewound
		}
		return err
	}
	c.mu.Lock()
	p.committed = max(p.committed, target)
	c.mu.Unlock()
	return nil
}

// ack settles d and commits what its settlement lets through.
func (c *consumer) ack(ctx context.Context, d *delivery) error {
	advanced, err := c.settle(d)
	if err != nil || !advanced {
		return err
	}
	return c.commit(ctx, d.part)
}

// rewind stops every later commit of the reader: the caller then closes
// it, which flushes the commits already handed over (all of them below
// the handed-back delivery, which was never settled).
func (c *consumer) rewind() {
	c.mu.Lock()
	c.rewound = true
	c.mu.Unlock()
}
