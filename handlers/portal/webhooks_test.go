package portal_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// receiver is a real HTTP endpoint that records the webhook requests it gets and
// answers with status and body.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status int
	body   string
}

type received struct {
	Header http.Header
	Body   []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{status: http.StatusOK, body: `{"angekommen":true}`}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{Header: r.Header.Clone(), Body: b})
		status, body := rc.status, rc.body
		rc.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) answer(status int, body string) {
	rc.mu.Lock()
	rc.status, rc.body = status, body
	rc.mu.Unlock()
}

// signedWith reports whether a request's X-Service-Signature has a v1 entry made
// with secret (Stripe's scheme: HMAC-SHA256 over "<t>.<body>").
func signedWith(req received, secret string) bool {
	var ts string
	var sigs []string
	for part := range strings.SplitSeq(req.Header.Get("X-Service-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(req.Body)
	want := hex.EncodeToString(mac.Sum(nil))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

func deliver(t *testing.T, s *server) {
	t.Helper()
	if _, err := s.webhooks.Worker(webhook.WorkerOptions{}).Process(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWebhookPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	rc := newReceiver(t)
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()
	hx := []string{"HX-Request", "true"}

	empty := c.get("/webhooks")
	wantStatus(t, empty, http.StatusOK)
	if empty.find("webhooks-empty").Length() != 1 {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	// The picker offers the 17 events in groups, "all events" preselected.
	form := c.get("/webhooks/new")
	if n := form.Doc.Find(`.event-groups input[name="events"]`).Length(); n != 17 {
		t.Errorf("picker offers %d events", n)
	}
	if form.find("event-all").AttrOr("checked", "x") == "x" {
		t.Error("new webhook does not preselect all events")
	}
	if got := text(form.find("event-group-email").Find("legend")); got != "E-Mails" {
		t.Errorf("email group %q", got)
	}

	bad := c.post("/webhooks/new", url.Values{"url": {"ftp://example.com/x"}, "description": {"Shop"}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if text(bad.find("error-url")) == "" || text(bad.find("error-events")) == "" {
		t.Fatalf("no errors next to url and events:\n%s", bad.Body)
	}
	if got := bad.Doc.Find(`input[name="url"]`).AttrOr("value", ""); got != "ftp://example.com/x" {
		t.Errorf("typed URL not kept: %q", got)
	}

	r := c.post("/webhooks/new", url.Values{"url": {rc.URL + "/hook"}, "events": {"contact.created", "list.joined"}, "description": {"Shop"}})
	wantRedirect(t, r, "/webhooks")
	list := c.get("/webhooks")
	secret := list.find("webhook-secret").AttrOr("value", "")
	if !strings.HasPrefix(secret, store.WebhookSecretPrefix) || list.find("webhook-secret-copy").AttrOr("data-copy", "") != "webhook-secret" {
		t.Fatalf("secret shown %q:\n%s", secret, list.Body)
	}
	var sessionData [][]byte
	if err := s.db.SelectContext(ctx, &sessionData, `SELECT data FROM sessions`); err != nil {
		t.Fatal(err)
	}
	for _, d := range sessionData {
		if bytes.Contains(d, []byte(secret)) {
			t.Fatal("the secret is in the sessions table in plain text")
		}
	}
	if again := c.get("/webhooks"); strings.Contains(again.Body, secret) {
		t.Fatal("the secret is shown a second time")
	}
	row := list.find("webhook-row")
	if text(row.Find(`[data-testid="webhook-events"]`)) != "Kontakt angelegtIn Liste aufgenommen" && text(row.Find(`[data-testid="webhook-events"]`)) != "Kontakt angelegt In Liste aufgenommen" {
		t.Errorf("events %q", text(row.Find(`[data-testid="webhook-events"]`)))
	}
	id := row.AttrOr("data-webhook-id", "")

	// A real event: a new contact is delivered, signed with the secret shown.
	if _, err := s.db.UpsertContact(ctx, acct.ID, store.Actor{Type: store.ActorSystem}, store.ContactInput{Email: "erika@example.com"}); err != nil {
		t.Fatal(err)
	}
	deliver(t, s)
	reqs := rc.requests()
	if len(reqs) != 1 || !signedWith(reqs[0], secret) || !bytes.Contains(reqs[0].Body, []byte("erika@example.com")) {
		t.Fatalf("receiver got %d requests (signed with the shown secret: %v)", len(reqs), len(reqs) == 1 && signedWith(reqs[0], secret))
	}
	log := c.get("/webhooks/" + id + "/deliveries")
	wantStatus(t, log, http.StatusOK)
	d := log.find("delivery")
	if d.Length() != 1 || text(d.Find(`[data-testid="delivery-status"]`)) != "Zugestellt" || text(d.Find(`[data-testid="delivery-code"]`)) != "200" ||
		text(d.Find(`[data-testid="delivery-attempts"]`)) != "1" || !strings.HasSuffix(text(d.Find(`[data-testid="delivery-duration"]`)), "ms") {
		t.Fatalf("delivery: %s", text(d))
	}
	if p := text(d.Find(`[data-testid="delivery-payload"]`)); !strings.Contains(p, `"event": "contact.created"`) || !strings.Contains(p, "erika@example.com") {
		t.Errorf("payload %q", p)
	}
	if got := text(d.Find(`[data-testid="delivery-response"]`)); got != `{"angekommen":true}` {
		t.Errorf("response %q", got)
	}
	did := d.AttrOr("data-delivery-id", "")

	// Resend with htmx: the delivery's rows come back with the new attempt.
	rc.answer(http.StatusServiceUnavailable, "wartung")
	resent := c.post("/webhook-deliveries/"+did+"/resend", nil, hx...).rows(t)
	wantStatus(t, resent, http.StatusOK)
	if text(resent.find("delivery-code")) != "503" || text(resent.find("delivery-attempts")) != "2" ||
		resent.find("delivery-attempt-log").Find("li").Length() != 2 || text(resent.find("delivery-response")) != "wartung" {
		t.Fatalf("resend fragment:\n%s", resent.Body)
	}
	if oob := resent.Doc.Find("#flash"); oob.AttrOr("hx-swap-oob", "") != "true" || !strings.Contains(text(oob), "503") {
		t.Errorf("resend flash %q", text(oob))
	}
	if reqs := rc.requests(); len(reqs) != 2 || reqs[1].Header.Get("X-Service-Event-Id") != reqs[0].Header.Get("X-Service-Event-Id") {
		t.Fatalf("resend: %d requests", len(reqs))
	}

	// Test send of a chosen event, marked as a test in the log.
	rc.answer(http.StatusOK, "ok")
	wantRedirect(t, c.post("/webhooks/"+id+"/test", url.Values{"event": {"order.completed"}}), "/webhooks/"+id+"/deliveries")
	log = c.get("/webhooks/" + id + "/deliveries")
	if f := text(log.find("flash")); !strings.Contains(f, "Zugestellt") || !strings.Contains(f, "200") {
		t.Errorf("test flash %q", f)
	}
	first := log.find("delivery").First()
	if text(first.Find(`[data-testid="delivery-event"]`)) != "Kauf abgeschlossen" || !strings.Contains(text(first), "Test") {
		t.Errorf("test delivery %s", text(first))
	}
	wantRedirect(t, c.post("/webhooks/"+id+"/test", url.Values{"event": {"no.such"}}), "/webhooks/"+id+"/deliveries")

	// Filters: by status and event, htmx gets the section.
	// The resent delivery failed for good (a manual attempt on a finished delivery
	// gets no automatic retries).
	if f := c.get("/webhooks/" + id + "/deliveries?status=failed").find("delivery"); f.Length() != 1 || text(f.Find(`[data-testid="delivery-code"]`)) != "503" {
		t.Errorf("failed filter: %s", text(f))
	}
	if none := c.get("/webhooks/" + id + "/deliveries?status=pending"); none.find("delivery").Length() != 0 || none.find("deliveries-empty").Length() != 1 {
		t.Error("pending filter")
	}
	frag := c.get("/webhooks/"+id+"/deliveries?event=contact.created", hx...)
	if frag.find("sidebar").Length() != 0 || frag.find("delivery").Length() != 1 {
		t.Errorf("htmx filter fragment:\n%.300s", frag.Body)
	}

	// Pause and resume with htmx: the row changes, an event waits while paused.
	paused := c.post("/webhooks/"+id+"/pause", nil, hx...).rows(t)
	if !strings.HasPrefix(text(paused.find("webhook-status")), "Pausiert") || paused.find("webhook-resume").Length() != 1 {
		t.Fatalf("pause fragment:\n%s", paused.Body)
	}
	if h, _ := s.db.Webhook(ctx, acct.ID, mustID(t, id)); h.Status != store.WebhookPaused {
		t.Fatalf("status %s", h.Status)
	}
	wantRedirect(t, c.post("/webhooks/"+id+"/resume", nil), "/webhooks")
	if h, _ := s.db.Webhook(ctx, acct.ID, mustID(t, id)); h.Status != store.WebhookActive {
		t.Fatalf("status after resume %s", h.Status)
	}

	// Edit: the events change, the URL stays.
	edit := c.get("/webhooks/" + id + "/edit")
	if n := edit.Doc.Find(`input[name="events"][checked]`).Length(); n != 2 {
		t.Errorf("edit form has %d events checked", n)
	}
	wantRedirect(t, c.post("/webhooks/"+id+"/edit", url.Values{"url": {rc.URL + "/hook"}, "events": {"*"}, "description": {"Alles"}}), "/webhooks")
	if h, _ := s.db.Webhook(ctx, acct.ID, mustID(t, id)); len(h.Events) != 1 || h.Events[0] != "*" || h.Description != "Alles" {
		t.Errorf("after edit %+v", h)
	}

	// Rotate: confirmed, then the new secret once; the old one still signs for 24 h.
	if conf := c.get("/webhooks/"+id+"/rotate", hx...).rows(t); conf.find("confirm-rotate").Length() != 1 {
		t.Fatalf("rotate confirmation:\n%s", conf.Body)
	}
	wantRedirect(t, c.post("/webhooks/"+id+"/rotate", nil), "/webhooks")
	list = c.get("/webhooks")
	rotated := list.find("webhook-secret").AttrOr("value", "")
	if rotated == "" || rotated == secret || !strings.Contains(text(list.find("webhook-status")), "Der alte Signaturschlüssel signiert noch bis") {
		t.Fatalf("rotated secret %q:\n%s", rotated, text(list.find("webhook-row")))
	}

	// Delete after the confirmation page.
	if conf := c.get("/webhooks/" + id + "/delete"); conf.find("confirm-delete").Length() != 1 || conf.find("sidebar").Length() != 1 {
		t.Fatal("delete confirmation page")
	}
	wantRedirect(t, c.post("/webhooks/"+id+"/delete", nil), "/webhooks")
	if _, err := s.db.Webhook(ctx, acct.ID, mustID(t, id)); err != store.ErrNotFound {
		t.Errorf("after delete: %v", err)
	}
	// The portal user is the actor in the activity log.
	acts, _, err := s.db.ActivityLog(ctx, acct.ID, store.ActivityFilter{ObjectType: store.ObjectWebhook}, store.Page{Page: 1, PerPage: 20})
	if err != nil || len(acts) < 5 || acts[0].Action != "webhook.deleted" || acts[0].ActorType != store.ActorUser {
		t.Errorf("activity %+v %v", acts, err)
	}
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscan(s, &id); err != nil {
		t.Fatal(err)
	}
	return id
}

// Another account's webhooks and deliveries are not found on any page.
func TestWebhookIsolation(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	a, b := newAccount(t, s.db, ""), newAccount(t, s.db, "")
	rc := newReceiver(t)
	ctx := context.Background()
	hook, _, err := s.webhooks.Create(ctx, b.ID, store.Actor{Type: store.ActorSystem}, store.WebhookSettings{URL: rc.URL + "/b-geheim", Events: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := s.webhooks.Test(ctx, b.ID, hook.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(a.Email, a.Password)
	if l := c.get("/webhooks"); strings.Contains(l.Body, "b-geheim") || l.find("webhook-row").Length() != 0 {
		t.Fatal("A sees B's webhook")
	}
	id := fmt.Sprint(hook.ID)
	for _, path := range []string{"/edit", "/deliveries", "/rotate", "/delete"} {
		wantStatus(t, c.get("/webhooks/"+id+path), http.StatusNotFound)
	}
	for _, path := range []string{"/edit", "/pause", "/resume", "/rotate", "/delete", "/test"} {
		wantStatus(t, c.post("/webhooks/"+id+path, url.Values{"url": {"https://example.com"}, "events": {"*"}}), http.StatusNotFound)
	}
	wantStatus(t, c.post(fmt.Sprintf("/webhook-deliveries/%d/resend", d.ID), nil), http.StatusNotFound)
	if got := len(rc.requests()); got != 1 {
		t.Errorf("B's receiver got %d requests, want only B's own test", got)
	}
	if h, err := s.db.Webhook(ctx, b.ID, hook.ID); err != nil || h.Status != store.WebhookActive || h.PreviousSecretExpiresAt != nil {
		t.Errorf("B's webhook changed: %+v %v", h, err)
	}
}

func TestMemberCannotManageWebhooks(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	if _, err := s.db.CreateUser(context.Background(), acct.ID, store.NewUser{Email: "member-hooks@example.com", Role: store.RoleMember, Password: "member password"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn("member-hooks@example.com", "member password")
	if c.get("/dashboard").find("nav-webhooks").Length() != 0 {
		t.Error("members see the webhooks entry")
	}
	for _, path := range []string{"/webhooks", "/webhooks/new", "/webhooks/1/deliveries"} {
		wantStatus(t, c.get(path), http.StatusForbidden)
	}
	wantStatus(t, c.post("/webhooks/new", url.Values{"url": {"https://example.com"}}), http.StatusForbidden)
	wantStatus(t, c.post("/webhook-deliveries/1/resend", nil), http.StatusForbidden)
}
