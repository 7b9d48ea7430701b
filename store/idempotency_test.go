package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// RecordIdempotent stores the response in the caller's transaction, and fails
// that transaction when the request no longer holds its key, so that an effect
// never commits without its response.
func TestRecordIdempotentCommitsWithTheTransaction(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	hash := []byte("POST /v1/emails/send")
	claim := func(key string) context.Context {
		t.Helper()
		if out, _, err := db.ClaimIdempotencyKey(context.Background(), acct, key, hash); err != nil || out != store.IdemProceed {
			t.Fatalf("claim %s: %v %v", key, out, err)
		}
		ctx := store.WithIdemClaim(context.Background(), &store.IdemClaim{AccountID: acct, Key: key})
		store.RespondInTx(ctx, func(n int) (store.StoredResponse, error) {
			return store.StoredResponse{Status: 202, Body: []byte(strconv.Itoa(n))}, nil
		})
		return ctx
	}
	record := func(ctx context.Context, result any) error {
		return db.WithTx(ctx, func(tx *sqlx.Tx) error { return store.RecordIdempotent(ctx, tx, result) })
	}

	ctx := claim("held")
	if err := record(ctx, 7); err != nil {
		t.Fatal(err)
	}
	out, resp, err := db.ClaimIdempotencyKey(context.Background(), acct, "held", hash)
	if err != nil || out != store.IdemReplay || resp.Status != 202 || string(resp.Body) != "7" {
		t.Errorf("after the commit: %v %+v %v", out, resp, err)
	}

	ctx = claim("released")
	if err := db.ReleaseIdempotencyKey(context.Background(), acct, "released"); err != nil {
		t.Fatal(err)
	}
	if err := record(ctx, 7); err == nil {
		t.Error("a response recorded for a key the request no longer holds")
	}
	if err := record(claim("typed"), "seven"); err == nil {
		t.Error("a result of another type than the handler renders was recorded")
	}
	if err := record(context.Background(), 7); err != nil {
		t.Errorf("without a claim RecordIdempotent does nothing: %v", err)
	}
}
