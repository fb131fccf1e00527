package bqtest

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of the CPU times in /proc:
// 100 on every Linux the project runs on.
const clockTick = 100

// PidCPU returns the user and system CPU time process pid has used so far,
// read from /proc/<pid>/stat. A benchmark reports it for a broker or a
// database server beside its own ProcessCPU. It returns 0 when the process
// is gone or the platform has no /proc.
func PidCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
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
