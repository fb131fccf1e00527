package brokertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// EnvRestartScripts names the directory of the broker scripts (kafka.sh,
// pulsar.sh) a restart test may kill and start its broker with. `make
// restart-tests` sets it, together with a state directory and ports of the
// test's own broker instance (BQ_BROKERS_STATE, BQ_*_PORT), so that the
// shared brokers are never touched.
const EnvRestartScripts = "BQ_RESTART_SCRIPTS"

// BrokerScript runs `<broker>.sh verb` (kill: kill -9 of the JVM, data
// kept; start: start it again on its data and wait until it serves) from
// the directory of BQ_RESTART_SCRIPTS, within limit. It fails the test when
// BQ_RESTART_SCRIPTS or BQ_BROKERS_STATE is missing (a restart test never
// kills a broker it was not given) or when the script fails.
func BrokerScript(t testing.TB, broker, verb string, limit time.Duration) {
	t.Helper()
	dir := os.Getenv(EnvRestartScripts)
	if dir == "" || os.Getenv("BQ_BROKERS_STATE") == "" {
		t.Fatalf("%s and BQ_BROKERS_STATE must name the scripts and the state of a broker this test owns; run `make restart-tests`", EnvRestartScripts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, broker+".sh"), verb).CombinedOutput()
	if err != nil {
		t.Fatalf("%s.sh %s: %v\n%s", broker, verb, err, out)
	}
}

// Outage is a broker kill -9 and restart that publishers run across; Run
// carries it out.
type Outage struct {
	Broker string        // the script BrokerScript runs: "kafka" or "pulsar"
	Before time.Duration // publishing before the kill
	Down   time.Duration // from the kill until the start begins
	After  time.Duration // publishing after the broker serves again
}

// Run calls each publisher in a loop on a goroutine of its own across the
// outage, and returns how long the broker was away.
//
// The time away runs from the kill until the start script saw the broker
// serve. Every publisher loop has ended when Run returns, also when a script
// fails the test; a publisher bounds its own call (a context timeout), since
// Run waits for the call under way.
func (o Outage) Run(t testing.TB, publishers ...func()) time.Duration {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, publish := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				publish()
			}
		}()
	}
	defer wg.Wait()
	defer close(stop)
	time.Sleep(o.Before)
	killed := time.Now()
	BrokerScript(t, o.Broker, "kill", time.Minute)
	time.Sleep(o.Down)
	BrokerScript(t, o.Broker, "start", 5*time.Minute)
	away := time.Since(killed)
	time.Sleep(o.After)
	return away
}

// Outcomes sorts the publishes of a restart test by outcome: acknowledged,
// unknown (the write may or may not be stored) or refused.
//
// Add is safe for concurrent use; read the fields once the publishers ended.
type Outcomes struct {
	mu      sync.Mutex
	Acked   map[string]bool // ids acknowledged
	Refused map[string]bool // ids refused: never written
	Unknown []error         // the errors of the unknown outcomes, in order
}

// Add records the outcome of publishing id: acknowledged when err is nil,
// unknown when unknown is set, refused otherwise.
func (o *Outcomes) Add(id string, err error, unknown bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		if o.Acked == nil {
			o.Acked = map[string]bool{}
		}
		o.Acked[id] = true
	case unknown:
		o.Unknown = append(o.Unknown, err)
	default:
		if o.Refused == nil {
			o.Refused = map[string]bool{}
		}
		o.Refused[id] = true
	}
}

// Tally compares the copies stored per id with the outcomes: the ids
// acknowledged or republished but never stored, the copies beyond the first
// of any id, and the refused ids stored after all.
func (o *Outcomes) Tally(stored map[string]int, republished []string) (lost, dups, refusedStored int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.Acked {
		if stored[id] == 0 {
			lost++
		}
	}
	for _, id := range republished {
		if stored[id] == 0 {
			lost++
		}
	}
	for id := range o.Refused {
		if stored[id] > 0 {
			refusedStored++
		}
	}
	for _, n := range stored {
		dups += max(n-1, 0)
	}
	return lost, dups, refusedStored
}
