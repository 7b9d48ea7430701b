package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func signUpOwner(t *testing.T, db *store.DB, email string) store.CreatedAccount {
	t.Helper()
	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Acme", Email: email, Password: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSignIn(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res := signUpOwner(t, db, "owner@example.com")
	now := time.Now()

	u, err := db.SignIn(ctx, store.Credentials{Email: " Owner@Example.com ", Password: "correct horse battery", IP: "192.0.2.1"}, now)
	if err != nil || u.ID != res.Owner.ID || u.AccountID != res.Account.ID || u.Role != store.RoleOwner {
		t.Fatalf("sign in: %+v %v", u, err)
	}
	for _, c := range []store.Credentials{
		{Email: "owner@example.com", Password: "wrong horse battery"},
		{Email: "nobody@example.com", Password: "correct horse battery"},
		{Email: "owner@example.com", Password: ""},
	} {
		c.IP = "192.0.2.1"
		if _, err := db.SignIn(ctx, c, now); !errors.Is(err, store.ErrInvalidLogin) {
			t.Errorf("%+v: %v, want ErrInvalidLogin", c, err)
		}
	}

	if _, err := db.ExecContext(ctx, `UPDATE accounts SET blocked_at = now() WHERE id = $1`, res.Account.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SignIn(ctx, store.Credentials{Email: "owner@example.com", Password: "wrong", IP: "192.0.2.1"}, now); !errors.Is(err, store.ErrInvalidLogin) {
		t.Errorf("blocked account, wrong password: %v (must not reveal the block)", err)
	}
	if _, err := db.SignIn(ctx, store.Credentials{Email: "owner@example.com", Password: "correct horse battery", IP: "192.0.2.1"}, now); !errors.Is(err, store.ErrAccountBlocked) {
		t.Errorf("blocked account: %v", err)
	}
}

// The throttle counts failures per address and per IP over LoginWindow, in the
// database, so every process sees the same count.
func TestSignInThrottle(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	a, b := dbtest.Open(t, url), dbtest.Open(t, url)
	signUpOwner(t, a, "owner@example.com")
	signUpOwner(t, a, "other@example.com")
	now := time.Now()
	right := store.Credentials{Email: "owner@example.com", Password: "correct horse battery", IP: "192.0.2.1"}
	wrong := right
	wrong.Password = "guess"

	// A success clears earlier failures of the address.
	for range store.MaxLoginFailuresPerMail - 1 {
		if _, err := a.SignIn(ctx, wrong, now); !errors.Is(err, store.ErrInvalidLogin) {
			t.Fatal(err)
		}
	}
	if _, err := b.SignIn(ctx, right, now); err != nil {
		t.Fatalf("fourth failure must not lock: %v", err)
	}
	for i := range store.MaxLoginFailuresPerMail {
		if _, err := a.SignIn(ctx, wrong, now.Add(time.Duration(i)*time.Minute)); !errors.Is(err, store.ErrInvalidLogin) {
			t.Fatal(err)
		}
	}
	later := now.Add(5 * time.Minute)
	if _, err := b.SignIn(ctx, right, later); !errors.Is(err, store.ErrLoginThrottled) {
		t.Fatalf("after %d failures, on another pool: %v", store.MaxLoginFailuresPerMail, err)
	}
	// Unknown addresses are throttled alike (no hint which ones exist).
	ghost := store.Credentials{Email: "ghost@example.com", Password: "x", IP: "198.51.100.9"}
	for range store.MaxLoginFailuresPerMail {
		if _, err := a.SignIn(ctx, ghost, now); !errors.Is(err, store.ErrInvalidLogin) {
			t.Fatal(err)
		}
	}
	if _, err := a.SignIn(ctx, ghost, now); !errors.Is(err, store.ErrLoginThrottled) {
		t.Errorf("unknown address not throttled: %v", err)
	}
	// The window slides: once the oldest failure is older than LoginWindow, one
	// more attempt is allowed (refused attempts did not count).
	if _, err := b.SignIn(ctx, right, now.Add(store.LoginWindow+time.Second)); err != nil {
		t.Errorf("after the window: %v", err)
	}

	// Per IP: many addresses from one IP.
	for i := range store.MaxLoginFailuresPerIP {
		c := store.Credentials{Email: "spray" + string(rune('a'+i)) + "@example.com", Password: "x", IP: "203.0.113.5"}
		if _, err := a.SignIn(ctx, c, now); !errors.Is(err, store.ErrInvalidLogin) {
			t.Fatal(err)
		}
	}
	other := store.Credentials{Email: "other@example.com", Password: "correct horse battery", IP: "203.0.113.5"}
	if _, err := b.SignIn(ctx, other, now); !errors.Is(err, store.ErrLoginThrottled) {
		t.Errorf("IP after %d failures: %v", store.MaxLoginFailuresPerIP, err)
	}
	other.IP = "203.0.113.6"
	if _, err := b.SignIn(ctx, other, now); err != nil {
		t.Errorf("another IP: %v", err)
	}
}

// Parallel guesses cannot get past the limit: each attempt is recorded before its
// password is checked.
func TestSignInThrottleHoldsUnderParallelGuesses(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	signUpOwner(t, db, "owner@example.com")
	now := time.Now()
	var mu sync.Mutex
	checked := 0
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			_, err := db.SignIn(ctx, store.Credentials{Email: "owner@example.com", Password: "guess", IP: "192.0.2." + string(rune('0'+i%10))}, now)
			if errors.Is(err, store.ErrInvalidLogin) {
				mu.Lock()
				checked++
				mu.Unlock()
			} else if !errors.Is(err, store.ErrLoginThrottled) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if checked > store.MaxLoginFailuresPerMail || checked == 0 {
		t.Errorf("%d of 12 parallel guesses were checked, want 1 to %d", checked, store.MaxLoginFailuresPerMail)
	}
}

func TestChangePassword(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res := signUpOwner(t, db, "owner@example.com")
	other := signUpOwner(t, db, "other@example.com")
	acct, user := res.Account.ID, res.Owner.ID
	now := time.Now()
	change := func(current, next string) error {
		return db.ChangePassword(ctx, acct, user, store.PasswordChange{Current: current, New: next, IP: "192.0.2.1"}, now)
	}
	for _, tc := range []struct {
		current, next, field string
	}{
		{"", "a new password!", "current_password"},
		{"correct horse battery", "short", "new_password"},
		{"correct horse battery", "correct horse battery", "new_password"},
		{"wrong horse battery", "a new password!", "current_password"},
	} {
		var ve *store.ValidationError
		if err := change(tc.current, tc.next); !errors.As(err, &ve) || ve.Fields[tc.field] == "" {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	// Another account's user id is not found.
	if err := db.ChangePassword(ctx, other.Account.ID, user, store.PasswordChange{Current: "correct horse battery", New: "a new password!"}, now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cross-account change: %v", err)
	}
	if err := change("correct horse battery", "a new password!"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SignIn(ctx, store.Credentials{Email: "owner@example.com", Password: "a new password!"}, now); err != nil {
		t.Errorf("new password: %v", err)
	}
	if _, err := db.SignIn(ctx, store.Credentials{Email: "owner@example.com", Password: "correct horse battery"}, now); !errors.Is(err, store.ErrInvalidLogin) {
		t.Errorf("old password: %v", err)
	}
	// Wrong current passwords count as failed sign-ins.
	for range store.MaxLoginFailuresPerMail {
		_ = change("guess guess", "another password")
	}
	if err := change("a new password!", "another password"); !errors.Is(err, store.ErrLoginThrottled) {
		t.Errorf("after %d wrong current passwords: %v", store.MaxLoginFailuresPerMail, err)
	}
}

func TestViewerIsolatesAccounts(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	a := signUpOwner(t, db, "a@example.com")
	b := signUpOwner(t, db, "b@example.com")
	v, err := db.Viewer(ctx, a.Account.ID, a.Owner.ID)
	if err != nil || v.User.Email != "a@example.com" || v.Account.ID != a.Account.ID || v.Plan.Name != "business" || !v.Plan.Has("api") {
		t.Fatalf("viewer %+v %v", v, err)
	}
	if _, err := db.Viewer(ctx, b.Account.ID, a.Owner.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("user of A with account B: %v", err)
	}
}

func TestCreateUser(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res := signUpOwner(t, db, "owner@example.com")
	u, err := db.CreateUser(ctx, res.Account.ID, store.NewUser{Email: " Admin@Example.com", Name: "Ada", Role: store.RoleAdmin, Password: "0123456789"})
	if err != nil || u.Email != "admin@example.com" || u.Role != store.RoleAdmin || !u.CanManageKeys() {
		t.Fatalf("%+v %v", u, err)
	}
	var ve *store.ValidationError
	_, err = db.CreateUser(ctx, res.Account.ID, store.NewUser{Email: "x", Role: "root", Password: "short"})
	if !errors.As(err, &ve) || len(ve.Fields) != 3 {
		t.Errorf("invalid user: %v", err)
	}
	_, err = db.CreateUser(ctx, res.Account.ID, store.NewUser{Email: "OWNER@example.com", Role: store.RoleMember, Password: "0123456789"})
	if !errors.As(err, &ve) || ve.Fields["email"] == "" {
		t.Errorf("taken address: %v", err)
	}
	m, err := db.CreateUser(ctx, res.Account.ID, store.NewUser{Email: "m@example.com", Role: store.RoleMember, Password: "0123456789"})
	if err != nil || m.CanManageKeys() {
		t.Errorf("member %+v %v", m, err)
	}
}
