package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestPasswordCost checks the test-only cost option: a DB opened without it
// hashes at the production cost, one opened with it at the given cost, and
// both hashes sign in (a hash carries its own parameters).
func TestPasswordCost(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	def, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = def.Close() })
	cheap, err := store.Open(ctx, url, store.PasswordCost(store.PasswordParams{Time: 1, Memory: 8, Threads: 1}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cheap.Close() })

	now := time.Now()
	for _, c := range []struct {
		db     *store.DB
		email  string
		params string
	}{
		{def, "default@example.com", "$m=65536,t=3,p=2$"},
		{cheap, "cheap@example.com", "$m=8,t=1,p=1$"},
	} {
		res, err := c.db.CreateAccount(ctx, store.NewAccount{Name: "A", Email: c.email, Password: "correct horse battery"})
		if err != nil {
			t.Fatal(err)
		}
		var hash string
		if err := c.db.GetContext(ctx, &hash, `SELECT password_hash FROM users WHERE id = $1`, res.Owner.ID); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(hash, c.params) {
			t.Errorf("%s: hash %s, want parameters %s", c.email, hash, c.params)
		}
		// Either pool verifies either hash.
		for _, db := range []*store.DB{def, cheap} {
			if _, err := db.SignIn(ctx, store.Credentials{Email: c.email, Password: "correct horse battery", IP: "192.0.2.1"}, now); err != nil {
				t.Errorf("%s: sign-in: %v", c.email, err)
			}
			if _, err := db.SignIn(ctx, store.Credentials{Email: c.email, Password: "wrong horse battery", IP: "192.0.2.1"}, now); !errors.Is(err, store.ErrInvalidLogin) {
				t.Errorf("%s: wrong password: %v, want ErrInvalidLogin", c.email, err)
			}
		}
	}
	// Unknown addresses are refused at either cost.
	for _, db := range []*store.DB{def, cheap} {
		if _, err := db.SignIn(ctx, store.Credentials{Email: "nobody@example.com", Password: "correct horse battery", IP: "192.0.2.2"}, now); !errors.Is(err, store.ErrInvalidLogin) {
			t.Errorf("unknown address: %v, want ErrInvalidLogin", err)
		}
	}
}
