package webhook_test

import (
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// plainText returns the decoded text/plain part of a multipart/alternative mail.
func plainText(t *testing.T, raw []byte) (subject, text string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		t.Fatalf("content type %q: %v", mt, err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("no text/plain part: %v", err)
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain") {
			b, err := io.ReadAll(p) // quoted-printable is decoded by the reader
			if err != nil {
				t.Fatal(err)
			}
			return subject, string(b)
		}
	}
}

func TestPauseAfter20FailuresNotifiesTheOwner(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	down := true
	var mu sync.Mutex
	rc := newReceiver(t, func(int, *http.Request) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return http.StatusInternalServerError, "interner Fehler"
		}
		return http.StatusOK, ""
	})
	hook, _ := e.hook(t, rc.URL+"/crm", "*")
	w := e.svc.Worker(webhook.WorkerOptions{})
	// 19 failures, nothing happens yet.
	for range 19 {
		e.emit(t, store.Event{Name: store.EventContactCreated, Data: map[string]any{}})
	}
	e.process(t, w)
	if cur, _ := e.db.Webhook(ctx, e.acct, hook.ID); cur.Status != store.WebhookActive || cur.ConsecutiveFailures != 19 {
		t.Fatalf("after 19 failures: %s, %d", cur.Status, cur.ConsecutiveFailures)
	}
	// The 20th in a row pauses it.
	e.emit(t, store.Event{Name: store.EventContactCreated, Data: map[string]any{}})
	e.process(t, w)
	cur, _ := e.db.Webhook(ctx, e.acct, hook.ID)
	if cur.Status != store.WebhookPaused || cur.PauseReason != store.PauseFailures || cur.PausedAt == nil || cur.ConsecutiveFailures != 20 {
		t.Fatalf("after 20 failures: %+v", cur)
	}
	acts, _, err := e.db.ActivityLog(ctx, e.acct, store.ActivityFilter{ObjectType: store.ObjectWebhook, Action: "webhook.paused"}, store.Page{Page: 1, PerPage: 5})
	if err != nil || len(acts) != 1 || acts[0].ActorType != store.ActorSystem || !strings.Contains(string(acts[0].Details), `"reason": "failures"`) &&
		!strings.Contains(string(acts[0].Details), `"reason":"failures"`) {
		t.Fatalf("activity %+v %v", acts, err)
	}

	// The owner's notification goes out through the mailer to a real SMTP server.
	smtp := smtptest.Start(t, smtptest.Options{})
	relay, err := mailer.ParseRelayURL("smtp://"+smtp.Addr()+"?from=noreply@rundbrief.test&from_name=Rundbrief", mailer.Address{})
	if err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewTransports(e.db, e.box, mailer.TransportOptions{Relay: &relay, HELO: "rundbrief.test"})
	mw := mailer.NewSystemMailWorker(e.db, tr, mailer.SystemMailOptions{BaseURL: "https://rundbrief.test"})
	if n, err := mw.SendDue(ctx); err != nil || n != 1 {
		t.Fatalf("system mail: %d sent, %v", n, err)
	}
	msgs := smtp.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != e.owner {
		t.Fatalf("smtp got %+v, want one mail to %s", msgs, e.owner)
	}
	subject, text := plainText(t, msgs[0].Data)
	if subject != "Ihr Webhook wurde pausiert" {
		t.Errorf("subject %q", subject)
	}
	for _, part := range []string{rc.URL + "/crm", "20 Zustellversuche nacheinander fehlgeschlagen", "HTTP 500", `{"status": "active"}`} {
		if !strings.Contains(text, part) {
			t.Errorf("mail text lacks %q:\n%s", part, text)
		}
	}
	if n, _ := mw.SendDue(ctx); n != 0 {
		t.Error("the mail was sent twice")
	}

	// While paused nothing is sent: neither new events nor the waiting retries.
	before := len(rc.requests())
	e.emit(t, store.Event{Name: store.EventContactUpdated, Data: map[string]any{}})
	e.clock.Add(time.Hour)
	if n := e.process(t, w); n != 0 || len(rc.requests()) != before {
		t.Fatalf("a paused webhook got %d attempts", n)
	}
	// Re-activated, the 20 waiting deliveries go out at once (the event during the
	// pause is not delivered).
	mu.Lock()
	down = false
	mu.Unlock()
	active := store.WebhookActive
	cur, err = e.svc.Update(ctx, e.acct, actor, hook.ID, store.WebhookPatch{Status: &active})
	if err != nil || cur.Status != store.WebhookActive || cur.ConsecutiveFailures != 0 {
		t.Fatalf("resume: %+v %v", cur, err)
	}
	if n := e.process(t, w); n != 20 {
		t.Fatalf("after resume %d attempts, want 20", n)
	}
	for _, d := range e.deliveries(t, hook.ID) {
		if d.Status != store.DeliverySucceeded || d.Attempts != 2 {
			t.Errorf("delivery %d: %s after %d attempts", d.ID, d.Status, d.Attempts)
		}
	}
	acts, _, _ = e.db.ActivityLog(ctx, e.acct, store.ActivityFilter{ObjectType: store.ObjectWebhook, Action: "webhook.resumed"}, store.Page{Page: 1, PerPage: 5})
	if len(acts) != 1 || acts[0].ActorType != store.ActorKey {
		t.Errorf("resume not logged: %+v", acts)
	}
}

func TestTwoWorkerProcessesDeliverEachEventOnce(t *testing.T) {
	url := dbtest.URL(t)
	box := newBox(t)
	procs := []*store.DB{dbtest.Open(t, url), dbtest.Open(t, url)}
	res, err := procs[0].CreateAccount(context.Background(), store.NewAccount{Name: "Acme", Email: "o@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	acct := res.Account.ID
	rc := newReceiver(t, nil)
	svcs := []*webhook.Service{
		webhook.New(procs[0], webhook.Config{Box: box, AllowPrivate: true}),
		webhook.New(procs[1], webhook.Config{Box: box, AllowPrivate: true}),
	}
	ctx := context.Background()
	if _, _, err := svcs[0].Create(ctx, acct, actor, store.WebhookSettings{URL: rc.URL + "/all", Events: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svcs[1].Create(ctx, acct, actor, store.WebhookSettings{URL: rc.URL + "/created", Events: []string{store.EventContactCreated}}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range svcs {
		w := s.Worker(webhook.WorkerOptions{PollInterval: 20 * time.Millisecond, MaxInFlight: 8, PerWebhook: 4, DispatchBatch: 7})
		wg.Go(func() { _ = w.Run(runCtx) })
	}
	// Events arrive in many small transactions while both workers run.
	const batches, perBatch = 30, 10
	want := 0
	for i := range batches {
		var events []store.Event
		for j := range perBatch {
			name := store.EventContactUpdated
			if j%2 == 0 {
				name = store.EventContactCreated
				want++
			}
			events = append(events, store.Event{Name: name, Data: map[string]any{"i": i*perBatch + j}})
			want++
		}
		e := &env{db: procs[i%2], acct: acct}
		e.emit(t, events...)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(rc.requests()) < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a duplicate would show up by now
	stop()
	wg.Wait()

	reqs := rc.requests()
	if len(reqs) != want {
		t.Fatalf("receiver got %d requests, want %d", len(reqs), want)
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		key := r.Path + " " + r.Header.Get("X-Service-Event-Id")
		if seen[key] {
			t.Fatalf("event delivered twice: %s", key)
		}
		seen[key] = true
	}
	var undone int
	if err := procs[0].GetContext(ctx, &undone, `SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded' OR attempts <> 1`); err != nil || undone != 0 {
		t.Errorf("%d deliveries not succeeded in one attempt (%v)", undone, err)
	}
	var events int
	if err := procs[0].GetContext(ctx, &events, `SELECT count(*) FROM events e
WHERE NOT EXISTS (SELECT 1 FROM outbox_cursors k WHERE k.consumer = 'webhooks' AND k.account_id = e.account_id AND (e.xid, e.id) <= (k.last_xid, k.last_id))`); err != nil || events != 0 {
		t.Errorf("%d events not dispatched", events)
	}
}
