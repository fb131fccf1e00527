package brokertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
