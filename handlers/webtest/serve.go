package webtest

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// Serve is `rundbrief serve`, built from this module and run on a
// benchmark's database in a process of its own, with the configuration an
// operator would give it. Its CPU time is the app's, with the middleware and
// the workers serve runs, and without the load generator's, which is the
// benchmark's process: measured in one process, the load generator's HTTP
// client counted as a quarter of the app's CPU per request.
type Serve struct {
	URL string
	cmd *exec.Cmd
	out bytes.Buffer // what serve logged, shown when it fails
}

// StartServe builds the binary, starts it on dbURL (a migrated database)
// and waits until it answers /healthz. env adds settings (KEY=value) after
// the benchmark's own, which it may override. It is stopped with SIGTERM
// when the benchmark ends.
func StartServe(b testing.TB, dbURL string, env ...string) *Serve {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "rundbrief")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/rundbrief/rundbrief/cmd/rundbrief").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	sp := &Serve{URL: "http://" + addr}
	sp.cmd = exec.Command(bin, "serve")
	// The operator's own settings in this environment stay out: only these count.
	inherited := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "RUNDBRIEF_") || strings.HasPrefix(kv, "DATABASE_URL=")
	})
	sp.cmd.Env = append(inherited, "DATABASE_URL="+dbURL, "RUNDBRIEF_ADDR="+addr, "RUNDBRIEF_DATA_DIR="+filepath.Join(dir, "data"),
		"RUNDBRIEF_SECRET=benchmark secret, at least 32 characters long", "RUNDBRIEF_RATE_LIMIT=1000000000",
		"RUNDBRIEF_METRICS_TOKEN=benchmark")
	sp.cmd.Env = append(sp.cmd.Env, env...)
	sp.cmd.Stdout, sp.cmd.Stderr = &sp.out, &sp.out
	if err := sp.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = sp.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = sp.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = sp.cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get(sp.URL + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return sp
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("serve did not answer /healthz within a minute:\n%s", sp.out.String())
		}
	}
}

// CPUTime is the CPU time serve has used so far (user and system).
func (sp *Serve) CPUTime() time.Duration { return dbtest.ProcessCPU(sp.cmd.Process.Pid) }
