package mailer_test

import (
	"os"
	"testing"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestMain gives the dev outbox and Transports tests a real PostgreSQL. A
// binary re-executed by the kill test (kill_test.go) runs a send worker
// instead, as a `serve` process would, until it is killed or stopped.
func TestMain(m *testing.M) {
	if url := os.Getenv(sendChildEnv); url != "" {
		os.Exit(runSendChild(url))
	}
	dbtest.Main(m)
}
