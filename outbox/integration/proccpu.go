package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the kernel's USER_HZ: /proc reports CPU times in 1/100 s on
// every Linux the project runs on.
const clockTick = 100

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
	s := CPUSample{Self: statCPU("/proc/self/stat"), Others: map[string]time.Duration{}}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		for _, n := range names {
			if name == n {
				s.Others[d] = statCPU(filepath.Join(d, "stat"))
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

// PidCPU returns the CPU time used so far by process pid (0 when gone).
func PidCPU(pid int) time.Duration {
	return statCPU("/proc/" + strconv.Itoa(pid) + "/stat")
}

// statCPU reads utime+stime of one /proc/<pid>/stat file (0 when gone).
func statCPU(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / clockTick
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
