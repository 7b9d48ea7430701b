package dbtest

import (
	osexec "os/exec"
	"testing"
)

// BusyLoops starts n processes that spin on the CPU until the test ends: the
// "busy machine" runs of the benchmarks (their -busy flag), where other work
// takes cores away from the service and PostgreSQL. They are processes of
// their own, not goroutines, so that CPUTime does not count them and the
// figures per operation stay comparable with a quiet run.
func BusyLoops(tb testing.TB, n int) {
	tb.Helper()
	for range n {
		cmd := osexec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			tb.Fatalf("dbtest: busy loop: %v", err)
		}
		tb.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	if n > 0 {
		tb.Logf("%d busy loops on the cores", n)
	}
}
