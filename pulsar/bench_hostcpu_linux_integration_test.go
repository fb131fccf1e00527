//go:build integration && linux

package pulsar

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc: 100 on every
// Linux platform Go supports.
const clockTicks = 100

// hostCPU is a reading of the machine's and the test broker's CPU counters
// from /proc, taken around a timed phase of a benchmark.
type hostCPU struct {
	busy, total time.Duration // all cores: not idle (nor iowait), and all
	broker      time.Duration // the broker JVM's user and system time; 0 when unknown
}

// readHostCPU reads /proc/stat and, when brokerPID is above 0, the
// broker's /proc/<pid>/stat.
func readHostCPU(brokerPID int) hostCPU {
	var h hostCPU
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		for i := 1; i < len(f) && i <= 8; i++ {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			d := time.Duration(v) * time.Second / clockTicks
			h.total += d
			if i != 4 && i != 5 { // idle and iowait
				h.busy += d
			}
		}
	}
	if brokerPID > 0 {
		h.broker = bqtest.PidCPU(brokerPID)
	}
	return h
}

// pulsarBrokerPID returns the pid of the test broker's JVM: BQ_PULSAR_PID
// when set, else the pid file tools/brokers/pulsar.sh writes in its state
// directory; 0 when neither names a running process.
func pulsarBrokerPID() int {
	if v := os.Getenv("BQ_PULSAR_PID"); v != "" {
		pid, _ := strconv.Atoi(v)
		return pid
	}
	dir := os.Getenv("BQ_BROKERS_STATE")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "babelqueue-brokers")
	}
	b, err := os.ReadFile(filepath.Join(dir, "pulsar", "pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		return 0
	}
	return pid
}
