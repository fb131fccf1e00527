package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// CPUSample is the CPU time (user and system) used so far by this
// process and by each process of the names given to SampleCPU, read from
// /proc.
type CPUSample struct {
	Self   time.Duration
	Others map[string]time.Duration // by /proc/<pid> directory
}

// SampleCPU reads the CPU time of this process and of every process whose
// command name is one of names (for example "postgres": the server and
// all its backends).
func SampleCPU(names ...string) CPUSample {
	s := CPUSample{Self: bqtest.PidCPU(os.Getpid()), Others: map[string]time.Duration{}}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		for _, n := range names {
			if name == n {
				pid, _ := strconv.Atoi(filepath.Base(d))
				s.Others[d] = bqtest.PidCPU(pid)
				break
			}
		}
	}
	return s
}

// Since returns the CPU time used between an earlier sample and s: by
// this process, and by the other processes (all of it for one that
// started in between; one that ended in between is left out, its last
// reading unknown).
func (s CPUSample) Since(earlier CPUSample) (self, others time.Duration) {
	for d, t := range s.Others {
		others += t - earlier.Others[d]
	}
	return s.Self - earlier.Self, others
}

// ListenerPID returns the id of the process listening on TCP port (0 when
// none is found, for example when it belongs to another user), from
// /proc/net/tcp{,6} and the socket links under /proc/<pid>/fd.
func ListenerPID(port int) int {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// local_address is "ADDR:PORT" in hex; state 0A is LISTEN.
			if len(fs) < 10 || fs[3] != "0A" {
				continue
			}
			i := strings.LastIndexByte(fs[1], ':')
			if p, err := strconv.ParseInt(fs[1][i+1:], 16, 32); err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		fds, _ := filepath.Glob(d + "/fd/*")
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && inodes[l] {
				pid, _ := strconv.Atoi(filepath.Base(d))
				return pid
			}
		}
	}
	return 0
}
