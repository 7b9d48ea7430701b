package dbtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// CPUTime is the CPU time used so far by this process and by the PostgreSQL
// client backends serving db's database (other databases' backends and the
// server's background processes are left out, so a server shared with other
// test runs does not count theirs). Benchmarks report CPU per operation from
// two calls: on a shared machine throughput depends on what else runs, CPU
// per operation much less. The server must run on this machine (/proc).
func CPUTime(tb testing.TB, db *store.DB) (self, pg time.Duration) {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	var pids []int
	if err := db.SelectContext(context.Background(), &pids,
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`); err != nil {
		tb.Fatal(err)
	}
	for _, pid := range pids {
		pg += ProcessCPU(pid)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), pg
}

// ProcessCPU is the CPU time (user and system) a process of this machine has
// used so far, in /proc's ticks of 10 ms; 0 when it is gone.
func ProcessCPU(pid int) time.Duration {
	return time.Duration(procTicks(pid)) * (time.Second / 100) // USER_HZ
}

// procTicks reads a process's CPU ticks (user + system); 0 if it is gone.
func procTicks(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ") ".
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}
