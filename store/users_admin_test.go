package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func conflictReason(err error) string {
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ""
}

func TestUserManagementRules(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res := signUpOwner(t, db, "chefin@example.com")
	acct, owner := res.Account.ID, res.Owner
	other := signUpOwner(t, db, "fremd@example.com")

	admin, err := db.AddUser(ctx, acct, owner, store.NewUser{Email: "Admin@Example.com", Role: store.RoleAdmin, Password: "admin password"})
	if err != nil || admin.Email != "admin@example.com" || admin.Role != store.RoleAdmin {
		t.Fatalf("add admin: %+v %v", admin, err)
	}
	member, err := db.AddUser(ctx, acct, admin, store.NewUser{Email: "mitglied@example.com", Role: store.RoleMember, Password: "member password"})
	if err != nil {
		t.Fatal(err)
	}
	// Admins do not hand out the owner role; members manage nobody.
	if _, err := db.AddUser(ctx, acct, admin, store.NewUser{Email: "x@example.com", Role: store.RoleOwner, Password: "owner password"}); conflictReason(err) != store.ReasonOwnerOnly {
		t.Errorf("admin adds an owner: %v", err)
	}
	if _, err := db.AddUser(ctx, acct, member, store.NewUser{Email: "y@example.com", Role: store.RoleMember, Password: "member password"}); conflictReason(err) != store.ReasonNotAdmin {
		t.Errorf("member adds a user: %v", err)
	}
	// A user of another account manages nothing here, and ids of other accounts are not found.
	if _, err := db.AddUser(ctx, acct, other.Owner, store.NewUser{Email: "z@example.com", Role: store.RoleMember, Password: "member password"}); conflictReason(err) != store.ReasonNotAdmin {
		t.Errorf("foreign owner adds a user: %v", err)
	}
	if _, err := db.ChangeUserRole(ctx, acct, owner, other.Owner.ID, store.RoleMember); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("change another account's user: %v", err)
	}
	if _, err := db.RemoveUser(ctx, acct, owner, other.Owner.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("remove another account's user: %v", err)
	}
	// Field errors.
	_, err = db.AddUser(ctx, acct, owner, store.NewUser{Email: "admin@example.com", Role: "chef", Password: "kurz"})
	var ve *store.ValidationError
	if !errors.As(err, &ve) || ve.Fields["role"] == "" || ve.Fields["password"] == "" {
		t.Errorf("invalid user: %v", err)
	}
	if _, err := db.AddUser(ctx, acct, owner, store.NewUser{Email: "admin@example.com", Role: store.RoleMember, Password: "lang genug 123"}); !errors.As(err, &ve) || ve.Fields["email"] == "" {
		t.Errorf("taken address: %v", err)
	}

	// Nobody changes their own role or removes themselves; admins leave owners alone.
	if _, err := db.ChangeUserRole(ctx, acct, owner, owner.ID, store.RoleAdmin); conflictReason(err) != store.ReasonSelf {
		t.Errorf("own role: %v", err)
	}
	if _, err := db.RemoveUser(ctx, acct, admin, admin.ID); conflictReason(err) != store.ReasonSelf {
		t.Errorf("remove oneself: %v", err)
	}
	if _, err := db.ChangeUserRole(ctx, acct, admin, owner.ID, store.RoleMember); conflictReason(err) != store.ReasonOwnerOnly {
		t.Errorf("admin demotes the owner: %v", err)
	}
	if _, err := db.ChangeUserRole(ctx, acct, admin, member.ID, store.RoleOwner); conflictReason(err) != store.ReasonOwnerOnly {
		t.Errorf("admin promotes to owner: %v", err)
	}
	if _, err := db.ChangeUserRole(ctx, acct, member, admin.ID, store.RoleMember); conflictReason(err) != store.ReasonNotAdmin {
		t.Errorf("member demotes an admin: %v", err)
	}
	if u, err := db.ChangeUserRole(ctx, acct, admin, member.ID, store.RoleAdmin); err != nil || u.Role != store.RoleAdmin {
		t.Fatalf("admin promotes a member: %+v %v", u, err)
	}

	// Two owners: one may demote the other, but then the last one stays.
	if _, err := db.ChangeUserRole(ctx, acct, owner, admin.ID, store.RoleOwner); err != nil {
		t.Fatal(err)
	}
	admin.Role = store.RoleOwner
	if _, err := db.ChangeUserRole(ctx, acct, admin, owner.ID, store.RoleMember); err != nil {
		t.Fatalf("second owner demotes the first: %v", err)
	}
	// The demoted one acts with their role as stored now, not as they came in.
	if _, err := db.RemoveUser(ctx, acct, owner, admin.ID); conflictReason(err) != store.ReasonNotAdmin {
		t.Errorf("demoted owner removes the new owner: %v", err)
	}

	// Removing ends the user's sessions and is logged with the actor.
	if _, err := db.RemoveUser(ctx, acct, admin, member.ID); err != nil {
		t.Fatal(err)
	}
	users, err := db.AccountUsers(ctx, acct)
	if err != nil || len(users) != 2 || users[0].ID != admin.ID || users[1].ID != owner.ID {
		t.Fatalf("users after removal: %+v %v", users, err)
	}
	acts, _, err := db.ActivityLog(ctx, acct, store.ActivityFilter{ObjectType: store.ObjectUser}, store.Page{Page: 1, PerPage: 20})
	if err != nil || len(acts) != 6 || acts[0].Action != "user.removed" || acts[0].ActorType != store.ActorUser || *acts[0].ActorID != admin.ID {
		t.Errorf("activity: %+v %v", acts, err)
	}
}

// Two owners demoting each other at once leave one owner.
func TestLastOwnerUnderRace(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res := signUpOwner(t, db, "eins@example.com")
	acct, a := res.Account.ID, res.Owner
	b, err := db.AddUser(ctx, acct, a, store.NewUser{Email: "zwei@example.com", Role: store.RoleOwner, Password: "owner password"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { _, errs[0] = db.ChangeUserRole(ctx, acct, a, b.ID, store.RoleAdmin) })
	wg.Go(func() { _, errs[1] = db.ChangeUserRole(ctx, acct, b, a.ID, store.RoleAdmin) })
	wg.Wait()
	var owners int
	if err := db.GetContext(ctx, &owners, `SELECT count(*) FROM users WHERE account_id = $1 AND role = 'owner'`, acct); err != nil || owners != 1 {
		t.Fatalf("%d owners after the race (%v, %v)", owners, errs[0], errs[1])
	}
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Errorf("exactly one demotion must win: %v, %v", errs[0], errs[1])
	}
}

func TestActivityLogCapped(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := signUpOwner(t, db, "log@example.com").Account.ID
	other := signUpOwner(t, db, "fremd-log@example.com").Account.ID
	for _, a := range []int64{acct, other} {
		if _, err := db.ExecContext(ctx, `INSERT INTO activity_log (account_id, actor_type, action, object_type, object_id)
SELECT $1, 'system', 'contact.created', CASE WHEN i % 3 = 0 THEN 'list' ELSE 'contact' END, i FROM generate_series(1, 30) AS i`, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		f            store.ActivityFilter
		max, total   int
		capped       bool
		page, onPage int
	}{
		{store.ActivityFilter{}, 20, 20, true, 1, 10},
		{store.ActivityFilter{}, 50, 30, false, 3, 10},
		{store.ActivityFilter{}, 30, 30, false, 3, 10},
		{store.ActivityFilter{ObjectType: "list"}, 9, 9, true, 1, 10},
		{store.ActivityFilter{ObjectType: "list"}, 10, 10, false, 1, 10},
	} {
		acts, total, capped, err := db.ActivityLogCapped(ctx, acct, tc.f, store.Page{Page: tc.page, PerPage: 10}, tc.max)
		if err != nil || total != tc.total || capped != tc.capped || len(acts) != tc.onPage {
			t.Errorf("%+v max %d: %d entries, total %d, capped %v, %v", tc.f, tc.max, len(acts), total, capped, err)
		}
		for _, a := range acts {
			if a.AccountID != acct {
				t.Fatal("another account's entry")
			}
		}
	}
}
