package store_test

import (
	"context"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// newAccount creates an account on plan with its owner and returns its id.
func newAccount(t *testing.T, db *store.DB, plan string) int64 {
	t.Helper()
	res, err := db.CreateAccount(context.Background(), store.NewAccount{
		Name: "Acme " + store.RandomString(6), Email: store.RandomString(8) + "@example.com", Plan: plan,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Account.ID
}
