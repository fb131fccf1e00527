package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/babelqueue/babelqueue-go/chaos"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// side is what the driver needs of a broker.
type side interface {
	name() string
	transport() babelqueue.Transport
	workTopic() string
	dlq() string
	provision(ctx context.Context) error
	consumerArgs(self, dir, proc string, work time.Duration, concurrency int) []string
	helpers() map[string]func(proc string) []string
	lag(ctx context.Context) (int64, error)
	deadLetterCount(ctx context.Context) (int, error)
	readBack(ctx context.Context) (chaos.ReadBack, map[string]int, error)
	close()
}

type runConfig struct {
	broker        string
	n             int
	kills         int
	duration      time.Duration
	graceful      bool
	brokerRestart bool
	dir           string
	scripts       string
	bq            string
	seed          uint64
	work          time.Duration
	drain         time.Duration
	windows       chaos.Windows
	scenario      string // printed as scenario=<s> in the chaos: line when set
	consumers     int
	subscription  string // Pulsar: shared or exclusive
	concurrency   int    // handlers each consumer runs at once (App WithConcurrency, OrderKey)
}

func runMain(args []string) int {
	var c runConfig
	fs := flag.NewFlagSet("bqchaos run", flag.ContinueOnError)
	fs.StringVar(&c.broker, "broker", "", "kafka or pulsar (addresses from BQ_KAFKA_BROKERS, BQ_PULSAR_URL, BQ_PULSAR_ADMIN_URL)")
	fs.IntVar(&c.n, "n", 2000, "envelopes to produce")
	fs.IntVar(&c.kills, "kills", 6, "processes to kill (SIGKILL, or SIGTERM with -graceful)")
	fs.DurationVar(&c.duration, "duration", 90*time.Second, "length of the chaos phase (production spreads over 70% of it)")
	fs.BoolVar(&c.graceful, "graceful", false, "SIGTERM instead of SIGKILL, and no broker restart")
	restart := fs.String("broker-restart", "auto", "kill -9 the broker once and start it on its kept data: auto (yes unless -graceful), yes, no")
	fs.StringVar(&c.dir, "dir", "", "run directory for the records and logs (default: a new temporary directory, removed after a passing run unless -keep)")
	keep := fs.Bool("keep", false, "keep the temporary run directory after a passing run")
	fs.StringVar(&c.scripts, "scripts", "tools/brokers", "directory of the broker scripts (kafka.sh, pulsar.sh)")
	fs.StringVar(&c.bq, "bq", "", "the bq binary for the Kafka re-injector (default: go build ./tools/cmd/bq into the run directory)")
	fs.Uint64Var(&c.seed, "seed", 0, "random seed (0: from the clock; printed)")
	fs.DurationVar(&c.work, "work", time.Millisecond, "time each handler takes")
	fs.DurationVar(&c.drain, "drain", 150*time.Second, "longest wait for the drain after the chaos phase")
	windows := windowFlags(fs)
	fs.IntVar(&c.concurrency, "concurrency", 1, "handlers each consumer runs at once (App WithConcurrency with OrderKey); above 1 the producer keys its envelopes over 64 keys")
	fs.StringVar(&c.scenario, "scenario", "", "name printed as scenario=<name> in the chaos: line")
	fs.IntVar(&c.consumers, "consumers", 2, "consumer processes (one with -subscription exclusive)")
	fs.StringVar(&c.subscription, "subscription", "shared", "Pulsar subscription type of the consumers: shared or exclusive (retries by republish either way)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.subscription != "shared" && c.subscription != "exclusive" {
		fmt.Fprintln(os.Stderr, "bqchaos: -subscription must be shared or exclusive")
		return 2
	}
	if c.concurrency < 1 {
		fmt.Fprintln(os.Stderr, "bqchaos: -concurrency must be at least 1")
		return 2
	}
	if c.subscription == "exclusive" {
		c.consumers = 1 // a second consumer of an Exclusive subscription is refused
	}
	switch *restart {
	case "auto":
		c.brokerRestart = !c.graceful
	case "yes":
		c.brokerRestart = true
	case "no":
	default:
		fmt.Fprintln(os.Stderr, "bqchaos: -broker-restart must be auto, yes or no")
		return 2
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	c.windows = windows(c.broker, c.graceful)
	c.windows.InFlight = c.concurrency
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Everything is bounded: the chaos phase, the drain, and the broker
	// restart, plus slack for provisioning and the read-back.
	ctx, cancel := context.WithTimeout(ctx, c.duration+c.drain+6*time.Minute)
	defer cancel()
	temp := c.dir == ""
	if temp {
		d, err := os.MkdirTemp("", "bqchaos-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "bqchaos: %v\n", err)
			return 1
		}
		c.dir = d
	}
	code, err := run(ctx, c, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bqchaos: %v (records and logs in %s)\n", err, c.dir)
		return 1
	}
	if code == 0 && temp && !*keep {
		_ = os.RemoveAll(c.dir)
	} else if code != 0 {
		fmt.Fprintf(os.Stderr, "bqchaos: records and logs in %s\n", c.dir)
	}
	return code
}

func run(ctx context.Context, c runConfig, log *slog.Logger) (int, error) {
	started := time.Now()
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o755); err != nil {
		return 1, err
	}
	rnd := rand.New(rand.NewPCG(c.seed, c.seed^0x9e3779b97f4a7c15))
	runID := fmt.Sprintf("r%x", time.Now().UnixNano()/1e6)
	log.Info("chaos run", "broker", c.broker, "n", c.n, "kills", c.kills, "duration", c.duration, "graceful", c.graceful,
		"broker_restart", c.brokerRestart, "seed", c.seed, "dir", c.dir, "run", runID)

	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	var s side
	switch c.broker {
	case "kafka":
		if c.bq == "" {
			c.bq = filepath.Join(c.dir, "bq")
			log.Info("building bq", "out", c.bq)
			b := exec.CommandContext(ctx, "go", "build", "-o", c.bq, "./tools/cmd/bq")
			b.Stdout, b.Stderr = os.Stderr, os.Stderr
			if err := b.Run(); err != nil {
				return 1, fmt.Errorf("go build ./tools/cmd/bq (run from the repository root or pass -bq): %w", err)
			}
		}
		s, err = newKafkaSide(runID, 6, c.bq, log)
	case "pulsar":
		s, err = newPulsarSide(runID, 6)
	default:
		return 2, fmt.Errorf("-broker must be kafka or pulsar, not %q", c.broker)
	}
	if err != nil {
		return 1, err
	}
	defer s.close()
	script := filepath.Join(c.scripts, c.broker+".sh")
	if c.brokerRestart {
		if _, err := os.Stat(script); err != nil {
			return 1, fmt.Errorf("broker script: %w", err)
		}
	}

	pctx, pcancel := context.WithTimeout(ctx, 2*time.Minute)
	err = s.provision(pctx)
	pcancel()
	if err != nil {
		return 1, err
	}

	produced, err := chaos.OpenJournal(filepath.Join(c.dir, chaos.ProducedFile))
	if err != nil {
		return 1, err
	}
	defer produced.Close()
	events, err := chaos.OpenJournal(filepath.Join(c.dir, chaos.EventsFile))
	if err != nil {
		return 1, err
	}
	defer events.Close()

	sup := &supervisor{dir: c.dir, events: events, log: log}
	var targets []*slot
	for i := 1; i <= max(c.consumers, 1); i++ {
		targets = append(targets, sup.add(fmt.Sprintf("consumer-%d", i), func(proc string) []string {
			args := s.consumerArgs(self, c.dir, proc, c.work, c.concurrency)
			if c.broker == "pulsar" {
				args = append(args, "-subscription-type", c.subscription)
			}
			return args
		}))
	}
	helpers := s.helpers()
	names := make([]string, 0, len(helpers))
	for n := range helpers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		targets = append(targets, sup.add(n, helpers[n]))
	}
	defer sup.stopAll(15 * time.Second)
	for _, t := range targets {
		if err := t.start(); err != nil {
			return 1, err
		}
	}

	// The producer, paused (gate) around the broker restart.
	var gate sync.RWMutex
	var publishRetries atomic.Int64
	app, err := babelqueue.NewApp(s.transport(), babelqueue.WithDefaultQueue(s.workTopic()))
	if err != nil {
		return 1, err
	}
	produceFor := c.duration * 7 / 10
	prodDone := make(chan error, 1)
	go func() {
		prodDone <- produce(ctx, app, produced, &gate, runID, c.n, keysFor(c.concurrency), produceFor, &publishRetries, log)
	}()

	// The chaos timeline: kills at random moments, one broker restart.
	chaosStart := time.Now()
	killAt := killMoments(rnd, c.kills, 3*time.Second, c.duration)
	restartAt := c.duration * 45 / 100
	restarted := !c.brokerRestart
	var downFor time.Duration
	sig, kind := syscall.SIGKILL, chaos.Kill
	if c.graceful {
		sig, kind = syscall.SIGTERM, chaos.Term
	}
	for i := 0; i <= len(killAt); i++ {
		next := c.duration
		if i < len(killAt) {
			next = killAt[i]
		}
		if !restarted && restartAt <= next {
			if !sleepCtx(ctx, time.Until(chaosStart.Add(restartAt))) {
				return 1, ctx.Err()
			}
			d, err := restartBroker(ctx, script, &gate, sup, rnd, log)
			if err != nil {
				return 1, err
			}
			downFor, restarted = d, true
			// The kills still to come keep their spacing.
			chaosStart = chaosStart.Add(d)
		}
		if i == len(killAt) {
			break
		}
		if !sleepCtx(ctx, time.Until(chaosStart.Add(next))) {
			return 1, ctx.Err()
		}
		t := targets[rnd.IntN(len(targets))]
		proc := t.signal(sig, 30*time.Second)
		if proc == "" {
			log.Info("kill skipped: not running", "slot", t.name)
			continue
		}
		sup.event(kind, proc)
		log.Info("killed", "proc", proc, "signal", sig, "n", i+1)
		if !sleepCtx(ctx, time.Duration(200+rnd.IntN(1800))*time.Millisecond) {
			return 1, ctx.Err()
		}
		if err := t.start(); err != nil {
			return 1, err
		}
	}
	select {
	case err := <-prodDone:
		if err != nil {
			return 1, fmt.Errorf("producer: %w", err)
		}
	case <-ctx.Done():
		return 1, ctx.Err()
	}
	log.Info("chaos phase over; draining", "elapsed", time.Since(started).Round(time.Second))

	// Drain: every produced id settled (handled, or dead-lettered for the
	// doomed ones) and no lag, twice in a row.
	doomed := 0
	for seq := range c.n {
		if chaos.ClassOfSeq(seq) == chaos.Doomed {
			doomed++
		}
	}
	drainEnd := time.Now().Add(c.drain)
	settledTwice := 0
	for time.Now().Before(drainEnd) && settledTwice < 2 {
		if !sleepCtx(ctx, 2*time.Second) {
			return 1, ctx.Err()
		}
		rec, err := chaos.ReadRecords(c.dir)
		if err != nil {
			return 1, err
		}
		okIDs := map[string]bool{}
		for _, h := range rec.Handlings {
			if h.OK {
				okIDs[h.ID] = true
			}
		}
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		lag, lerr := s.lag(lctx)
		dl, derr := s.deadLetterCount(lctx)
		lcancel()
		if lerr != nil || derr != nil {
			log.Warn("drain check", "lag_err", lerr, "dlq_err", derr)
			settledTwice = 0
			continue
		}
		if len(okIDs) >= c.n-doomed && dl >= doomed && lag == 0 {
			settledTwice++
		} else {
			settledTwice = 0
		}
		log.Info("draining", "handled", len(okIDs), "want", c.n-doomed, "dead_letters", dl, "want_dl", doomed, "lag", lag)
	}
	if settledTwice < 2 {
		log.Warn("the drain did not settle in time; accounting what there is", "drain", c.drain)
	}
	sup.stopAll(15 * time.Second)

	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	defer lcancel()
	lag, err := s.lag(lctx)
	if err != nil {
		return 1, fmt.Errorf("final lag: %w", err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	rb, stats, err := s.readBack(rctx)
	if err != nil {
		return 1, fmt.Errorf("read back: %w", err)
	}
	rb.PublishRetries = int(publishRetries.Load())
	rb.Lag = lag
	if err := chaos.WriteReadBack(c.dir, rb); err != nil {
		return 1, err
	}
	rec, err := chaos.ReadRecords(c.dir)
	if err != nil {
		return 1, err
	}
	rep := chaos.Account(rec, rb, c.windows)
	strict := c.windows
	strict.Rebalance = 0
	strictBound := chaos.Bound(rec, rb, strict)
	var st []string
	for k, v := range stats {
		st = append(st, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(st)
	fmt.Fprintf(os.Stderr, "chaos detail: bound=%d bound_without_rebalance=%d unexplained=%d crashes=%d publish_retries=%d handlings=%d torn_lines=%d broker_down=%s elapsed=%s seed=%d dir=%s %s\n",
		rep.Bound, strictBound, rep.Unexplained, rep.Crashes, rb.PublishRetries, len(rec.Handlings), rec.Torn, downFor.Round(100*time.Millisecond),
		time.Since(started).Round(time.Second), c.seed, c.dir, strings.Join(st, " "))
	if len(rep.LostIDs) > 0 {
		fmt.Fprintf(os.Stderr, "chaos lost (first %d): %s\n", len(rep.LostIDs), strings.Join(rep.LostIDs, " "))
	}
	if len(rep.Contradicted) > 0 {
		fmt.Fprintf(os.Stderr, "chaos contradictions (first %d): %s\n", len(rep.Contradicted), strings.Join(rep.Contradicted, "; "))
	}
	line := rep.Line(c.broker, lag)
	if c.scenario != "" {
		line = strings.Replace(line, "broker="+c.broker, "broker="+c.broker+" scenario="+c.scenario, 1)
	}
	fmt.Println(line)
	if rep.Failed(lag) {
		if rep.Duplicates > rep.Bound {
			fmt.Fprintf(os.Stderr, "chaos: FAIL: %d duplicates exceed the bound %d\n", rep.Duplicates, rep.Bound)
		} else {
			fmt.Fprintln(os.Stderr, "chaos: FAIL")
		}
		return 1, nil
	}
	return 0, nil
}

// windowFlags registers the flags of the bound's windows on fs; the
// returned function gives the windows after parsing, each unset one at its
// default for the broker and the variant.
func windowFlags(fs *flag.FlagSet) func(broker string, graceful bool) chaos.Windows {
	var w chaos.Windows
	fs.DurationVar(&w.Commit, "window-commit", time.Second, "bound: how long a handled record may stay uncommitted")
	fs.DurationVar(&w.Reach, "window-reach", 0, "bound: how long after the broker's return commits may be refused (default 10s)")
	fs.DurationVar(&w.Rebalance, "window-rebalance", 0, "bound: how long after a group change the other consumers may lose commits (default: 10s on Kafka, 0 on Pulsar: a Shared subscription does not rebalance)")
	fs.IntVar(&w.PerStop, "window-per-stop", 0, "bound: duplicates each SIGTERM may cost (default: 1 with -graceful)")
	fs.DurationVar(&w.BrokerLoss, "window-broker-loss", 0, "bound: how far back a broker kill may forget acknowledgements (default: 2s on Kafka, 30s on Pulsar)")
	return func(broker string, graceful bool) chaos.Windows {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["window-reach"] {
			w.Reach = 10 * time.Second
		}
		if !set["window-per-stop"] && graceful {
			w.PerStop = 1
		}
		if !set["window-rebalance"] && broker == "kafka" {
			// kafka-go's heartbeat interval is 3 s: a member learns of a
			// rebalance that late, and keeps handing out what it fetched.
			// Measured in the graceful variant too: a rebalance costs the
			// other consumers commits of records they had handled, which
			// they then read again (see README, "The duplicate bound").
			w.Rebalance = 10 * time.Second
		}
		if !set["window-broker-loss"] {
			w.BrokerLoss = 2 * time.Second
			if broker == "pulsar" {
				// Measured: acknowledgements confirmed up to 11 s before a
				// kill -9 of the standalone came back after its restart.
				w.BrokerLoss = 30 * time.Second
			}
		}
		return w
	}
}

// accountMain is `bqchaos account -dir D -broker B [-graceful]`: the
// accounting of a kept run directory again, from its records and the
// read-back a run stored, with the given windows.
func accountMain(args []string) int {
	fs := flag.NewFlagSet("bqchaos account", flag.ContinueOnError)
	dir := fs.String("dir", "", "a kept run directory")
	broker := fs.String("broker", "", "kafka or pulsar")
	graceful := fs.Bool("graceful", false, "the run was graceful")
	concurrency := fs.Int("concurrency", 1, "the run's -concurrency")
	windows := windowFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rec, err := chaos.ReadRecords(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bqchaos account: %v\n", err)
		return 1
	}
	rb, err := chaos.ReadReadBack(*dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bqchaos account: %v\n", err)
		return 1
	}
	w := windows(*broker, *graceful)
	w.InFlight = *concurrency
	rep := chaos.Account(rec, rb, w)
	strict := w
	strict.Rebalance = 0
	fmt.Fprintf(os.Stderr, "chaos detail: bound=%d bound_without_rebalance=%d unexplained=%d crashes=%d publish_retries=%d handlings=%d\n",
		rep.Bound, chaos.Bound(rec, rb, strict), rep.Unexplained, rep.Crashes, rb.PublishRetries, len(rec.Handlings))
	fmt.Println(rep.Line(*broker, rb.Lag))
	if rep.Failed(rb.Lag) {
		return 1
	}
	return 0
}

// produce publishes n envelopes spread over d, recording each batch of ids
// (fsynced) before publishing it. A failed publish is repeated with the
// same id until it succeeds (counted in retries).
func produce(ctx context.Context, app *babelqueue.App, j *chaos.Journal, gate *sync.RWMutex, run string, n, keys int, d time.Duration,
	retries *atomic.Int64, log *slog.Logger) error {
	const batch = 20
	start := time.Now()
	for seq := 0; seq < n; seq += batch {
		due := start.Add(time.Duration(int64(d) * int64(seq) / int64(n)))
		if !sleepCtx(ctx, time.Until(due)) {
			return ctx.Err()
		}
		hi := min(seq+batch, n)
		gate.RLock()
		lines := make([]string, 0, hi-seq)
		for i := seq; i < hi; i++ {
			lines = append(lines, chaos.ID(run, i)+"\n")
		}
		if err := j.Append(lines...); err != nil {
			gate.RUnlock()
			return err
		}
		var wg sync.WaitGroup
		errs := make([]error, hi-seq)
		for i := seq; i < hi; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i-seq] = publishOne(ctx, app, chaos.ID(run, i), i, keys, retries, log)
			}()
		}
		wg.Wait()
		gate.RUnlock()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// keysFor is how many record keys the producer spreads its envelopes over:
// none (keyless, the binding's own spread) when consumers handle one
// record at a time, 64 when they run several at once, so that their
// per-key lanes have keys to order and to run side by side.
func keysFor(concurrency int) int {
	if concurrency > 1 {
		return 64
	}
	return 0
}

func publishOne(ctx context.Context, app *babelqueue.App, id string, seq, keys int, retries *atomic.Int64, log *slog.Logger) error {
	opts := []babelqueue.PublishOption{babelqueue.WithEnvelopeOptions(babelqueue.WithID(id))}
	if keys > 0 {
		opts = append(opts, babelqueue.WithKey([]byte("key-"+strconv.Itoa(seq%keys))))
	}
	for attempt := 0; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := app.Publish(pctx, URN, map[string]any{"seq": seq}, opts...)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || attempt >= 40 {
			return fmt.Errorf("publish %s: %w", id, err)
		}
		retries.Add(1)
		log.Warn("publish failed; repeating it with the same id", "id", id, "err", err)
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

// restartBroker pauses the producer, kill -9s the broker, waits a few
// seconds and starts it again on its kept data. It returns how long the
// broker was down.
func restartBroker(ctx context.Context, script string, gate *sync.RWMutex, sup *supervisor, rnd *rand.Rand, log *slog.Logger) (time.Duration, error) {
	gate.Lock()
	defer gate.Unlock()
	log.Info("broker restart: kill -9")
	if err := runScript(ctx, script, "kill", time.Minute); err != nil {
		return 0, err
	}
	down := time.Now()
	sup.event(chaos.BrokerKill, "")
	if !sleepCtx(ctx, time.Duration(2000+rnd.IntN(3000))*time.Millisecond) {
		return 0, ctx.Err()
	}
	if err := runScript(ctx, script, "start", 5*time.Minute); err != nil {
		return 0, err
	}
	sup.event(chaos.BrokerUp, "")
	d := time.Since(down)
	log.Info("broker restart: serving again", "down", d.Round(100*time.Millisecond))
	return d, nil
}

func runScript(ctx context.Context, script, verb string, limit time.Duration) error {
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(sctx, script, verb)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", script, verb, err)
	}
	return nil
}
