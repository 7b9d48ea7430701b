package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func emailsOf(cs []store.Contact) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Email
	}
	slices.Sort(out)
	return out
}

// TestContactFilterConditions checks every custom-field operator and the date
// ranges through the three readers of the one filter: the API listing
// (Contacts), the portal's capped page (ContactsUpTo) and a saved segment.
func TestContactFilterConditions(t *testing.T) {
	db := dbtest.NewDB(t)
	ctx := context.Background()
	acct := newAccount(t, db, "business")
	fields := []map[string]any{
		{"plan": "Gold", "score": 10, "city2": "Berlin-Mitte"},
		{"plan": "silver", "score": "7.5"},
		{"plan": "", "score": "n/a"},
		{"score": 42},
	}
	for i, cf := range fields {
		upsert(t, db, acct, store.ContactInput{Email: fmt.Sprintf("f%d@example.com", i), CustomFields: cf})
	}
	day := func(d int) *time.Time { v := time.Date(2025, 1, d, 0, 0, 0, 0, time.UTC); return &v }
	for i := range fields {
		if _, err := db.ExecContext(ctx, `UPDATE contacts SET created_at = $3, updated_at = $3 WHERE account_id = $1 AND email = $2`,
			acct, fmt.Sprintf("f%d@example.com", i), *day(i + 1)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		f    store.ContactFilter
		want []string
	}{
		{"equals", store.ContactFilter{Fields: []store.FieldCondition{{Key: "plan", Op: "equals", Value: "Gold"}}}, []string{"f0"}},
		{"equals number", store.ContactFilter{Fields: []store.FieldCondition{{Key: "score", Op: "equals", Value: "42"}}}, []string{"f3"}},
		{"contains ignores case", store.ContactFilter{Fields: []store.FieldCondition{{Key: "plan", Op: "contains", Value: "IL"}}}, []string{"f1"}},
		{"set", store.ContactFilter{Fields: []store.FieldCondition{{Key: "plan", Op: "set"}}}, []string{"f0", "f1"}},
		{"greater skips non-numbers", store.ContactFilter{Fields: []store.FieldCondition{{Key: "score", Op: "gt", Value: "7"}}}, []string{"f0", "f1", "f3"}},
		{"less", store.ContactFilter{Fields: []store.FieldCondition{{Key: "score", Op: "lt", Value: "10"}}}, []string{"f1"}},
		{"all conditions hold", store.ContactFilter{Fields: []store.FieldCondition{{Key: "score", Op: "gt", Value: "7"}, {Key: "plan", Op: "set"}}}, []string{"f0", "f1"}},
		{"created range", store.ContactFilter{CreatedFrom: day(2), CreatedTo: day(4)}, []string{"f1", "f2"}},
		{"updated from", store.ContactFilter{UpdatedFrom: day(3)}, []string{"f2", "f3"}},
		{"range and field", store.ContactFilter{UpdatedTo: day(2), Fields: []store.FieldCondition{{Key: "plan", Op: "set"}}}, []string{"f0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := make([]string, len(c.want))
			for i, w := range c.want {
				want[i] = w + "@example.com"
			}
			cs, total, err := db.Contacts(ctx, acct, c.f, store.Page{Page: 1, PerPage: 50})
			if err != nil {
				t.Fatal(err)
			}
			if got := emailsOf(cs); !slices.Equal(got, want) || total != len(want) {
				t.Fatalf("Contacts = %v (total %d), want %v", got, total, want)
			}
			page, err := db.ContactsUpTo(ctx, acct, c.f, store.Page{Page: 1, PerPage: 50}, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if got := emailsOf(page.Contacts); !slices.Equal(got, want) || page.Total != len(want) {
				t.Fatalf("ContactsUpTo = %v (total %d), want %v", got, page.Total, want)
			}
			seg, err := db.CreateSegment(ctx, acct, apiActor, store.SegmentInput{Name: ptr(c.name), Filter: &c.f})
			if err != nil {
				t.Fatal(err)
			}
			cs, total, err = db.SegmentContacts(ctx, acct, seg.ID, "", store.Page{Page: 1, PerPage: 50})
			if err != nil {
				t.Fatal(err)
			}
			if got := emailsOf(cs); !slices.Equal(got, want) || total != len(want) {
				t.Fatalf("SegmentContacts = %v (total %d), want %v", got, total, want)
			}
		})
	}
}

// TestContactFilterInvalid: bad conditions are field errors, never SQL errors.
func TestContactFilterInvalid(t *testing.T) {
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	for _, c := range []struct {
		f     store.ContactFilter
		field string
	}{
		{store.ContactFilter{Fields: []store.FieldCondition{{Key: "", Op: "set"}}}, "filter.fields.0.key"},
		{store.ContactFilter{Fields: []store.FieldCondition{{Key: "x", Op: "like"}}}, "filter.fields.0.op"},
		{store.ContactFilter{Fields: []store.FieldCondition{{Key: "x", Op: "gt", Value: "viel"}}}, "filter.fields.0.value"},
		{store.ContactFilter{Fields: []store.FieldCondition{{Key: "x", Op: "equals"}}}, "filter.fields.0.value"},
		{store.ContactFilter{CreatedFrom: ptr(time.Now()), CreatedTo: ptr(time.Now().Add(-time.Hour))}, "filter.created_to"},
		{store.ContactFilter{Status: "gone"}, "filter.status"},
		{store.ContactFilter{ListID: 999999}, "filter.list_id"},
	} {
		_, err := db.CreateSegment(context.Background(), acct, apiActor, store.SegmentInput{Name: ptr("x"), Filter: &c.f})
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Fields[c.field] == "" {
			t.Errorf("%+v: err = %v, want a message on %s", c.f, err, c.field)
		}
	}
}

// TestSegmentLifecycle: names are unique per account, changes are logged, a
// segment a scheduled newsletter reads cannot be deleted (in_use) while a
// draft just loses it; another account's segment is not found.
func TestSegmentLifecycle(t *testing.T) {
	e := newCampaignEnv(t)
	ctx := context.Background()
	s, err := e.db.CreateSegment(ctx, e.acct, apiActor, store.SegmentInput{Name: ptr(" VIP "), Filter: &store.ContactFilter{Tag: "vip"}})
	if err != nil || s.Name != "VIP" || s.Filter.Tag != "vip" {
		t.Fatalf("create = %+v, %v", s, err)
	}
	var ce *store.ConflictError
	if _, err := e.db.CreateSegment(ctx, e.acct, apiActor, store.SegmentInput{Name: ptr("VIP")}); !errors.As(err, &ce) || ce.Reason != "name_taken" {
		t.Fatalf("duplicate name: %v", err)
	}
	other := newAccount(t, e.db, "business")
	if _, err := e.db.Segment(ctx, other, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other account: %v", err)
	}
	s, err = e.db.UpdateSegment(ctx, e.acct, apiActor, s.ID, store.SegmentInput{Filter: &store.ContactFilter{Tag: "vip", Status: "subscribed"}})
	if err != nil || s.Filter.Status != "subscribed" || s.Name != "VIP" {
		t.Fatalf("update = %+v, %v", s, err)
	}
	upsert(t, e.db, e.acct, store.ContactInput{Email: "u1@example.com", Tags: []string{"vip"}})
	n := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), Markdown: str("Text"), SegmentID: &s.ID})
	draft := e.newsletter(t, store.NewsletterInput{Subject: str("Entwurf"), Markdown: str("Text"), SegmentID: &s.ID})
	if n.SegmentID == nil || *n.SegmentID != s.ID {
		t.Fatalf("segment_id = %v", n.SegmentID)
	}
	if _, err := e.db.ScheduleNewsletter(ctx, e.acct, apiActor, n.ID, time.Now().Add(time.Hour), store.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.db.DeleteSegment(ctx, e.acct, apiActor, s.ID); !errors.As(err, &ce) || ce.Reason != "in_use" {
		t.Fatalf("delete in use: %v", err)
	}
	e.exec(t, `UPDATE campaigns SET status = 'draft' WHERE id = $1`, n.ID)
	if err := e.db.DeleteSegment(ctx, e.acct, apiActor, s.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.db.Newsletter(ctx, e.acct, draft.ID); got.SegmentID != nil {
		t.Fatalf("draft keeps the deleted segment %v", *got.SegmentID)
	}
	var acts int
	if err := e.db.GetContext(ctx, &acts, `SELECT count(*) FROM activity_log WHERE account_id = $1 AND object_type = 'segment'`, e.acct); err != nil || acts != 3 {
		t.Fatalf("segment activities = %d, %v", acts, err)
	}
	if _, err := e.db.CreateNewsletter(ctx, e.acct, apiActor, store.NewsletterInput{Subject: str("x"), SegmentID: &s.ID}); err == nil {
		t.Fatal("a deleted segment was accepted")
	}
}

// TestNewsletterSegmentAudience: the audience is the segment's subscribed
// contacts (blocked ones skipped), narrowed by the lists when there are any;
// the count before the send and the send agree; the segment is read when the
// send starts.
func TestNewsletterSegmentAudience(t *testing.T) {
	e := newCampaignEnv(t)
	ctx := context.Background()
	for _, m := range []string{"u1", "u4", "u5", "u6"} {
		upsert(t, e.db, e.acct, store.ContactInput{Email: m + "@example.com", Tags: []string{"vip"}})
	}
	upsert(t, e.db, e.acct, store.ContactInput{Email: "nolist@example.com", Tags: []string{"vip"}})
	s, err := e.db.CreateSegment(ctx, e.acct, apiActor, store.SegmentInput{Name: ptr("VIP"), Filter: &store.ContactFilter{Tag: "vip"}})
	if err != nil {
		t.Fatal(err)
	}
	recipients := func(id int64) []string {
		var out []string
		if err := e.db.SelectContext(ctx, &out, `SELECT email || ':' || status FROM campaign_recipients WHERE campaign_id = $1 ORDER BY email`, id); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		lists []int64
		want  []string
	}{
		{nil, []string{"nolist@example.com:queued", "u1@example.com:queued", "u5@example.com:skipped", "u6@example.com:queued"}},
		{[]int64{e.a.ID}, []string{"u1@example.com:queued"}},
	} {
		n := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), Markdown: str("Text"), SegmentID: &s.ID, ListIDs: &c.lists})
		aud, err := e.db.CampaignAudience(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		// A contact tagged after the newsletter was written still gets it.
		upsert(t, e.db, e.acct, store.ContactInput{Email: "late@example.com", Tags: []string{"vip"}})
		_, res, err := e.db.StartNewsletter(ctx, e.acct, apiActor, n.ID, store.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if c.lists == nil {
			want = append([]string{"late@example.com:queued"}, want...)
			aud.Queued++
		}
		if got := recipients(n.ID); !slices.Equal(got, want) {
			t.Fatalf("lists %v: recipients %v, want %v", c.lists, got, want)
		}
		if res.Queued != aud.Queued || res.Skipped != aud.Skipped {
			t.Fatalf("start %+v, audience before %+v", res, aud)
		}
		e.exec(t, `DELETE FROM contacts WHERE account_id = $1 AND email = 'late@example.com'`, e.acct)
	}
	empty, err := e.db.CreateSegment(ctx, e.acct, apiActor, store.SegmentInput{Name: ptr("leer"), Filter: &store.ContactFilter{Tag: "niemand"}})
	if err != nil {
		t.Fatal(err)
	}
	n := e.newsletter(t, store.NewsletterInput{Subject: str("Hallo"), Markdown: str("Text"), SegmentID: &empty.ID})
	var ve *store.ValidationError
	if _, _, err := e.db.StartNewsletter(ctx, e.acct, apiActor, n.ID, store.StartOptions{}); !errors.As(err, &ve) || ve.Fields["segment_id"] == "" {
		t.Fatalf("empty segment: %v", err)
	}
}
