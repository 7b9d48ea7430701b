package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestPurgeIntegrationEvents(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	ig, err := db.CreateIntegration(ctx, nil, acct, store.Actor{Type: store.ActorSystem},
		store.IntegrationSettings{Provider: store.ProviderGeneric, Name: "Shop", Active: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, at := range []time.Time{now.Add(-store.IntegrationEventRetention - time.Hour), now.Add(-store.IntegrationEventRetention + time.Hour)} {
		if err := db.LogIntegrationEvent(ctx, store.IntegrationEvent{AccountID: acct, IntegrationID: ig.ID, Status: store.IntegrationRejected,
			Payload: "x\x00y", ReceivedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	events, total, err := db.IntegrationEvents(ctx, acct, ig.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || len(events) != 1 || events[0].Payload != "xy" {
		t.Fatalf("after purge: %d %+v %v", total, events, err)
	}
	// Another account's integration is not found.
	other := newAccount(t, db, "business")
	if _, _, err := db.IntegrationEvents(ctx, other, ig.ID, store.Page{Page: 1, PerPage: 10}); err != store.ErrNotFound {
		t.Fatalf("other account: %v", err)
	}
}
