//go:build integration

package kafka

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/wire"
	kafkago "github.com/segmentio/kafka-go"
)

// committedOffsets reads the committed next offset of each of partitions
// of topic for group from the broker (-1 for none).
func committedOffsets(t testing.TB, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	res, err := adminClient(t).OffsetFetch(bgCtx(t, 10*time.Second), &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	out := make(map[int]int64, partitions)
	for _, p := range res.Topics[topic] {
		out[p.Partition] = p.CommittedOffset
	}
	return out
}

// publishN writes n records to topic, body i naming its sequence number
// in the trace id, spread over the partitions.
func publishN(t *testing.T, tr *Transport, topic string, n int) {
	t.Helper()
	ctx := bgCtx(t, time.Minute)
	bodies := make([]string, n)
	for i := range bodies {
		env, err := babelqueue.Make("urn:babel:orders:created", map[string]any{"seq": i}, babelqueue.WithQueue(topic),
			babelqueue.WithTraceID(fmt.Sprintf("seq-%d", i)), babelqueue.WithCreatedAt(time.UnixMilli(createdMs)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := env.Encode()
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = string(b)
	}
	for i := 0; i < n; i += 500 {
		if err := tr.PublishBatch(ctx, topic, bodies[i:min(i+500, n)]...); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIntegrationPublishKeyedKeepsKeysByteExact(t *testing.T) {
	topic, group := uniq("it-keyed"), uniq("g")
	tr := itTransport(t, WithGroupID(group))
	ensure(t, tr, topic, 3)
	ctx := bgCtx(t, time.Minute)
	body := envelope(t, 0)
	keys := map[string][]byte{"nil": nil, "empty": {}, "set": []byte("order-42"), "binary": {0, 0xff, 0x10, 0}}
	for name, k := range keys {
		if err := tr.PublishKeyed(ctx, topic, k, strings.Replace(body, "trace-1", name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	// The wire, read with the protocol client, which keeps a null key
	// apart from an empty one.
	onWire := map[string][]byte{}
	wirePart := map[string]int{}
	for p := range 3 {
		res, err := adminClient(t).Fetch(ctx, &kafkago.FetchRequest{Addr: kafkago.TCP(brokerList(t)[0]), Topic: topic, Partition: p,
			Offset: 0, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		for {
			r, err := res.Records.ReadRecord()
			if err != nil {
				break
			}
			var k []byte
			if r.Key != nil {
				if k, err = kafkago.ReadAll(r.Key); err != nil {
					t.Fatal(err)
				}
				if k == nil {
					k = []byte{}
				}
			}
			for _, h := range r.Headers {
				if h.Key == wire.HeaderTraceID {
					onWire[string(h.Value)] = k
					wirePart[string(h.Value)] = p
				}
			}
		}
	}
	for name, k := range keys {
		w, ok := onWire[name]
		if !ok {
			t.Fatalf("record %s not found on the broker", name)
		}
		if (k == nil) != (w == nil) || !bytes.Equal(k, w) {
			t.Errorf("%s key: wrote %#v, the broker holds %#v", name, k, w)
		}
		if k != nil && wirePart[name] != PartitionForKey(k, 3) {
			t.Errorf("%s key on partition %d, want murmur2's %d", name, wirePart[name], PartitionForKey(k, 3))
		}
	}
	// Consumed, every key comes back byte for byte, an empty key empty and
	// a null key nil.
	got := map[string]kafkago.Message{}
	for len(got) < len(keys) {
		m, err := tr.Receive(ctx, topic, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			continue
		}
		d, _ := recordOf(m)
		tid, _ := m.Header(wire.HeaderTraceID)
		got[tid] = d.msg
		if err := tr.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for name, k := range keys {
		if m := got[name]; !bytes.Equal(k, m.Key) || (k == nil) != (m.Key == nil) {
			t.Errorf("%s key consumed as %#v, wrote %#v", name, m.Key, k)
		}
	}
}

// A record held in its handler (never settled) keeps its partition's
// committed offset at or below it, while the other partitions advance.
func TestIntegrationHeldRecordHoldsOnlyItsPartition(t *testing.T) {
	topic, group := uniq("it-held"), uniq("g")
	const parts, n = 6, 1200
	tr := itTransport(t, WithGroupID(group), WithCommitInterval(20*time.Millisecond))
	ensure(t, tr, topic, parts)
	publishN(t, tr, topic, n)
	ctx := bgCtx(t, 2*time.Minute)
	var held atomic.Pointer[kafkago.Message]
	var handled atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				m, err := tr.Receive(ctx, topic, 200*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if m == nil {
					continue
				}
				d, _ := recordOf(m)
				if d.msg.Partition == 2 && d.msg.Offset == 10 {
					cp := d.msg
					held.Store(&cp)
					handled.Add(1)
					continue // never settled
				}
				if err := tr.Ack(ctx, m); err != nil {
					t.Error(err)
					return
				}
				handled.Add(1)
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	var off map[int]int64
	for {
		off = committedOffsets(t, group, topic, parts)
		var others int64
		for p, o := range off {
			if p != 2 {
				others += o
			}
		}
		if held.Load() != nil && handled.Load() >= n-200 && others+off[2] >= n-200-int64(n/parts) && others > 0 {
			// every other partition drained?
			ends := lastOffsets(t, topic, parts)
			done := true
			for p := range parts {
				if p != 2 && off[p] != ends[p] {
					done = false
				}
			}
			if done {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: committed %v, handled %d", off, handled.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if off[2] > 10 {
		t.Fatalf("partition 2 committed at %d past the held record 2@10", off[2])
	}
	t.Logf("committed with 2@10 held: %v", off)
}

// lastOffsets returns the end offset of each partition of topic.
func lastOffsets(t testing.TB, topic string, parts int) map[int]int64 {
	t.Helper()
	req := map[string][]kafkago.OffsetRequest{}
	for p := range parts {
		req[topic] = append(req[topic], kafkago.LastOffsetOf(p))
	}
	res, err := adminClient(t).ListOffsets(bgCtx(t, 10*time.Second), &kafkago.ListOffsetsRequest{Topics: req})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		out[p.Partition] = p.LastOffset
	}
	return out
}

// memberLog records, per member, the assignment events and hand-outs in
// the order the members' locks saw them.
type memberLog struct {
	mu     sync.Mutex
	owned  map[string]map[int]bool // member -> partitions it may hand out
	bad    []string
	out    map[string]int // partition@offset -> hand-outs
	outs   int
	resume map[string]time.Time // member -> time of its last assignment
}

func (l *memberLog) hook(member string) func(queue, ev string, p int, off int64) {
	return func(_ string, ev string, p int, off int64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.owned[member] == nil {
			l.owned[member] = map[int]bool{}
		}
		switch ev {
		case "assign":
			l.owned[member][p] = true
			l.resume[member] = time.Now()
		case "revoke":
			l.owned[member][p] = false
		case "out":
			if !l.owned[member][p] {
				l.bad = append(l.bad, fmt.Sprintf("%s handed out %d@%d after its revocation", member, p, off))
			}
			l.out[fmt.Sprintf("%d@%d", p, off)]++
			l.outs++
		}
	}
}

// ownedBy returns how many partitions member may hand out now.
func (l *memberLog) ownedBy(member string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, on := range l.owned[member] {
		if on {
			n++
		}
	}
	return n
}

// runConsumer receives and acknowledges on tr from workers goroutines
// until ctx ends, with a handler latency of work.
func runConsumer(ctx context.Context, t *testing.T, tr *Transport, topic string, workers int, work time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				m, err := tr.Receive(ctx, topic, 200*time.Millisecond)
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				if m == nil {
					continue
				}
				time.Sleep(work)
				if err := tr.Ack(context.Background(), m); err != nil && !errors.Is(err, ErrRevoked) && !errors.Is(err, ErrClosed) {
					t.Error(err)
				}
			}
		}()
	}
	return &wg
}

// A second and a third member join and leave while the first consumes:
// no member hands out a record of a partition after its revocation, the
// committed offsets never go down, and duplicates stay within what was in
// flight at the rebalances.
func TestIntegrationMembersJoiningAndLeaving(t *testing.T) {
	topic, group := uniq("it-churn"), uniq("g")
	const parts, n, workers = 6, 6000, 8
	pub := itTransport(t)
	ensure(t, pub, topic, parts)
	publishN(t, pub, topic, n)
	log := &memberLog{owned: map[string]map[int]bool{}, out: map[string]int{}, resume: map[string]time.Time{}}
	opts := func(name string) []Option {
		return []Option{WithGroupID(group), WithSessionTimeout(6 * time.Second), WithRevokeTimeout(2 * time.Second),
			WithCommitInterval(50 * time.Millisecond), func(c *config) { c.memberEvent = log.hook(name) }}
	}
	ctx := bgCtx(t, 3*time.Minute)
	// The committed offsets, polled from the broker, never go down.
	pollCtx, stopPoll := context.WithCancel(ctx)
	var pollWG sync.WaitGroup
	var downs []string
	pollWG.Add(1)
	go func() {
		defer pollWG.Done()
		last := map[int]int64{}
		for pollCtx.Err() == nil {
			for p, o := range committedOffsets(t, group, topic, parts) {
				if prev, ok := last[p]; ok && o < prev {
					downs = append(downs, fmt.Sprintf("partition %d: %d -> %d", p, prev, o))
				}
				if o >= 0 {
					last[p] = max(last[p], o)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	a := itTransport(t, opts("a")...)
	aCtx, stopA := context.WithCancel(ctx)
	aWG := runConsumer(aCtx, t, a, topic, workers, 20*time.Millisecond)
	time.Sleep(2 * time.Second)
	rebalances := 0
	for _, name := range []string{"b", "c"} {
		tr, err := New(append([]Option{WithBrokers(brokerList(t)...)}, opts(name)...)...)
		if err != nil {
			t.Fatal(err)
		}
		cctx, stop := context.WithCancel(ctx)
		wg := runConsumer(cctx, t, tr, topic, workers, 20*time.Millisecond)
		rebalances++ // join
		time.Sleep(4 * time.Second)
		stop()
		wg.Wait()
		if err := tr.Close(); err != nil { // leaves at once
			t.Fatal(err)
		}
		rebalances++ // leave
		time.Sleep(time.Second)
	}
	// a drains the rest.
	deadline := time.Now().Add(90 * time.Second)
	for {
		log.mu.Lock()
		distinct := len(log.out)
		log.mu.Unlock()
		if distinct == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d records handed out", distinct, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopA()
	aWG.Wait()
	_ = a.Close()
	stopPoll()
	pollWG.Wait()
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, b := range log.bad {
		t.Error(b)
	}
	for _, d := range downs {
		t.Errorf("committed offset went down: %s", d)
	}
	dups := log.outs - n
	bound := rebalances * 3 * workers // at most each member's in-flight per rebalance
	fmt.Printf("bench: kafka-churn-duplicates value=%d records=%d rebalances=%d inflight-bound=%d\n", dups, n, rebalances, bound)
	if dups > bound {
		t.Fatalf("%d duplicate hand-outs, more than the in-flight bound %d", dups, bound)
	}
	off := committedOffsets(t, group, topic, parts)
	ends := lastOffsets(t, topic, parts)
	for p := range parts {
		if off[p] != ends[p] {
			t.Errorf("partition %d committed %d, end %d", p, off[p], ends[p])
		}
	}
}

// TestIntegrationKilledMemberChild is the consumer child of
// TestIntegrationKilledMemberLosesNothing: it prints each record after
// its commit, until it is killed.
func TestIntegrationKilledMemberChild(t *testing.T) {
	topic, group := os.Getenv("BQ_KILL_TOPIC"), os.Getenv("BQ_KILL_GROUP")
	if topic == "" {
		t.Skip("the child of TestIntegrationKilledMemberLosesNothing")
	}
	tr := itTransport(t, WithGroupID(group), WithSessionTimeout(6*time.Second), WithCommitInterval(0))
	ctx := bgCtx(t, 2*time.Minute)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				m, err := tr.Receive(ctx, topic, 200*time.Millisecond)
				if err != nil || m == nil {
					continue
				}
				// Reported as handled before its commit: a record the
				// kill catches between the two is counted as handled here
				// and, read again by the other member, as a duplicate.
				d, _ := recordOf(m)
				mu.Lock()
				fmt.Fprintf(out, "handled %d %d\n", d.msg.Partition, d.msg.Offset)
				_ = out.Flush()
				mu.Unlock()
				time.Sleep(3 * time.Millisecond)
				_ = tr.Ack(ctx, m)
			}
		}()
	}
	wg.Wait()
}

// A consumer child process is SIGKILLed mid-run: the other member takes
// its partitions over after the session timeout (6s) plus one rebalance;
// nothing is lost and the duplicates stay within what the child had in
// flight.
func TestIntegrationKilledMemberLosesNothing(t *testing.T) {
	topic, group := uniq("it-kill"), uniq("g")
	const parts, n = 6, 3000
	pub := itTransport(t)
	ensure(t, pub, topic, parts)
	publishN(t, pub, topic, n)
	ctx := bgCtx(t, 3*time.Minute)

	child := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestIntegrationKilledMemberChild$", "-test.count=1")
	child.Env = append(os.Environ(), "BQ_KILL_TOPIC="+topic, "BQ_KILL_GROUP="+group)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var childMu sync.Mutex
	childAcked := map[string]bool{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "handled" {
				childMu.Lock()
				childAcked[f[1]+"@"+f[2]] = true
				childMu.Unlock()
			}
		}
	}()
	// Wait for the child to be consuming before the parent joins.
	bqtest.WaitUntil(t, 30*time.Second, "the child to consume", func() bool {
		childMu.Lock()
		defer childMu.Unlock()
		return len(childAcked) > 50
	})

	log := &memberLog{owned: map[string]map[int]bool{}, out: map[string]int{}, resume: map[string]time.Time{}}
	var mu sync.Mutex
	parentAcked := map[string]int{}
	tr := itTransport(t, WithGroupID(group), WithSessionTimeout(6*time.Second), WithCommitInterval(0),
		func(c *config) { c.memberEvent = log.hook("parent") })
	pctx, stopParent := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pctx.Err() == nil {
				m, err := tr.Receive(pctx, topic, 200*time.Millisecond)
				if err != nil || m == nil {
					continue
				}
				time.Sleep(3 * time.Millisecond)
				if tr.Ack(context.Background(), m) == nil {
					d, _ := recordOf(m)
					mu.Lock()
					parentAcked[fmt.Sprintf("%d@%d", d.msg.Partition, d.msg.Offset)]++
					mu.Unlock()
				}
			}
		}()
	}
	// Wait until the group shares the partitions between both members.
	bqtest.WaitUntil(t, 60*time.Second, "the parent to get partitions", func() bool {
		owned := log.ownedBy("parent")
		return owned > 0 && owned < parts
	})
	time.Sleep(500 * time.Millisecond)
	killedAt := time.Now()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	<-readDone
	// What the child had handled and not committed when it died: the
	// records its partitions' next owner reads again.
	atKill := committedOffsets(t, group, topic, parts)
	childUncommitted := 0
	childMu.Lock()
	for k := range childAcked {
		var p int
		var o int64
		if _, err := fmt.Sscanf(k, "%d@%d", &p, &o); err == nil && o >= atKill[p] {
			childUncommitted++
		}
	}
	childMu.Unlock()
	// The group resumes when the parent is assigned every partition.
	bqtest.WaitUntil(t, 60*time.Second, "the parent to take over every partition", func() bool {
		owned := log.ownedBy("parent")
		return owned == parts
	})
	log.mu.Lock()
	resumed := log.resume["parent"].Sub(killedAt)
	log.mu.Unlock()
	handled := func() int {
		mu.Lock()
		defer mu.Unlock()
		childMu.Lock()
		defer childMu.Unlock()
		seen := len(childAcked)
		for k := range parentAcked {
			if !childAcked[k] {
				seen++
			}
		}
		return seen
	}
	for deadline := time.Now().Add(90 * time.Second); handled() < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records handled; committed %v, ends %v", handled(), n,
				committedOffsets(t, group, topic, parts), lastOffsets(t, topic, parts))
		}
	}
	stopParent()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	dups, own := 0, 0
	for k, c := range parentAcked {
		own += c - 1
		if childAcked[k] {
			dups++
		}
	}
	fmt.Printf("bench: kafka-kill-resume-s value=%.2f session-timeout=6s\n", resumed.Seconds())
	fmt.Printf("bench: kafka-kill-duplicates value=%d child-uncommitted=%d parent-own=%d records=%d\n", dups, childUncommitted, own, n)
	if dups > childUncommitted {
		t.Errorf("%d records of the child handled again, more than the %d it had not committed", dups, childUncommitted)
	}
	if own > 4 {
		t.Errorf("the surviving member handled %d records twice, more than its 4 in flight", own)
	}
}
