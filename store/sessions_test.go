package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// encode is session data as scs writes it.
func encode(t *testing.T, values map[string]any) []byte {
	t.Helper()
	b, err := scs.GobCodec{}.Encode(time.Now().Add(time.Hour), values)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSessionStoreIsSharedBetweenProcesses(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := store.NewSessionStore(dbtest.Open(t, url), log)
	b := store.NewSessionStore(dbtest.Open(t, url), log)

	if _, found, err := a.FindCtx(ctx, "nope"); found || err != nil {
		t.Fatalf("unknown token: found %v, err %v", found, err)
	}
	data := encode(t, map[string]any{"flash.message": "hallo"})
	if err := a.CommitCtx(ctx, "tok1", data, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, found, err := b.FindCtx(ctx, "tok1")
	if err != nil || !found || string(got) != string(data) {
		t.Fatalf("other process: found %v, err %v", found, err)
	}
	// Commit overwrites data and expiry.
	data2 := encode(t, map[string]any{"flash.message": "neu"})
	if err := b.CommitCtx(ctx, "tok1", data2, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := a.FindCtx(ctx, "tok1"); string(got) != string(data2) {
		t.Error("commit did not overwrite")
	}
	// Expired sessions are not found.
	if err := a.CommitCtx(ctx, "old", data, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := b.FindCtx(ctx, "old"); found {
		t.Error("expired session found")
	}
	// Delete ends it everywhere, and an unknown token is no error.
	if err := b.DeleteCtx(ctx, "tok1"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteCtx(ctx, "never-existed"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := a.FindCtx(ctx, "tok1"); found {
		t.Error("deleted session found")
	}
	// A request that loaded the session before it ended must not revive it.
	if err := a.CommitCtx(ctx, "tok1", data2, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := b.FindCtx(ctx, "tok1"); found {
		t.Error("an ended session came back with a late commit")
	}
}

func TestEndSessionsOfUserAndAccount(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	s := store.NewSessionStore(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	acctA, acctB := newAccount(t, db, "pro"), newAccount(t, db, "pro")
	var ownerA, ownerB int64
	if err := db.GetContext(ctx, &ownerA, `SELECT id FROM users WHERE account_id = $1`, acctA); err != nil {
		t.Fatal(err)
	}
	if err := db.GetContext(ctx, &ownerB, `SELECT id FROM users WHERE account_id = $1`, acctB); err != nil {
		t.Fatal(err)
	}
	member, err := db.CreateUser(ctx, acctA, store.NewUser{Email: "member@example.com", Role: store.RoleMember, Password: "0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string][2]int64{"a-owner": {acctA, ownerA}, "a-member": {acctA, member.ID}, "b-owner": {acctB, ownerB}}
	for tok, who := range sessions {
		data := encode(t, map[string]any{store.SessionAccountKey: who[0], store.SessionUserKey: who[1]})
		if err := s.CommitCtx(ctx, tok, data, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// Commit copies the signed-in user into the columns.
	var cols struct {
		AccountID *int64 `db:"account_id"`
		UserID    *int64 `db:"user_id"`
	}
	if err := db.GetContext(ctx, &cols, `SELECT account_id, user_id FROM sessions WHERE token = 'a-member'`); err != nil {
		t.Fatal(err)
	}
	if cols.AccountID == nil || *cols.AccountID != acctA || cols.UserID == nil || *cols.UserID != member.ID {
		t.Fatalf("columns %+v", cols)
	}

	live := func() map[string]bool {
		out := map[string]bool{}
		for tok := range sessions {
			_, found, err := s.FindCtx(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			out[tok] = found
		}
		return out
	}
	if err := db.EndUserSessions(ctx, acctA, ownerA, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := live(); got["a-owner"] || !got["a-member"] || !got["b-owner"] {
		t.Errorf("after ending A's owner: %v", got)
	}
	// A user id with the wrong account ends nothing.
	if err := db.EndUserSessions(ctx, acctB, member.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := live(); !got["a-member"] {
		t.Error("another account's call ended a session")
	}
	if err := db.EndAccountSessions(ctx, acctA, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := live(); got["a-member"] || !got["b-owner"] {
		t.Errorf("after ending account A: %v", got)
	}

	// Purge removes expired rows (tombstones included once expired), not live ones.
	if err := s.CommitCtx(ctx, "expired", encode(t, nil), time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM sessions`); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.Purge(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != len(sessions) {
		t.Errorf("%d rows after purging the expired one, want %d", n, len(sessions))
	}
	if err := s.Purge(ctx, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d rows after purging past every expiry", n)
	}
}
