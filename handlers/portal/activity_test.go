package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/views"
)

func TestActivityLogPage(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	b := newAccount(t, s.db, "")
	ctx := context.Background()
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	empty := c.get("/logs/activity")
	wantStatus(t, empty, http.StatusOK)
	if empty.find("activity-empty").Length() != 1 {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	if cur, _ := empty.find("nav-activity-log").Attr("aria-current"); cur != "page" {
		t.Error("sidebar does not mark the activity log")
	}

	// 28 contacts through an API key, a user's webhook in the portal, a list by
	// the system; and B's contact, which A must not see.
	key, _, err := s.db.CreateKey(ctx, acct.ID, store.KeySettings{Name: "Shop-Anbindung"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 28 {
		if _, err := s.db.UpsertContact(ctx, acct.ID, store.Actor{Type: store.ActorKey, ID: key.ID}, store.ContactInput{Email: fmt.Sprintf("k%02d@example.com", i)}); err != nil {
			t.Fatal(err)
		}
	}
	rc := newReceiver(t)
	wantRedirect(t, c.post("/webhooks/new", url.Values{"url": {rc.URL}, "events": {"*"}}), "/webhooks")
	if _, err := s.db.UpsertContact(ctx, b.ID, store.Actor{Type: store.ActorSystem}, store.ContactInput{Email: "b-geheim@example.com"}); err != nil {
		t.Fatal(err)
	}

	page1 := c.get("/logs/activity")
	rows := page1.find("activity-row")
	if rows.Length() != 25 || text(page1.find("pagination-range")) != "1–25 von 29 Einträgen · Seite 1 von 2" {
		t.Fatalf("page 1: %d rows, %q", rows.Length(), text(page1.find("pagination-range")))
	}
	first := rows.First()
	if text(first.Find(`[data-testid="activity-action"]`)) != "Webhook angelegt" || text(first.Find(`[data-testid="activity-actor"]`)) != acct.Email ||
		!strings.HasPrefix(text(first.Find(`[data-testid="activity-object"]`)), "Webhook „"+rc.URL) {
		t.Errorf("newest entry: %s", text(first))
	}
	second := rows.Eq(1)
	if text(second.Find(`[data-testid="activity-action"]`)) != "Kontakt angelegt" || text(second.Find(`[data-testid="activity-actor"]`)) != "API-Schlüssel „Shop-Anbindung“" {
		t.Errorf("key entry: %s", text(second))
	}
	if strings.Contains(page1.Body, "b-geheim") {
		t.Fatal("A sees B's activity")
	}

	// htmx paging gets the section alone; the filter keeps in the links.
	hx := []string{"HX-Request", "true"}
	page2 := c.get("/logs/activity?object_type=contact&page=2", hx...)
	if page2.find("sidebar").Length() != 0 || page2.find("activity-row").Length() != 3 {
		t.Fatalf("htmx page 2 of contacts:\n%.400s", page2.Body)
	}
	if href := page2.find("page-prev").AttrOr("hx-get", ""); href != "/logs/activity?object_type=contact" {
		t.Errorf("prev link %q", href)
	}
	if n := c.get("/logs/activity?object_type=webhook").find("activity-row").Length(); n != 1 {
		t.Errorf("webhook filter: %d rows", n)
	}
	none := c.get("/logs/activity?object_type=user")
	if none.find("activity-row").Length() != 0 || !strings.Contains(text(none.find("activity-empty")), "Keine passenden") {
		t.Error("empty filter result")
	}
	if n := c.get("/logs/activity?object_type=nonsense").find("activity-row").Length(); n != 25 {
		t.Errorf("unknown type filters %d rows", n)
	}
	if n := c.get("/logs/activity?page=99").find("activity-row").Length(); n != 4 {
		t.Errorf("page past the end: %d rows", n)
	}
}

// Every sidebar entry an owner sees leads to a page that answers 200, and a
// member's entries too.
func TestNavigationEntriesAnswer(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	if _, err := s.db.CreateUser(context.Background(), acct.ID, store.NewUser{Email: "member-nav@example.com", Role: store.RoleMember, Password: "member password"}); err != nil {
		t.Fatal(err)
	}
	for _, who := range []struct{ email, password, role string }{{acct.Email, acct.Password, "owner"}, {"member-nav@example.com", "member password", "member"}} {
		c := newClient(t, s)
		c.signIn(who.email, who.password)
		dash := c.get("/dashboard")
		n := 0
		for _, it := range views.Navigation(views.German()) {
			link := dash.find("nav-" + it.ID)
			if link.Length() == 0 {
				continue
			}
			n++
			if r := c.get(link.AttrOr("href", "")); r.StatusCode != http.StatusOK {
				t.Errorf("%s: %s answers %d", who.role, it.Href, r.StatusCode)
			}
		}
		if who.role == "owner" && n != len(views.Navigation(views.German())) {
			t.Errorf("owner sees %d of %d entries", n, len(views.Navigation(views.German())))
		}
	}
}

// adminSeeded is what seedAdmin made.
type adminSeeded struct {
	webhook int64 // a webhook with 500 deliveries of 2 attempts each
	mail    int64 // a captured mail of the development outbox
}

// seedAdmin gives an account what the admin pages show, in bulk: an activity log
// of n entries (one per contact, by an API key, as the API writes them), 3 SMTP
// servers, 5 users, 5 webhooks of which one has 500 deliveries with 2 attempts
// each, and 200 captured mails.
func seedAdmin(b *testing.B, db *store.DB, acct int64, n int) adminSeeded {
	b.Helper()
	ctx := context.Background()
	var s adminSeeded
	box := testBox(b)
	for i := range 3 {
		if _, err := db.CreateSMTPServer(ctx, box, acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
			Name: fmt.Sprintf("Server %d", i), Host: fmt.Sprintf("smtp%d.example.com", i), Username: "u", FromEmail: "news@example.com"},
			Password: "secret password"}); err != nil {
			b.Fatal(err)
		}
	}
	owner, err := db.AccountUsers(ctx, acct)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 4 {
		if _, err := db.AddUser(ctx, acct, owner[0], store.NewUser{Email: fmt.Sprintf("kollege%d-%d@example.com", i, acct), Role: store.RoleMember,
			Password: "kollegen password"}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 5 {
		h, _, err := db.CreateWebhook(ctx, box, acct, store.Actor{Type: store.ActorSystem}, store.WebhookSettings{
			URL: fmt.Sprintf("https://hooks%d.example.com/rundbrief", i), Events: []string{"contact.created", "list.joined"}})
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			s.webhook = h.ID
		}
	}
	stmts := []string{
		`INSERT INTO activity_log (account_id, actor_type, actor_id, action, object_type, object_id, details, created_at)
SELECT $1, 'key', 1, 'contact.created', 'contact', i, jsonb_build_object('email', 'k' || i || '@example.com'), now() - (i || ' seconds')::interval
FROM generate_series(1, $2) AS i`,
		`INSERT INTO webhook_deliveries (public_id, account_id, webhook_id, event_public_id, event, payload, status, attempts, last_status_code, response_excerpt, created_at, updated_at)
SELECT 'whd_bench' || i, $1, $2, 'evt_bench' || i, 'contact.created',
  '{"id":"evt_bench' || i || '","event":"contact.created","data":{"contact":{"id":' || i || ',"email":"k' || i || '@example.com"}}}',
  CASE WHEN i % 7 = 0 THEN 'failed' ELSE 'succeeded' END, 2, CASE WHEN i % 7 = 0 THEN 500 ELSE 200 END, 'ok', now() - (i || ' seconds')::interval, now()
FROM generate_series(1, 500) AS i`,
		`INSERT INTO webhook_attempts (delivery_id, account_id, attempt, status_code, error, response_excerpt, duration_ms, attempted_at)
SELECT d.id, $1, a, 200, '', 'ok', 40 + a, now() FROM webhook_deliveries d, generate_series(1, 2) AS a WHERE d.account_id = $1`,
	}
	for i, q := range stmts {
		args := []any{acct}
		switch i {
		case 0:
			args = append(args, n)
		case 1:
			args = append(args, s.webhook)
		}
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("seed admin: %v", err)
		}
	}
	out := mailer.NewDevOutbox(db, acct)
	for i := range 200 {
		if err := out.Send(ctx, &mailer.Message{From: mailer.Address{Email: "news@example.com"}, To: mailer.Address{Email: fmt.Sprintf("k%d@example.com", i)},
			Subject: fmt.Sprintf("Angebot %d", i), HTML: "<p>Hallo</p>"}); err != nil {
			b.Fatal(err)
		}
	}
	mails, _, err := db.DevOutbox(ctx, acct, store.Page{Page: 1, PerPage: 1})
	if err != nil {
		b.Fatal(err)
	}
	s.mail = mails[0].ID
	for _, t := range []string{"activity_log", "webhook_deliveries", "webhook_attempts"} {
		if _, err := db.ExecContext(ctx, `ANALYZE `+t); err != nil {
			b.Fatal(err)
		}
	}
	return s
}
