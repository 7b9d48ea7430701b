package webhook_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/webhook"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// clock is an injected clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// request is one request a receiver got.
type request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is a real HTTP server that records every request and answers with
// whatever respond returns (nil: 200 "ok").
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []request
	respond func(n int, r *http.Request) (int, string)
}

func newReceiver(t *testing.T, respond func(n int, r *http.Request) (int, string)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()})
		n := len(rc.reqs)
		rc.mu.Unlock()
		code, text := http.StatusOK, "ok"
		if rc.respond != nil {
			code, text = rc.respond(n, r)
		}
		if code >= 300 && code < 400 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, text)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// env is one account on a fresh database with a webhook service.
type env struct {
	db    *store.DB
	url   string
	box   *secret.Box
	acct  int64
	owner string
	clock *clock
	svc   *webhook.Service
}

var actor = store.Actor{Type: store.ActorKey, ID: 0}

func newBox(t testing.TB) *secret.Box {
	t.Helper()
	box, err := secret.NewBox("webhook-package-tests-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func newEnv(t *testing.T, cfg webhook.Config) *env {
	t.Helper()
	url := dbtest.URL(t)
	e := &env{db: dbtest.Open(t, url), url: url, box: newBox(t), clock: newClock(time.Now().Truncate(time.Second))}
	res, err := e.db.CreateAccount(context.Background(), store.NewAccount{Name: "Acme GmbH", Email: "inhaber@acme.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	e.acct, e.owner = res.Account.ID, res.Owner.Email
	cfg.Box = e.box
	if cfg.Now == nil {
		cfg.Now = e.clock.Now
	}
	e.svc = webhook.New(e.db, cfg)
	return e
}

func (e *env) hook(t *testing.T, url string, events ...string) (store.Webhook, string) {
	t.Helper()
	w, sec, err := e.svc.Create(context.Background(), e.acct, actor, store.WebhookSettings{URL: url, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return w, sec
}

func (e *env) emit(t *testing.T, events ...store.Event) []string {
	t.Helper()
	var ids []string
	err := e.db.WithTx(context.Background(), func(tx *sqlx.Tx) error {
		var err error
		ids, err = store.EmitAll(context.Background(), tx, e.acct, events)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (e *env) process(t *testing.T, w *webhook.Worker) int {
	t.Helper()
	n, err := w.Process(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) delivery(t *testing.T, id int64) (store.WebhookDelivery, []store.WebhookAttempt) {
	t.Helper()
	d, attempts, err := e.db.WebhookDelivery(context.Background(), e.acct, id)
	if err != nil {
		t.Fatal(err)
	}
	return d, attempts
}

func (e *env) deliveries(t *testing.T, hookID int64) []store.WebhookDelivery {
	t.Helper()
	ds, _, err := e.db.WebhookDeliveries(context.Background(), e.acct, hookID, store.DeliveryFilter{}, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// fakeResolver answers host lookups from a table that tests change; unknown
// hosts do not exist.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []netip.Addr
	for _, a := range f.answers[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (f *fakeResolver) set(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[host] = addrs
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
