package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// verifyStripe checks an X-Service-Signature value with Stripe's own library,
// which reads it as a Stripe-Signature header.
func verifyStripe(body []byte, header, secret string) error {
	return stripewebhook.ValidatePayload(body, header, secret)
}

// stripeEntries splits X-Service-Signature into its timestamp and v1 entries.
func stripeEntries(t *testing.T, header string) (int64, []string) {
	t.Helper()
	if !regexp.MustCompile(`^t=\d+(,v1=[0-9a-f]{64})+$`).MatchString(header) {
		t.Fatalf("X-Service-Signature %q has the wrong form", header)
	}
	parts := strings.Split(header, ",")
	ts, _ := strconv.ParseInt(strings.TrimPrefix(parts[0], "t="), 10, 64)
	var sigs []string
	for _, p := range parts[1:] {
		sigs = append(sigs, strings.TrimPrefix(p, "v1="))
	}
	return ts, sigs
}

// stripeByHand is a v1 entry computed by hand: hex HMAC-SHA256 keyed with the
// whole secret over "<t>.<body>".
func stripeByHand(ts int64, body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", ts)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// standardByHand is the Standard Webhooks signature: base64 HMAC-SHA256 keyed
// with the decoded secret over "<id>.<timestamp>.<body>".
func standardByHand(t *testing.T, id, ts string, body []byte, secret string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestDeliveryIsSignedAndCarriesEveryHeader(t *testing.T) {
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	rc := newReceiver(t, nil)
	hook, secret := e.hook(t, rc.URL+"/hooks/rundbrief", "*")
	ids := e.emit(t, store.Event{Name: store.EventContactCreated, Data: map[string]any{"contact": map[string]any{"id": 7, "email": "a@example.com"}}})
	if n := e.process(t, e.svc.Worker(webhook.WorkerOptions{})); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	ds := e.deliveries(t, hook.ID)
	if len(ds) != 1 {
		t.Fatalf("%d deliveries", len(ds))
	}
	d := ds[0]
	for name, want := range map[string]string{
		"Content-Type":       "application/json; charset=utf-8",
		"User-Agent":         "Rundbrief-Webhooks/1.0",
		"X-Service-Event":    "contact.created",
		"X-Service-Event-Id": ids[0],
		"X-Service-Delivery": d.PublicID,
		"X-Service-Attempt":  "1",
		"Webhook-Id":         ids[0],
		"Webhook-Timestamp":  strconv.FormatInt(e.clock.Now().Unix(), 10),
	} {
		if got := r.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if r.Method != http.MethodPost || r.Path != "/hooks/rundbrief" || !strings.HasPrefix(d.PublicID, "whd_") {
		t.Errorf("%s %s, delivery %q", r.Method, r.Path, d.PublicID)
	}

	// The body: exactly id, event, created_at (Europe/Berlin) and data, and what
	// the delivery log stores is byte for byte what was sent.
	var body map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body) != 4 || string(body["id"]) != `"`+ids[0]+`"` || string(body["event"]) != `"contact.created"` ||
		string(body["data"]) != `{"contact":{"id":7,"email":"a@example.com"}}` {
		t.Errorf("body %s", r.Body)
	}
	var created string
	_ = json.Unmarshal(body["created_at"], &created)
	if ts, err := time.Parse(time.RFC3339, created); err != nil || ts.Format("-07:00") != ts.In(store.Berlin).Format("-07:00") {
		t.Errorf("created_at %q is not Europe/Berlin ISO 8601: %v", created, err)
	}
	if d.Payload != string(r.Body) {
		t.Errorf("stored payload differs from the body sent")
	}

	// Stripe's scheme: Stripe's library accepts it, and by hand.
	sig := r.Header.Get("X-Service-Signature")
	if err := verifyStripe(r.Body, sig, secret); err != nil {
		t.Errorf("stripe-go rejects X-Service-Signature: %v", err)
	}
	if err := verifyStripe(r.Body, sig, "whsec_"+strings.Repeat("A", 44)); err == nil {
		t.Error("stripe-go accepts a wrong secret")
	}
	if err := verifyStripe(append([]byte(" "), r.Body...), sig, secret); err == nil {
		t.Error("stripe-go accepts a changed body")
	}
	ts, sigs := stripeEntries(t, sig)
	if ts != e.clock.Now().Unix() || len(sigs) != 1 || sigs[0] != stripeByHand(ts, r.Body, secret) {
		t.Errorf("X-Service-Signature %q does not match the hand-made HMAC", sig)
	}
	// Standard Webhooks, by hand.
	std := r.Header.Get("Webhook-Signature")
	if want := "v1," + standardByHand(t, ids[0], r.Header.Get("Webhook-Timestamp"), r.Body, secret); std != want {
		t.Errorf("webhook-signature %q, want %q", std, want)
	}

	if d.Status != store.DeliverySucceeded || d.Attempts != 1 || d.LastStatusCode == nil || *d.LastStatusCode != 200 ||
		d.ResponseExcerpt != "ok" || d.NextAttemptAt != nil || d.LastError != "" {
		t.Errorf("delivery %+v", d)
	}
}

func TestRetryScheduleWithInjectedClock(t *testing.T) {
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	rc := newReceiver(t, func(int, *http.Request) (int, string) { return http.StatusServiceUnavailable, "wartung" })
	hook, _ := e.hook(t, rc.URL, "*")
	e.emit(t, store.Event{Name: store.EventListLeft, Data: map[string]any{"list": map[string]any{"id": 1}}})
	w := e.svc.Worker(webhook.WorkerOptions{})
	start := e.clock.Now()
	if n := e.process(t, w); n != 1 {
		t.Fatalf("first attempt: %d", n)
	}
	id := e.deliveries(t, hook.ID)[0].ID
	attemptAt := start
	for i, delay := range []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 12 * time.Hour} {
		d, _ := e.delivery(t, id)
		if d.Status != store.DeliveryRetrying || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(attemptAt.Add(delay)) {
			t.Fatalf("after attempt %d: %s, next %v, want %v", i+1, d.Status, d.NextAttemptAt, attemptAt.Add(delay))
		}
		e.clock.Set(attemptAt.Add(delay - time.Second))
		if n := e.process(t, w); n != 0 {
			t.Fatalf("attempt %d ran %v early", i+2, time.Second)
		}
		e.clock.Set(attemptAt.Add(delay))
		if n := e.process(t, w); n != 1 {
			t.Fatalf("attempt %d did not run on time", i+2)
		}
		attemptAt = attemptAt.Add(delay)
	}
	d, attempts := e.delivery(t, id)
	if d.Status != store.DeliveryFailed || d.Attempts != 6 || d.NextAttemptAt != nil || d.LastStatusCode == nil || *d.LastStatusCode != 503 ||
		d.ResponseExcerpt != "wartung" || !strings.Contains(d.LastError, "503") {
		t.Fatalf("after 6 attempts: %+v", d)
	}
	if len(attempts) != 6 {
		t.Fatalf("%d attempts recorded", len(attempts))
	}
	e.clock.Add(48 * time.Hour)
	if n := e.process(t, w); n != 0 {
		t.Fatalf("a 7th automatic attempt ran")
	}
	reqs := rc.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("X-Service-Delivery") != d.PublicID || string(r.Body) != d.Payload ||
			r.Header.Get("X-Service-Attempt") != strconv.Itoa(i+1) {
			t.Errorf("attempt %d: delivery %q attempt %q", i+1, r.Header.Get("X-Service-Delivery"), r.Header.Get("X-Service-Attempt"))
		}
		if ts, _ := stripeEntries(t, r.Header.Get("X-Service-Signature")); ts != attempts[i].AttemptedAt.Unix() {
			t.Errorf("attempt %d signed at %d, recorded at %v", i+1, ts, attempts[i].AttemptedAt)
		}
		if attempts[i].Attempt != i+1 || attempts[i].StatusCode == nil || *attempts[i].StatusCode != 503 {
			t.Errorf("attempt record %+v", attempts[i])
		}
	}
	// Six failures in a row are not twenty: the webhook stays active.
	if cur, _ := e.db.Webhook(context.Background(), e.acct, hook.ID); cur.Status != store.WebhookActive || cur.ConsecutiveFailures != 6 {
		t.Errorf("webhook %s with %d failures", cur.Status, cur.ConsecutiveFailures)
	}
}

func TestFailuresAreRecorded(t *testing.T) {
	cases := []struct {
		name     string
		respond  func(int, *http.Request) (int, string)
		timeout  time.Duration
		code     int
		errPart  string
		excerpt  int // expected excerpt length; -1: don't check
		paused   bool
		retrying bool
	}{
		{"redirect is not followed", func(_ int, r *http.Request) (int, string) { return http.StatusFound, "moved" }, 0, 302, "Weiterleitung", 5, false, true},
		{"server error", func(int, *http.Request) (int, string) { return 500, strings.Repeat("ä", 3000) }, 0, 500, "HTTP 500", 1024, false, true},
		{"gone pauses at once", func(int, *http.Request) (int, string) { return http.StatusGone, "" }, 0, 410, "410", 0, true, false},
		{"too slow", func(int, *http.Request) (int, string) { time.Sleep(time.Second); return 200, "" }, 200 * time.Millisecond, 0, "Zeitüberschreitung", 0, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, webhook.Config{AllowPrivate: true, Timeout: c.timeout})
			rc := newReceiver(t, c.respond)
			hook, _ := e.hook(t, rc.URL+"/in", "*")
			e.emit(t, store.Event{Name: store.EventContactDeleted, Data: map[string]any{}})
			e.process(t, e.svc.Worker(webhook.WorkerOptions{}))
			d := e.deliveries(t, hook.ID)[0]
			code := 0
			if d.LastStatusCode != nil {
				code = *d.LastStatusCode
			}
			if code != c.code || !strings.Contains(d.LastError, c.errPart) || (c.excerpt >= 0 && len(d.ResponseExcerpt) != c.excerpt) {
				t.Errorf("delivery: code %d, error %q, excerpt %d bytes", code, d.LastError, len(d.ResponseExcerpt))
			}
			if (d.Status == store.DeliveryRetrying) != c.retrying || (!c.retrying && d.Status != store.DeliveryFailed) {
				t.Errorf("status %s", d.Status)
			}
			for _, r := range rc.requests() {
				if r.Path != "/in" {
					t.Errorf("request to %s: a redirect was followed", r.Path)
				}
			}
			cur, _ := e.db.Webhook(context.Background(), e.acct, hook.ID)
			if (cur.Status == store.WebhookPaused) != c.paused {
				t.Errorf("webhook %s (%s)", cur.Status, cur.PauseReason)
			}
			if c.paused && cur.PauseReason != store.PauseGone {
				t.Errorf("pause reason %q", cur.PauseReason)
			}
		})
	}
}

func TestPrivateTargetsAreRefused(t *testing.T) {
	ctx := context.Background()
	rc := newReceiver(t, nil)
	port := rc.Listener.Addr().String()
	port = port[strings.LastIndex(port, ":")+1:]
	resolver := &fakeResolver{answers: map[string][]string{
		"intern.example.test": {"10.1.2.3"},
		"mixed.example.test":  {"93.184.216.34", "127.0.0.1"},
		"rebind.example.test": {"93.184.216.34"}, // public when saved, loopback when sent (below)
	}}
	e := newEnv(t, webhook.Config{Resolver: resolver})
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/", "http://127.8.9.10/", "http://[::1]:" + port + "/", "http://10.0.0.5/",
		"http://172.16.3.4/", "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/",
		"http://0.0.0.0/", "http://224.0.0.1/", "http://[fe80::1]/", "http://[fc00::1]/", "http://[::ffff:127.0.0.1]/",
		"http://[::]/", "https://intern.example.test/", "https://mixed.example.test/", "https://unknown.example.test/",
	} {
		_, _, err := e.svc.Create(ctx, e.acct, actor, store.WebhookSettings{URL: u, Events: []string{"*"}})
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Fields["url"] == "" {
			t.Errorf("%s: %v, want a validation error on url", u, err)
		}
	}
	// localhost through the system resolver, as in production.
	sys := newEnv(t, webhook.Config{})
	if _, _, err := sys.svc.Create(ctx, sys.acct, actor, store.WebhookSettings{URL: "http://localhost:" + port + "/", Events: []string{"*"}}); err == nil {
		t.Error("http://localhost accepted")
	}
	// DNS rebinding: the name was public when saved; the dialer checks the address
	// it connects to and refuses.
	hook, _ := e.hook(t, "http://rebind.example.test:"+port+"/", "*")
	resolver.set("rebind.example.test", "127.0.0.1")
	e.emit(t, store.Event{Name: store.EventContactCreated, Data: map[string]any{}})
	e.process(t, e.svc.Worker(webhook.WorkerOptions{}))
	d := e.deliveries(t, hook.ID)[0]
	if d.Status != store.DeliveryRetrying || !strings.Contains(d.LastError, "nicht öffentlich") {
		t.Errorf("rebound delivery: %s %q", d.Status, d.LastError)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("the receiver on 127.0.0.1 got %d requests", n)
	}
	// RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE=true lifts the rule.
	dev := newEnv(t, webhook.Config{AllowPrivate: true})
	devHook, _ := dev.hook(t, "http://localhost:"+port+"/dev", "*")
	dev.emit(t, store.Event{Name: store.EventContactCreated, Data: map[string]any{}})
	dev.process(t, dev.svc.Worker(webhook.WorkerOptions{}))
	if d := dev.deliveries(t, devHook.ID)[0]; d.Status != store.DeliverySucceeded || len(rc.requests()) != 1 {
		t.Errorf("allowed private target: %s %q", d.Status, d.LastError)
	}
}

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "8.8.8.8": true, "2606:4700:4700::1111": true, "2002:5db8:d822::1": true,
		"127.0.0.1": false, "10.0.0.1": false, "172.31.255.255": false, "192.168.0.1": false, "169.254.1.1": false,
		"100.64.0.1": false, "100.127.255.255": false, "0.0.0.0": false, "0.1.2.3": false, "224.0.0.251": false,
		"255.255.255.255": false, "240.0.0.1": false, "192.0.2.1": false, "198.18.0.1": false, "::1": false, "::": false,
		"fe80::1": false, "fc00::1": false, "fd12::1": false, "ff02::1": false, "::ffff:10.0.0.1": false,
		"::ffff:93.184.216.34": true, "2001:db8::1": false, "64:ff9b::a00:1": false, "2002:0a00:0001::1": false,
		"2001::1": false,
	} {
		if got := webhook.PublicAddr(mustAddr(t, addr)); got != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestEventFilter(t *testing.T) {
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	rc := newReceiver(t, nil)
	all, _ := e.hook(t, rc.URL+"/all", "*")
	some, _ := e.hook(t, rc.URL+"/some", store.EventContactCreated, store.EventListLeft)
	e.emit(t,
		store.Event{Name: store.EventContactCreated, Data: map[string]any{}},
		store.Event{Name: store.EventContactUpdated, Data: map[string]any{}},
		store.Event{Name: store.EventListLeft, Data: map[string]any{}},
		store.Event{Name: store.EventEmailOpened, Data: map[string]any{}})
	e.process(t, e.svc.Worker(webhook.WorkerOptions{}))
	got := map[string][]string{}
	for _, r := range rc.requests() {
		got[r.Path] = append(got[r.Path], r.Header.Get("X-Service-Event"))
	}
	for path := range got {
		slices.Sort(got[path])
	}
	if want := []string{"contact.created", "contact.updated", "email.opened", "list.left"}; !slices.Equal(got["/all"], want) {
		t.Errorf("* got %v", got["/all"])
	}
	if want := []string{"contact.created", "list.left"}; !slices.Equal(got["/some"], want) {
		t.Errorf("filtered got %v", got["/some"])
	}
	if len(e.deliveries(t, all.ID)) != 4 || len(e.deliveries(t, some.ID)) != 2 {
		t.Error("delivery log does not match")
	}
}

func TestRotationSignsWithBothSecretsFor24Hours(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	rc := newReceiver(t, nil)
	hook, oldSecret := e.hook(t, rc.URL, "*")
	t0 := e.clock.Now()
	_, newSecret, err := e.svc.RotateSecret(ctx, e.acct, actor, hook.ID)
	if err != nil || newSecret == oldSecret {
		t.Fatal(err)
	}
	w := e.svc.Worker(webhook.WorkerOptions{})
	check := func(at time.Time, wantOld bool) {
		t.Helper()
		e.clock.Set(at)
		n := len(rc.requests())
		e.emit(t, store.Event{Name: store.EventContactCreated, Data: map[string]any{}})
		e.process(t, w)
		reqs := rc.requests()
		if len(reqs) != n+1 {
			t.Fatalf("no request")
		}
		r := reqs[n]
		sig := r.Header.Get("X-Service-Signature")
		_, sigs := stripeEntries(t, sig)
		std := strings.Fields(r.Header.Get("Webhook-Signature"))
		want := 1
		if wantOld {
			want = 2
		}
		if len(sigs) != want || len(std) != want {
			t.Fatalf("at +%v: %d v1= entries and %d v1, entries, want %d", at.Sub(t0), len(sigs), len(std), want)
		}
		ts := r.Header.Get("Webhook-Timestamp")
		id := r.Header.Get("Webhook-Id")
		if err := stripewebhook.ValidatePayloadIgnoringTolerance(r.Body, sig, newSecret); err != nil {
			t.Errorf("new secret: %v", err)
		}
		if std[0] != "v1,"+standardByHand(t, id, ts, r.Body, newSecret) {
			t.Errorf("first webhook-signature entry is not the new secret's")
		}
		oldErr := stripewebhook.ValidatePayloadIgnoringTolerance(r.Body, sig, oldSecret)
		if wantOld {
			if oldErr != nil {
				t.Errorf("old secret rejected within 24 h: %v", oldErr)
			}
			if std[1] != "v1,"+standardByHand(t, id, ts, r.Body, oldSecret) {
				t.Errorf("second webhook-signature entry is not the old secret's")
			}
		} else if oldErr == nil {
			t.Errorf("old secret still accepted after 24 h")
		}
	}
	check(t0.Add(time.Hour), true)
	check(t0.Add(24*time.Hour-time.Second), true)
	check(t0.Add(24*time.Hour), false)
}

func TestResendMakesANewAttemptOfTheSameDelivery(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	rc := newReceiver(t, func(n int, _ *http.Request) (int, string) {
		if n == 1 {
			return 500, "kaputt"
		}
		return 204, ""
	})
	hook, _ := e.hook(t, rc.URL, "*")
	e.emit(t, store.Event{Name: store.EventEmailClicked, Data: map[string]any{"url": "https://example.com"}})
	e.process(t, e.svc.Worker(webhook.WorkerOptions{}))
	first := e.deliveries(t, hook.ID)[0]
	if first.Status != store.DeliveryRetrying {
		t.Fatalf("first attempt: %s", first.Status)
	}
	d, attempts, err := e.svc.Resend(ctx, e.acct, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != first.ID || d.Status != store.DeliverySucceeded || d.Attempts != 2 || len(attempts) != 2 || d.NextAttemptAt != nil ||
		*d.LastStatusCode != 204 {
		t.Fatalf("after resend: %+v, %d attempts", d, len(attempts))
	}
	// A resend of a finished delivery: one more attempt, same ids and body.
	d, attempts, err = e.svc.Resend(ctx, e.acct, first.ID)
	if err != nil || d.Attempts != 3 || len(attempts) != 3 || d.Status != store.DeliverySucceeded {
		t.Fatalf("second resend: %+v %v", d, err)
	}
	reqs := rc.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("X-Service-Delivery") != first.PublicID || r.Header.Get("X-Service-Event-Id") != first.EventPublicID ||
			string(r.Body) != first.Payload || r.Header.Get("X-Service-Attempt") != strconv.Itoa(i+1) {
			t.Errorf("request %d: delivery %q event %q attempt %q", i+1, r.Header.Get("X-Service-Delivery"),
				r.Header.Get("X-Service-Event-Id"), r.Header.Get("X-Service-Attempt"))
		}
	}
	if len(e.deliveries(t, hook.ID)) != 1 {
		t.Error("a resend created another delivery")
	}
	// Unknown or foreign deliveries are not found.
	other, err := e.db.CreateAccount(ctx, store.NewAccount{Name: "Other", Email: "other@example.com", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Resend(ctx, other.Account.ID, first.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("foreign resend: %v", err)
	}
}

func TestTestSendUsesASampleAndIsNotRetried(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	status := 200
	rc := newReceiver(t, func(int, *http.Request) (int, string) { return status, "" })
	hook, secret := e.hook(t, rc.URL, store.EventEmailBounced)
	d, attempts, err := e.svc.Test(ctx, e.acct, hook.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Test || d.Event != store.EventEmailBounced || d.Status != store.DeliverySucceeded || len(attempts) != 1 {
		t.Fatalf("test delivery %+v", d)
	}
	r := rc.requests()[0]
	var body struct {
		ID    string         `json:"id"`
		Event string         `json:"event"`
		Test  bool           `json:"test"`
		Data  map[string]any `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if !body.Test || body.Event != "email.bounced" || body.Data["reason"] == nil || !strings.HasPrefix(body.ID, "evt_") ||
		r.Header.Get("X-Service-Event-Id") != body.ID {
		t.Errorf("test body %s", r.Body)
	}
	if err := verifyStripe(r.Body, r.Header.Get("X-Service-Signature"), secret); err != nil {
		t.Errorf("test send not signed: %v", err)
	}
	// A chosen event, a paused webhook, a failing receiver: recorded, not retried.
	paused := store.WebhookPaused
	if _, err := e.svc.Update(ctx, e.acct, actor, hook.ID, store.WebhookPatch{Status: &paused}); err != nil {
		t.Fatal(err)
	}
	status = 500
	d, _, err = e.svc.Test(ctx, e.acct, hook.ID, store.EventOrderCompleted)
	if err != nil || d.Event != store.EventOrderCompleted || d.Status != store.DeliveryFailed || d.NextAttemptAt != nil {
		t.Fatalf("failed test: %+v %v", d, err)
	}
	if _, _, err := e.svc.Test(ctx, e.acct, hook.ID, "contact.exploded"); err == nil {
		t.Error("unknown event accepted")
	}
	if _, _, err := e.svc.Test(ctx, e.acct, hook.ID+1000, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown webhook: %v", err)
	}
}

func TestCatalogueNamesEveryEventKind(t *testing.T) {
	var names []string
	for _, k := range webhook.Catalogue() {
		names = append(names, k.Name)
		b, err := json.Marshal(k.Sample(time.Now()))
		if err != nil || !strings.HasPrefix(string(b), "{") || k.Description == "" {
			t.Errorf("%s: sample %s %v", k.Name, b, err)
		}
	}
	if !slices.Equal(names, store.EventKinds()) || len(names) != 17 {
		t.Errorf("catalogue %v", names)
	}
}
