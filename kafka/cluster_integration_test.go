//go:build cluster

package kafka_test

// Failover tests on the three-node KRaft cluster of
// tools/brokers/kafka-cluster.sh (make cluster-tests): a partition leader of
// a work topic killed with SIGKILL while an App consumes and producers
// publish, the same for a retry-tier topic while a Reinjector carries its
// records, and the active controller killed. Each test proves that nothing
// acknowledged is lost, that no committed offset passes a record before it
// was settled, counts duplicates, and prints its figures as a
// "cluster: scenario=..." line. The killed node is started again at the end
// of each test.
//
// Figures of the leader-kill and controller-kill lines ("the killed
// partitions" are those the killed node led; times from the moment the kill
// was confirmed, the node's process gone):
//
//	failover_ms          first handler run of a record published after the kill to a killed
//	                     partition (producer and consumer both on the new leader); worst partition
//	resume_ms            first handler run of any record of a killed partition after the kill
//	produce_failover_ms  first acknowledged publish, started after the kill, to a killed partition
//	produce_stall_ms     longest gap between acknowledged publishes after the kill (all partitions)
//	consume_stall_ms     longest gap between handler runs after the kill (all partitions)
//	publish_errors       publishes that returned an error; _stored: of them, found in the topic anyway
//	producer_duplicates  extra stored copies of one id (kafka-go's writer retried an appended write)
//	duplicates           handler runs beyond the first per id and attempts
//	lost                 acknowledged publishes, or stored records, never handled
//	commits_ahead        committed offsets (read from the broker every 200ms) that passed a record
//	                     before its handler returned
//	lag                  records left uncommitted after the drain and the consumer's close
//
// The tier-leader-kill line: a tier record counts as carried back when its
// copy (same id and attempts) is handled from the work topic. failover_ms
// is the first such handler run of a record written to the killed tier
// partition after the kill, so it includes the tier's own delay (tier_ms);
// gap_ms is the time between the last such run of a record from that
// partition before the kill and that one; resume_ms the first run after the
// kill of any record from that partition. A Reinjector's commit on the tier
// topic must never pass a record whose copy is not yet in the work topic
// (below its high watermark, read just after the commit).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
)

const (
	// clusterPartitions is the partition count of every work topic.
	clusterPartitions = 3
	// clusterPostKill is how long producers go on after the kill.
	clusterPostKill = 20 * time.Second
	// clusterFailoverBound is the longest a partition may go without a
	// record published after the kill being handled. The cluster fences a
	// dead node after 9s (broker.session.timeout.ms); when the node was
	// also the group's coordinator, the App's group reader (kafka-go's
	// defaults: 30s session and rebalance timeouts, 5s join backoff) takes
	// about 40s more to join the new coordinator.
	clusterFailoverBound = 60 * time.Second
	// clusterDrain bounds the wait for every acknowledged publish to be
	// handled once producers stopped.
	clusterDrain = 90 * time.Second
	// Producers: workers publishing one envelope every clusterEvery each,
	// at most clusterMaxPublishes in all.
	clusterWorkers      = 6
	clusterEvery        = 30 * time.Millisecond
	clusterMaxPublishes = 8000
)

var errFirstAttempt = errors.New("first attempt fails on purpose")

// workRun is a workload on one work topic: producers publishing through an
// App, an App consuming in a group, and the sampler of its commits.
type workRun struct {
	e            *clusterEnv
	topic, group string
	tiers        []time.Duration
	led          *ledger
	logs         *logTail
	tr           *kafka.Transport
	restarts     atomic.Int64
	onErr        atomic.Int64 // errors the App reported other than the handler's planned ones

	stopProduce  context.CancelFunc
	produceDone  chan struct{}
	stopConsume  context.CancelFunc
	consumeDone  <-chan struct{}
	stopSampling context.CancelFunc
	samples      func() ([]commitSample, int)
}

// startWork provisions a work topic (RF 3, its tiers and DLQ), and starts
// the consumer App (its handler fails the first attempt when failFirst),
// the producers and the commit sampler.
func startWork(t *testing.T, e *clusterEnv, prefix string, tiers []time.Duration, failFirst bool) *workRun {
	t.Helper()
	w := &workRun{e: e, topic: clusterName(prefix), tiers: tiers, led: newLedger(), logs: &logTail{}}
	w.led.errs = &logTail{}
	w.group = w.topic + "-workers"
	opts := []kafka.Option{kafka.WithGroupID(w.group)}
	if len(tiers) > 0 {
		opts = append(opts, kafka.WithRetryTiers(tiers...))
	}
	w.tr = newClusterTransport(t, e, w.logs, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.tr.EnsureTopics(ctx, w.topic, clusterPartitions, 3); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	topics := []string{w.topic, w.topic + kafka.DeadLetterSuffix}
	for n := range tiers {
		topics = append(topics, kafka.RetryTopic(w.topic, n+1))
	}
	e.waitFullISR(t, topics...)

	app, err := babelqueue.NewApp(w.tr, babelqueue.WithDefaultQueue(w.topic), babelqueue.WithPollTimeout(200*time.Millisecond),
		babelqueue.WithMaxAttempts(5), babelqueue.WithLogger(slogTo(w.logs)),
		babelqueue.WithOnError(func(err error) {
			if !errors.Is(err, errFirstAttempt) {
				w.onErr.Add(1) // not the handler's planned failure: a settle write that failed
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle(clusterURN, func(_ context.Context, env *babelqueue.Envelope) error {
		w.led.handle(hkey{env.Meta.ID, env.Attempts})
		if failFirst && env.Attempts == 0 {
			return errFirstAttempt
		}
		return nil
	})
	var sctx, cctx, pctx context.Context
	sctx, w.stopSampling = context.WithCancel(context.Background())
	w.samples = e.sampleCommits(t, sctx, w.group, w.topic, clusterPartitions)
	cctx, w.stopConsume = context.WithCancel(context.Background())
	w.consumeDone = supervise(cctx, app, w.topic, &w.restarts, w.logs)

	ptr := newClusterTransport(t, e, w.logs)
	papp, err := babelqueue.NewApp(ptr, babelqueue.WithDefaultQueue(w.topic), babelqueue.WithLogger(slogTo(w.logs)))
	if err != nil {
		t.Fatal(err)
	}
	pctx, w.stopProduce = context.WithCancel(context.Background())
	w.produceDone = make(chan struct{})
	go func() {
		defer close(w.produceDone)
		w.led.produce(pctx, papp, w.topic, clusterWorkers, clusterEvery, clusterMaxPublishes)
	}()
	t.Cleanup(w.stop)
	return w
}

// warmUp waits until n deliveries were handled and two more seconds.
func (w *workRun) warmUp(t *testing.T, n int) {
	t.Helper()
	if !waitFor(90*time.Second, func() bool { return w.led.count() >= n }) {
		t.Fatalf("only %d deliveries handled before the kill (want %d)", w.led.count(), n)
	}
	time.Sleep(2 * time.Second)
}

// finish stops the producers, waits until done says the workload drained
// (at most clusterDrain), then stops the consumer, closes its transport
// (flushing pending commits) and stops the sampler.
func (w *workRun) finish(t *testing.T, done func() bool) {
	t.Helper()
	w.stopProduce()
	<-w.produceDone
	t.Logf("producers stopped")
	start := time.Now()
	drained := waitFor(clusterDrain, done)
	t.Logf("drain after producers stopped: %v (drained=%v)", time.Since(start).Round(time.Millisecond), drained)
	time.Sleep(time.Second) // let the last commits land while consuming
	w.stop()
	t.Logf("consumer stopped")
}

func (w *workRun) stop() {
	w.stopProduce()
	<-w.produceDone
	w.stopConsume()
	<-w.consumeDone
	_ = w.tr.Close()
	time.Sleep(500 * time.Millisecond) // one more commit sample after the close
	w.stopSampling()
	w.samples()
}

// report logs the first client warnings and the duplicates.
func (w *workRun) report(t *testing.T) {
	w.logs.report(t, "client logs")
	w.led.errs.report(t, "failed publishes")
	for _, d := range w.led.duplicates(20) {
		t.Logf("duplicate: %s", d)
	}
}

// allAckedHandled is the drain condition of a workload whose handler
// succeeds at the first attempt.
func (w *workRun) allAckedHandled(success func(id string) bool) func() bool {
	return func() bool {
		w.led.mu.Lock()
		acked := 0
		for _, p := range w.led.pub {
			if p.err == nil {
				acked++
			}
		}
		w.led.mu.Unlock()
		return acked > 0 && len(w.led.unhandled(success)) == 0
	}
}

func (w *workRun) handledAt(attempts int) func(id string) bool {
	return func(id string) bool {
		w.led.mu.Lock()
		defer w.led.mu.Unlock()
		return len(w.led.handled[hkey{id, attempts}]) > 0
	}
}

// workFigures is what a leader- or controller-kill run measured.
type workFigures struct {
	published, acked, pubErrors, pubErrorsStored int
	storedCopies                                 int // records stored twice by the producer's retries
	handled, duplicates, lost                    int
	failover, resume, produceFailover            time.Duration // worst over the killed node's partitions
	maxPublish, produceStall, consumeStall       time.Duration
	commitSamples, commitReadFails, lag          int
	ahead                                        []string
	lostIDs                                      []string
}

func (f workFigures) String() string {
	return fmt.Sprintf("failover_ms=%d resume_ms=%d produce_failover_ms=%d produce_stall_ms=%d consume_stall_ms=%d max_publish_ms=%d "+
		"published=%d acked=%d publish_errors=%d publish_errors_stored=%d producer_duplicates=%d handled=%d lost=%d duplicates=%d "+
		"commit_samples=%d commit_read_failures=%d commits_ahead=%d lag=%d",
		ms(f.failover), ms(f.resume), ms(f.produceFailover), ms(f.produceStall), ms(f.consumeStall), ms(f.maxPublish),
		f.published, f.acked, f.pubErrors, f.pubErrorsStored, f.storedCopies, f.handled, f.lost, f.duplicates,
		f.commitSamples, f.commitReadFails, len(f.ahead), f.lag)
}

// measureWork reads the work topic back and computes the figures of a run
// whose handler succeeds at once; killed lists the partitions the killed
// node led.
func (w *workRun) measureWork(t *testing.T, killAt time.Time, killed []int) workFigures {
	t.Helper()
	recs := w.e.readAll(t, w.topic, clusterPartitions)
	samples, fails := w.samples()
	var f workFigures
	f.commitSamples, f.commitReadFails = len(samples), fails
	f.ahead = commitsAhead(samples, recs, w.led.settledByHandler)

	led := w.led
	led.mu.Lock()
	defer led.mu.Unlock()
	stored := map[string]bool{}
	for _, r := range recs {
		if stored[r.id] {
			f.storedCopies++
		}
		stored[r.id] = true
	}
	var ackTimes []time.Time
	for id, p := range led.pub {
		f.published++
		if p.err != nil {
			f.pubErrors++
			if stored[id] {
				f.pubErrorsStored++
			}
			continue
		}
		f.acked++
		ackTimes = append(ackTimes, p.end)
		if d := p.end.Sub(p.start); d > f.maxPublish {
			f.maxPublish = d
		}
		if len(led.handled[hkey{id, 0}]) == 0 {
			f.lostIDs = append(f.lostIDs, id)
		}
	}
	for _, r := range recs {
		if p, ok := led.pub[r.id]; ok && p.err == nil {
			continue // counted above
		}
		// A stored record nobody handled is lost too, even when its
		// publish returned an error.
		if len(led.handled[hkey{r.id, r.attempts}]) == 0 {
			f.lostIDs = append(f.lostIDs, r.id+" (publish returned an error, stored)")
		}
	}
	f.lost = len(f.lostIDs)
	for _, ts := range led.handled {
		f.handled += len(ts)
		f.duplicates += len(ts) - 1
	}
	f.produceStall = maxGap(ackTimes, killAt)
	f.consumeStall = maxGap(led.times, killAt)

	for _, q := range killed {
		var first, any, firstAck time.Time
		for _, r := range recs {
			if r.partition != q {
				continue
			}
			hs := led.handled[hkey{r.id, r.attempts}]
			p := led.pub[r.id]
			for _, h := range hs {
				if h.After(killAt) && (any.IsZero() || h.Before(any)) {
					any = h
				}
			}
			if !p.start.After(killAt) {
				continue
			}
			if len(hs) > 0 && (first.IsZero() || hs[0].Before(first)) {
				first = hs[0]
			}
			if p.err == nil && (firstAck.IsZero() || p.end.Before(firstAck)) {
				firstAck = p.end
			}
		}
		if first.IsZero() {
			t.Errorf("partition %d: no record published after the kill was handled", q)
			f.failover = time.Hour
		} else if d := first.Sub(killAt); d > f.failover {
			f.failover = d
		}
		if !any.IsZero() && any.Sub(killAt) > f.resume {
			f.resume = any.Sub(killAt)
		}
		if !firstAck.IsZero() && firstAck.Sub(killAt) > f.produceFailover {
			f.produceFailover = firstAck.Sub(killAt)
		}
	}
	// After the drain and the close, every partition's commit should be at
	// its end.
	if len(samples) > 0 {
		last := samples[len(samples)-1]
		ends := map[int]int64{}
		for _, r := range recs {
			ends[r.partition] = r.offset + 1
		}
		for p, end := range ends {
			if c := last.offsets[p]; c < end {
				f.lag += int(end - c)
			}
		}
	}
	return f
}

// check fails the test on a lost record, a commit ahead of its settlement
// or a failover beyond the bound.
func (f workFigures) check(t *testing.T) {
	t.Helper()
	if f.lost != 0 {
		n := min(len(f.lostIDs), 10)
		t.Errorf("%d records lost (acknowledged or stored, never handled), e.g. %v", f.lost, f.lostIDs[:n])
	}
	if len(f.ahead) != 0 {
		n := min(len(f.ahead), 10)
		t.Errorf("%d committed offsets ahead of their settlement, e.g.\n%s", len(f.ahead), strings.Join(f.ahead[:n], "\n"))
	}
	if f.failover > clusterFailoverBound {
		t.Errorf("failover took %v, over the %v bound", f.failover, clusterFailoverBound)
	}
	if f.commitSamples == 0 {
		t.Errorf("no committed offset could be read")
	}
	if f.acked == 0 {
		t.Errorf("nothing was acknowledged")
	}
}

// pickPartition returns a partition led by none of the avoid nodes when
// there is one, so the kill takes a partition leader and nothing else: the
// active controller and the group coordinators are avoided.
func pickPartition(leaders map[int]int, avoid ...int) int {
	ps := make([]int, 0, len(leaders))
	for p := range leaders {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	for n := len(avoid); n >= 0; n-- {
		for _, p := range ps {
			if !slices.Contains(avoid[:n], leaders[p]) {
				return p
			}
		}
	}
	return ps[0]
}

func ledBy(leaders map[int]int, node int) []int {
	var out []int
	for p, l := range leaders {
		if l == node {
			out = append(out, p)
		}
	}
	sort.Ints(out)
	return out
}

// TestClusterLeaderKillWorkTopic kills -9 the leader of a work-topic
// partition while producers publish and an App consumes.
func TestClusterLeaderKillWorkTopic(t *testing.T) {
	e := newClusterEnv(t)
	w := startWork(t, e, "cl-leader", nil, false)
	w.warmUp(t, 300)
	leaders := e.leaders(t, w.topic)
	ctrl, err := e.controller()
	if err != nil {
		t.Fatal(err)
	}
	coord := e.coordinator(t, w.group)
	p := pickPartition(leaders, ctrl, coord)
	node := leaders[p]
	killed := ledBy(leaders, node)
	killAt := e.kill(t, node)
	t.Logf("killed node %d, leader of %s partitions %v (controller: node %d, group coordinator: node %d)", node, w.topic, killed, ctrl, coord)
	time.Sleep(clusterPostKill)
	w.finish(t, w.allAckedHandled(w.handledAt(0)))
	f := w.measureWork(t, killAt, killed)
	w.report(t)
	t.Logf("cluster: scenario=leader-kill node=%d partitions=%v controller_too=%v coordinator_too=%v consume_restarts=%d settle_errors=%d %s",
		node, killed, node == ctrl, node == coord, w.restarts.Load(), w.onErr.Load(), f)
	f.check(t)
}

// TestClusterControllerKill kills -9 the active controller (a combined
// node, so it also leads some partitions) while producers publish and an
// App consumes: a new controller is elected, metadata writes go on, and so
// do producing and consuming.
func TestClusterControllerKill(t *testing.T) {
	e := newClusterEnv(t)
	w := startWork(t, e, "cl-ctrl", nil, false)
	w.warmUp(t, 300)
	leaders := e.leaders(t, w.topic)
	ctrl, err := e.controller()
	if err != nil {
		t.Fatal(err)
	}
	killed := ledBy(leaders, ctrl)
	coord := e.coordinator(t, w.group)
	killAt := e.kill(t, ctrl)
	t.Logf("killed node %d, the active controller, leader of %s partitions %v", ctrl, w.topic, killed)

	var newCtrl, metaWrite time.Duration
	var elected int
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // a new active controller named by the quorum state
		defer wg.Done()
		waitFor(60*time.Second, func() bool {
			id, err := e.controller()
			if err == nil && id != ctrl {
				elected, newCtrl = id, time.Since(killAt)
				return true
			}
			return false
		})
	}()
	go func() { // a metadata write (topic creation) accepted by the quorum
		defer wg.Done()
		topic := w.topic + "-after-kill"
		waitFor(60*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			res, err := e.client(t).CreateTopics(ctx, &kafkago.CreateTopicsRequest{
				Topics: []kafkago.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 2}}})
			if err == nil && (res.Errors[topic] == nil || errors.Is(res.Errors[topic], kafkago.TopicAlreadyExists)) {
				metaWrite = time.Since(killAt)
				return true
			}
			return false
		})
	}()
	time.Sleep(clusterPostKill)
	wg.Wait()
	w.finish(t, w.allAckedHandled(w.handledAt(0)))
	f := w.measureWork(t, killAt, killed)
	w.report(t)
	t.Logf("cluster: scenario=controller-kill node=%d new_controller=%d new_controller_ms=%d metadata_write_ms=%d partitions=%v coordinator_too=%v consume_restarts=%d settle_errors=%d %s",
		ctrl, elected, ms(newCtrl), ms(metaWrite), killed, ctrl == coord, w.restarts.Load(), w.onErr.Load(), f)
	if newCtrl == 0 {
		t.Errorf("no new controller elected within 60s of the kill")
	}
	if metaWrite == 0 {
		t.Errorf("no topic could be created within 60s of the kill")
	}
	f.check(t)
}

// TestClusterLeaderKillTierTopic kills -9 the leader of a partition of the
// first retry tier while a Reinjector carries its records: every message
// fails its first attempt, goes through tier 1 and succeeds when carried
// back.
func TestClusterLeaderKillTierTopic(t *testing.T) {
	e := newClusterEnv(t)
	tiers := []time.Duration{time.Second, 2 * time.Second}
	w := startWork(t, e, "cl-tier", tiers, true)
	tier1 := kafka.RetryTopic(w.topic, 1)

	// The re-injector, in its own group.
	rgroup := w.topic + "-reinject"
	rtr := newClusterTransport(t, e, w.logs, kafka.WithReinjectGroupID(rgroup), kafka.WithRetryTiers(tiers...))
	r, err := rtr.NewReinjector(w.topic)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stopR := context.WithCancel(context.Background())
	rdone := make(chan struct{})
	var runRestarts atomic.Int64
	go func() {
		defer close(rdone)
		for rctx.Err() == nil {
			if err := r.Run(rctx); err != nil && rctx.Err() == nil {
				runRestarts.Add(1)
				fmt.Fprintf(w.logs, "Reinjector.Run returned: %v\n", err)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	stopReinjector := func() { stopR(); <-rdone; _ = rtr.Close() }
	t.Cleanup(stopReinjector)
	sctx, stopRS := context.WithCancel(context.Background())
	rsamples := e.sampleCommits(t, sctx, rgroup, tier1, clusterPartitions, w.topic)
	t.Cleanup(stopRS)

	w.warmUp(t, 400) // first attempts and carried-back retries
	leaders := e.leaders(t, tier1)
	ctrl, err := e.controller()
	if err != nil {
		t.Fatal(err)
	}
	coord, rcoord := e.coordinator(t, w.group), e.coordinator(t, rgroup)
	p := pickPartition(leaders, ctrl, rcoord, coord)
	node := leaders[p]
	killed := ledBy(leaders, node)
	killAt := e.kill(t, node)
	t.Logf("killed node %d, leader of %s partitions %v (controller: node %d, coordinators: App group node %d, Reinjector group node %d)",
		node, tier1, killed, ctrl, coord, rcoord)
	time.Sleep(clusterPostKill)

	succeeded := func(id string) bool {
		w.led.mu.Lock()
		defer w.led.mu.Unlock()
		for a := 1; a < 5; a++ {
			if len(w.led.handled[hkey{id, a}]) > 0 {
				return true
			}
		}
		return false
	}
	w.finish(t, w.allAckedHandled(succeeded))
	stopReinjector()
	time.Sleep(500 * time.Millisecond)
	stopRS()

	work := e.readAll(t, w.topic, clusterPartitions)
	tierRecs := e.readAll(t, tier1, clusterPartitions)
	dlq := e.readAll(t, w.topic+kafka.DeadLetterSuffix, clusterPartitions)
	wsamples, wfails := w.samples()
	rs, rfails := rsamples()
	// The App settles a work record when its handler returned; the
	// Reinjector a tier record once its copy is in the work topic.
	aheadWork := commitsAhead(wsamples, work, w.led.settledByHandler)
	aheadTier := commitsAheadOfCopies(rs, tierRecs, work)
	copies := func(recs []clRecord) int {
		seen, n := map[hkey]bool{}, 0
		for _, r := range recs {
			k := hkey{r.id, r.attempts}
			if seen[k] {
				n++
			}
			seen[k] = true
		}
		return n
	}
	workCopies, tierCopies := copies(work), copies(tierRecs)
	carriedN := 0
	for _, r := range work {
		if r.attempts > 0 {
			carriedN++
		}
	}

	// A tier record is back when its copy (same id and attempts) is handled
	// from the work topic: that time bounds its carry-back from above.
	var lastBefore, firstAfter, failoverAt time.Time
	w.led.mu.Lock()
	for _, rec := range tierRecs {
		if rec.partition != p {
			continue
		}
		hs := w.led.handled[hkey{rec.id, rec.attempts}]
		if len(hs) == 0 {
			continue
		}
		at := hs[0]
		if at.Before(killAt) && at.After(lastBefore) {
			lastBefore = at
		}
		if at.After(killAt) && (firstAfter.IsZero() || at.Before(firstAfter)) {
			firstAfter = at
		}
		// A record whose first attempt failed after the kill was written
		// to the tier partition through its new leader.
		if fa := w.led.handled[hkey{rec.id, 0}]; len(fa) > 0 && fa[0].After(killAt) && (failoverAt.IsZero() || at.Before(failoverAt)) {
			failoverAt = at
		}
	}
	var acked, pubErrs, lost, dups, handled int
	var lostIDs []string
	for id, pr := range w.led.pub {
		if pr.err != nil {
			pubErrs++
			continue
		}
		acked++
		n := 0
		for a := 1; a < 5; a++ {
			n += len(w.led.handled[hkey{id, a}])
		}
		if n == 0 {
			lost++
			lostIDs = append(lostIDs, id)
		} else {
			dups += n - 1
		}
		dups += max(len(w.led.handled[hkey{id, 0}])-1, 0)
	}
	for _, ts := range w.led.handled {
		handled += len(ts)
	}
	published := len(w.led.pub)
	w.led.mu.Unlock()
	var failover, gap, resume time.Duration
	if !failoverAt.IsZero() {
		failover = failoverAt.Sub(killAt)
		if !lastBefore.IsZero() {
			gap = failoverAt.Sub(lastBefore)
		}
	}
	if !firstAfter.IsZero() {
		resume = firstAfter.Sub(killAt)
	}
	w.report(t)
	t.Logf("cluster: scenario=tier-leader-kill node=%d tier_partition=%d controller_too=%v app_coordinator_too=%v reinjector_coordinator_too=%v tier_ms=%d failover_ms=%d gap_ms=%d resume_ms=%d "+
		"published=%d acked=%d publish_errors=%d work_copies=%d tier_copies=%d handled=%d carried=%d lost=%d duplicates=%d dead_lettered=%d "+
		"consume_restarts=%d reinjector_restarts=%d settle_errors=%d commit_samples=%d/%d commit_read_failures=%d/%d commits_ahead=%d/%d",
		node, p, node == ctrl, node == coord, node == rcoord, ms(tiers[0]), ms(failover), ms(gap), ms(resume),
		published, acked, pubErrs, workCopies, tierCopies, handled, carriedN, lost, dups, len(dlq),
		w.restarts.Load(), runRestarts.Load(), w.onErr.Load(), len(wsamples), len(rs), wfails, rfails, len(aheadWork), len(aheadTier))
	if lost != 0 {
		t.Errorf("%d acknowledged publishes never handled successfully, e.g. %v", lost, lostIDs[:min(10, len(lostIDs))])
		// Where they stopped: not handled at all, in which tier partition
		// (not carried back), or carried back but not handled.
		inTier, inWork := map[string]int{}, map[string]bool{}
		for _, r := range tierRecs {
			inTier[r.id] = r.partition
		}
		for _, r := range work {
			if r.attempts > 0 {
				inWork[r.id] = true
			}
		}
		where := map[string]int{}
		w.led.mu.Lock()
		for _, id := range lostIDs {
			tp, tiered := inTier[id]
			switch {
			case len(w.led.handled[hkey{id, 0}]) == 0:
				where["first attempt never handled"]++
			case !tiered:
				where["first attempt handled, no tier record"]++
			case !inWork[id]:
				where[fmt.Sprintf("in tier partition %d, not carried back", tp)]++
			default:
				where["carried back, not handled"]++
			}
		}
		w.led.mu.Unlock()
		t.Errorf("the lost records stopped at: %v", where)
		if len(rs) > 0 {
			ends := map[int]int64{}
			for _, r := range tierRecs {
				ends[r.partition] = r.offset + 1
			}
			t.Errorf("Reinjector's last committed offsets on %s: %v; tier ends: %v", tier1, rs[len(rs)-1].offsets, ends)
		}
	}
	if len(dlq) != 0 {
		t.Errorf("%d records dead-lettered; every message should succeed at its second attempt", len(dlq))
	}
	for name, ahead := range map[string][]string{"work topic (App)": aheadWork, "tier topic (Reinjector)": aheadTier} {
		if len(ahead) != 0 {
			t.Errorf("%s: %d committed offsets ahead of their settlement, e.g.\n%s", name, len(ahead), strings.Join(ahead[:min(10, len(ahead))], "\n"))
		}
	}
	if failoverAt.IsZero() {
		t.Errorf("no record written to tier partition %d after the kill was carried back and handled", p)
	} else if failover > clusterFailoverBound+tiers[0] {
		t.Errorf("re-injection resumed %v after the kill, over the %v bound", failover, clusterFailoverBound+tiers[0])
	}
	if len(wsamples) == 0 || len(rs) == 0 {
		t.Errorf("committed offsets read: %d of the App, %d of the Reinjector", len(wsamples), len(rs))
	}
}
