package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestCreateAccount(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: " Bäckerei Müller ", Email: " Owner@Example.COM ", Password: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Account.Plan != "business" || res.Account.Name != "Bäckerei Müller" || res.Owner.Email != "owner@example.com" || res.Owner.Role != "owner" {
		t.Errorf("created %+v", res)
	}
	if res.Password != "" {
		t.Error("a given password must not be echoed back")
	}
	var hash string
	if err := db.GetContext(ctx, &hash, `SELECT password_hash FROM users WHERE id = $1`, res.Owner.ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := store.CheckPassword(hash, "correct horse battery"); !ok || err != nil {
		t.Errorf("password does not verify: %v %v", ok, err)
	}
	if ok, _ := store.CheckPassword(hash, "wrong horse battery"); ok {
		t.Error("wrong password verifies")
	}

	gen, err := db.CreateAccount(ctx, store.NewAccount{Name: "B", Email: "b@example.com", Plan: "free"})
	if err != nil {
		t.Fatal(err)
	}
	if len(gen.Password) != 20 || gen.Account.Plan != "free" {
		t.Errorf("generated password %q, plan %s", gen.Password, gen.Account.Plan)
	}

	_, err = db.CreateAccount(ctx, store.NewAccount{Name: "", Email: "no-at", Password: "short", Plan: "gold"})
	var ve *store.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 4 {
		t.Fatalf("want 4 field errors, got %v", err)
	}
	_, err = db.CreateAccount(ctx, store.NewAccount{Name: "C", Email: "OWNER@example.com"})
	if !errors.As(err, &ve) || ve.Fields["email"] == "" {
		t.Errorf("duplicate owner email: %v", err)
	}
}

func TestValidEmail(t *testing.T) {
	for s, want := range map[string]bool{
		"a@example.com": true, "first.last+tag@sub.example.de": true,
		"": false, "a@b": false, "Name <a@example.com>": false, "a example@x.de": false, "@example.com": false,
	} {
		if got := store.ValidEmail(s); got != want {
			t.Errorf("ValidEmail(%q) = %v", s, got)
		}
	}
}
