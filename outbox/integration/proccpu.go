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

// ProcCPU returns the CPU time (user and system) used so far by this
// process and by every process whose command name is one of names (for
// example "postgres": the server and all its backends), read from /proc.
// Processes that end between two readings drop out of the later one, so
// a difference is exact only for processes that live across both.
func ProcCPU(names ...string) (self, others time.Duration) {
	self = statCPU("/proc/self/stat")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		for _, n := range names {
			if name == n {
				others += statCPU(filepath.Join(d, "stat"))
				break
			}
		}
	}
	return self, others
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
