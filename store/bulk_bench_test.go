package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// BenchmarkBulkDelete deletes 10,000 contacts (two lists, two tags each) with
// one bulk job in chunks of the default size, as the portal's "delete all
// matches" does, and reports contacts per second and the CPU per contact of
// this process and of PostgreSQL. Seeding is not timed.
//
//	go test ./store/ -run '^$' -bench BenchmarkBulkDelete -benchtime 1x
func BenchmarkBulkDelete(b *testing.B) {
	const contacts = 10_000
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		db := dbtest.NewDB(b)
		acct := newAccount(b, db, "business")
		la, lb := mkList(b, db, acct, "A", false), mkList(b, db, acct, "B", false)
		in := store.BulkContacts{}
		for i := range contacts {
			in.Contacts = append(in.Contacts, store.ContactInput{Email: fmt.Sprintf("del%05d@example.com", i),
				Tags: []string{"kunde", fmt.Sprintf("t%d", i%20)}, ListIDs: []int64{la.ID, lb.ID}})
			if len(in.Contacts) == store.MaxBatch {
				if _, err := db.BulkUpsertContacts(ctx, acct, apiActor, in); err != nil {
					b.Fatal(err)
				}
				in.Contacts = in.Contacts[:0]
			}
		}
		j, err := db.CreateBulkJob(ctx, acct, apiActor, store.BulkInput{Action: store.BulkDelete, Filter: &store.ContactFilter{}})
		if err != nil {
			b.Fatal(err)
		}
		self0, pg0 := dbtest.CPUTime(b, db)
		b.StartTimer()
		start := time.Now()
		if _, err := db.RunNextBulkJob(ctx, store.BulkRun{}); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		self, pg := dbtest.CPUTime(b, db)
		if j, err = db.BulkJob(ctx, acct, j.ID); err != nil || j.Status != store.BulkDone || j.Changed != contacts {
			b.Fatalf("job %+v, %v", j, err)
		}
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / contacts }
		b.ReportMetric(contacts/elapsed.Seconds(), "contacts/s")
		b.ReportMetric(per(self-self0), "app_cpu_us/contact")
		b.ReportMetric(per(pg-pg0), "pg_cpu_us/contact")
		b.StartTimer()
	}
}
