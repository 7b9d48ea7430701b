package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
)

func TestParseCSV(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		delim      rune
		header     []string
		rows       int
	}{
		{"comma", "email,vorname\na@x.de,A\nb@x.de,B\n", ',', []string{"email", "vorname"}, 2},
		{"semicolon with BOM", "\xef\xbb\xbfE-Mail;Vorname;Ort\n\"a@x.de\";\"Anna; die Erste\";Köln\n\n", ';', []string{"E-Mail", "Vorname", "Ort"}, 1},
		{"tab, CRLF", "email\tname\r\na@x.de\tA\r\nb@x.de\tB\r\nc@x.de\tC", '\t', []string{"email", "name"}, 3},
		{"quoted commas do not decide", "\"a,b,c\";email\nx;a@x.de\n", ';', []string{"a,b,c", "email"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := store.ParseCSV([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if p.Delimiter != tc.delim || strings.Join(p.Header, "|") != strings.Join(tc.header, "|") || p.Rows != tc.rows {
				t.Errorf("got %q %q %d rows", p.Delimiter, p.Header, p.Rows)
			}
		})
	}
	for name, data := range map[string]string{
		"latin-1":     "email;Ort\na@x.de;K\xf6ln\n",
		"empty":       " \n",
		"header only": "email,name\n",
	} {
		var ve *store.ValidationError
		if _, err := store.ParseCSV([]byte(data)); !errors.As(err, &ve) || ve.Fields["file"] == "" {
			t.Errorf("%s: %v, want a validation error on file", name, err)
		}
	}
}

// startedImport uploads data and starts it with mapping.
func startedImport(t *testing.T, db *store.DB, acct int64, data string, s store.ImportSettings) store.ImportJob {
	t.Helper()
	ctx := context.Background()
	j, err := db.CreateImport(ctx, acct, 0, "kunden.csv", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if j, err = db.StartImport(ctx, acct, j.ID, s); err != nil {
		t.Fatal(err)
	}
	return j
}

func TestImportRunsWithTheBulkRules(t *testing.T) {
	ctx := context.Background()
	db := dbtest.Open(t, dbtest.URL(t))
	acct := newAccount(t, db, "")
	other := newAccount(t, db, "")
	doi := mkList(t, db, acct, "Newsletter", true)
	upsert(t, db, acct, store.ContactInput{Email: "alt@example.com", FirstName: ptr("Alt"), City: ptr("Bonn"), Tags: []string{"vorher"}})

	data := "\xef\xbb\xbfE-Mail;Vorname;Kundennummer;Tags\n" +
		"neu@example.com;Neu;K-1;a, b\n" +
		"ALT@example.com;;K-2;\n" + // empty cells leave the contact's fields alone
		"kaputt;X;K-3;\n" +
		"neu@example.com;Doppelt;;\n" // a second row for one address acts as an update
	s := store.ImportSettings{Mapping: []string{"email", "first_name", "custom:kundennummer", "tags"}, ListIDs: []int64{doi.ID}, Tags: []string{"import"}}

	// The mapping is validated before anything runs.
	j, err := db.CreateImport(ctx, acct, 0, "kunden.csv", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var ve *store.ValidationError
	for name, bad := range map[string]store.ImportSettings{
		"no email":       {Mapping: []string{"", "first_name", "", ""}},
		"twice":          {Mapping: []string{"email", "first_name", "first_name", ""}},
		"builtin custom": {Mapping: []string{"email", "custom:vorname", "", ""}},
		"bad key":        {Mapping: []string{"email", "custom:Kunden Nr", "", ""}},
		"other's list":   {Mapping: []string{"email", "", "", ""}, ListIDs: []int64{mkList(t, db, other, "Fremd", false).ID}},
		"columns":        {Mapping: []string{"email"}},
	} {
		if _, err := db.StartImport(ctx, acct, j.ID, bad); !errors.As(err, &ve) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	if _, err := db.StartImport(ctx, other, j.ID, s); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account started the job: %v", err)
	}
	if _, err := db.StartImport(ctx, acct, j.ID, s); err != nil {
		t.Fatal(err)
	}
	var ce *store.ConflictError
	if _, err := db.StartImport(ctx, acct, j.ID, s); !errors.As(err, &ce) {
		t.Errorf("started twice: %v", err)
	}

	w := imports.NewWorker(db, imports.WorkerOptions{Batch: 2})
	if ran, err := w.RunOnce(ctx); !ran || err != nil {
		t.Fatalf("RunOnce: %v %v", ran, err)
	}
	if ran, err := w.RunOnce(ctx); ran || err != nil {
		t.Fatalf("second RunOnce found work: %v %v", ran, err)
	}
	j, err = db.ImportJob(ctx, acct, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.ImportDone || j.ProcessedRows != 4 || j.Created != 1 || j.Updated != 2 || j.Failed != 1 {
		t.Fatalf("job %s: %d processed, %d created, %d updated, %d failed", j.Status, j.ProcessedRows, j.Created, j.Updated, j.Failed)
	}
	if len(j.Errors) != 1 || j.Errors[0].Row != 4 || j.Errors[0].Email != "kaputt" || !strings.Contains(j.Errors[0].Message, "E-Mail") {
		t.Errorf("row errors %+v", j.Errors)
	}
	var data2 []byte
	if err := db.GetContext(ctx, &data2, `SELECT coalesce(data, '') FROM import_jobs WHERE id = $1`, j.ID); err != nil || len(data2) != 0 {
		t.Errorf("the file is kept after the job ended (%d bytes, %v)", len(data2), err)
	}

	neu, err := db.ContactByEmail(ctx, acct, "neu@example.com")
	if err != nil {
		t.Fatal(err)
	}
	// A new contact on a double opt-in list is pending, as with POST /contacts/bulk.
	if neu.Status != store.StatusPending || neu.Source != store.SourceImport || neu.FirstName != "Doppelt" ||
		neu.CustomFields["kundennummer"] != "K-1" || strings.Join(neu.Tags, ",") != "a,b,import" || len(neu.Lists) != 1 {
		t.Errorf("new contact %+v", neu)
	}
	alt, err := db.ContactByEmail(ctx, acct, "alt@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if alt.FirstName != "Alt" || alt.City != "Bonn" || alt.Source != store.SourceAPI || alt.Status != store.StatusSubscribed ||
		strings.Join(alt.Tags, ",") != "vorher,import" || alt.CustomFields["kundennummer"] != "K-2" {
		t.Errorf("existing contact %+v", alt)
	}
	if _, err := db.ImportJob(ctx, other, j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account sees the job: %v", err)
	}
}

// TestImportResumesAfterCrash: a job whose worker died (lease run out) is
// resumed by another worker from its last committed batch, neither repeating nor
// skipping a row.
func TestImportResumesAfterCrash(t *testing.T) {
	ctx := context.Background()
	db := dbtest.Open(t, dbtest.URL(t))
	acct := newAccount(t, db, "")
	var b strings.Builder
	b.WriteString("email\n")
	for i := range 10 {
		fmt.Fprintf(&b, "k%02d@example.com\n", i)
	}
	j := startedImport(t, db, acct, b.String(), store.ImportSettings{Mapping: []string{"email"}})

	// A worker claimed the job, committed the first four rows' batch as if it
	// had imported them, and died: its lease is over.
	if _, err := db.ExecContext(ctx, `UPDATE import_jobs SET status = 'running', lease_owner = 'dead', processed_rows = 4,
  created_count = 4, lease_until = now() - interval '1 second' WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	w := imports.NewWorker(db, imports.WorkerOptions{Batch: 3})
	if ran, err := w.RunOnce(ctx); !ran || err != nil {
		t.Fatalf("RunOnce: %v %v", ran, err)
	}
	j, err := db.ImportJob(ctx, acct, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.ImportDone || j.ProcessedRows != 10 || j.Created != 10 || j.Failed != 0 {
		t.Fatalf("resumed job %s: %d processed, %d created", j.Status, j.ProcessedRows, j.Created)
	}
	// The rows the dead worker had done were not imported again (here: at all,
	// which shows the skip), the rest was.
	var n int
	if err := db.GetContext(ctx, &n, `SELECT count(*) FROM contacts WHERE account_id = $1`, acct); err != nil || n != 6 {
		t.Fatalf("%d contacts (%v), want the 6 rows after the resume point", n, err)
	}
	if _, err := db.ContactByEmail(ctx, acct, "k03@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("row 4 was imported again: %v", err)
	}

	// A job under a live lease is not taken over.
	j2 := startedImport(t, db, acct, "email\nx@example.com\n", store.ImportSettings{Mapping: []string{"email"}})
	if _, err := db.ExecContext(ctx, `UPDATE import_jobs SET status = 'running', lease_owner = 'alive', lease_until = now() + interval '1 minute' WHERE id = $1`, j2.ID); err != nil {
		t.Fatal(err)
	}
	if ran, err := w.RunOnce(ctx); ran || err != nil {
		t.Fatalf("a leased job was taken: %v %v", ran, err)
	}
}

// TestImportWorkersShareTheQueue: several workers on several jobs run each job
// exactly once (SKIP LOCKED claims), with exact counters.
func TestImportWorkersShareTheQueue(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	acct := newAccount(t, db, "")
	var jobs []int64
	for n := range 4 {
		var b strings.Builder
		b.WriteString("email;nr\n")
		for i := range 120 {
			fmt.Fprintf(&b, "j%d-%03d@example.com;%d\n", n, i, i)
		}
		jobs = append(jobs, startedImport(t, db, acct, b.String(), store.ImportSettings{Mapping: []string{"email", "custom:nr"}}).ID)
	}
	var wg sync.WaitGroup
	for range 3 {
		w := imports.NewWorker(dbtest.Open(t, url), imports.WorkerOptions{Batch: 25})
		wg.Go(func() {
			for {
				ran, err := w.RunOnce(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if !ran {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, id := range jobs {
		j, err := db.ImportJob(ctx, acct, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != store.ImportDone || j.Created != 120 || j.Updated != 0 || j.ProcessedRows != 120 {
			t.Errorf("job %d: %s, %d created, %d updated, %d processed", id, j.Status, j.Created, j.Updated, j.ProcessedRows)
		}
	}
	if u := usageOf(t, db, acct); u.Contacts != 480 {
		t.Errorf("usage counts %d contacts, want 480", u.Contacts)
	}
}

func TestPurgeStaleImports(t *testing.T) {
	ctx := context.Background()
	db := dbtest.Open(t, dbtest.URL(t))
	acct := newAccount(t, db, "")
	old, err := db.CreateImport(ctx, acct, 0, "alt.csv", []byte("email\na@example.com\n"))
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := db.CreateImport(ctx, acct, 0, "neu.csv", []byte("email\na@example.com\n"))
	if err != nil {
		t.Fatal(err)
	}
	started := startedImport(t, db, acct, "email\na@example.com\n", store.ImportSettings{Mapping: []string{"email"}})
	if _, err := db.ExecContext(ctx, `UPDATE import_jobs SET created_at = now() - interval '2 days' WHERE id IN ($1, $2)`, old.ID, started.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := db.PurgeStaleImports(ctx, 24*time.Hour); err != nil || n != 1 {
		t.Fatalf("purged %d (%v), want the one old upload", n, err)
	}
	if _, err := db.ImportJob(ctx, acct, old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Error("the stale upload is still there")
	}
	for _, id := range []int64{fresh.ID, started.ID} {
		if _, err := db.ImportJob(ctx, acct, id); err != nil {
			t.Errorf("job %d was purged: %v", id, err)
		}
	}
}
