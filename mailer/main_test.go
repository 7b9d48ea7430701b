package mailer_test

import (
	"testing"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestMain gives the dev outbox and Transports tests a real PostgreSQL.
func TestMain(m *testing.M) { dbtest.Main(m) }
