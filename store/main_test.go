package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperDBEnv) != "" {
		// A consumer process started by TestOutboxConsumersAcrossProcesses: it
		// uses its parent's database and needs no server or template of its own.
		os.Exit(m.Run())
	}
	dbtest.Main(m)
}

// newAccount creates an account on plan with its owner and returns its id.
func newAccount(t testing.TB, db *store.DB, plan string) int64 {
	t.Helper()
	res, err := db.CreateAccount(context.Background(), store.NewAccount{
		Name: "Acme " + store.RandomString(6), Email: store.RandomString(8) + "@example.com", Plan: plan,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Account.ID
}

// newContactPlan adds a plan with the api feature, room for maxContacts
// contacts and one list, for tests of the contact limit.
func newContactPlan(t *testing.T, db *store.DB, name string, maxContacts int64) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), `INSERT INTO plans (name, features, max_contacts, max_lists, max_sends_per_day, max_storage_bytes)
		VALUES ($1, '{api}', $2, 1, 10, 1000)`, name, maxContacts); err != nil {
		t.Fatal(err)
	}
}
