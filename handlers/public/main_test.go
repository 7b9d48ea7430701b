package public_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rundbrief/rundbrief/handlers"
	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/handlers/webtest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/services"
)

func TestMain(m *testing.M) { dbtest.Main(webtest.Closing(m)) }

// clock is real time plus an offset tests move forward (the fill time of a form).
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time                     { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Add(d time.Duration)                { c.offset.Add(int64(d)) }
func ptr[T any](v T) *T                             { return &v }
func tid(id string) string                          { return `[data-testid="` + id + `"]` }
func attr(s *goquery.Selection, name string) string { v, _ := s.Attr(name); return v }

// site is the whole application (API, portal, public pages) served over loopback
// at its own BASE_URL, with one account and its key.
type site struct {
	url    string
	db     *store.DB
	clock  *clock
	guard  *botguard.Guard
	tokens *mailer.Tokens
	acct   int64
	key    string
	v      *apitest.Validator
	http   *http.Client // follows no redirects

	appointments *appointment.Service
}

func newSite(t *testing.T) *site { return newSiteWith(t, nil) }

// newSiteWith is newSite with the API's own clock (nil: the site's clock, which
// the bot guard always uses).
func newSiteWith(t testing.TB, apiNow func() time.Time) *site {
	t.Helper()
	db := dbtest.NewDB(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{url: "http://" + ln.Addr().String(), db: db, clock: &clock{},
		v:    apitest.NewValidator(t, api.OpenAPIDocument()),
		http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	s.guard = botguard.New("public pages test secret", s.clock.Now)
	if s.tokens, err = mailer.NewTokens("public pages test secret, at least 32 characters long"); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	box, err := secret.NewBox("public pages test secret, at least 32 characters long")
	if err != nil {
		t.Fatal(err)
	}
	p, err := portal.New(&services.Set{DB: db, Imports: imports.New(db), Box: box, Log: log}, portal.Config{BaseURL: s.url})
	if err != nil {
		t.Fatal(err)
	}
	// The appointment book's booking pages (issue 22) run on the site's clock.
	s.appointments = appointment.New(db, appointment.Config{Guard: s.guard, BaseURL: s.url, Now: s.clock.Now})
	pub, err := public.New(&services.Set{DB: db, Guard: s.guard, Tokens: s.tokens, Log: log, Appointments: s.appointments},
		public.Config{BaseURL: s.url, Now: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if apiNow == nil {
		apiNow = s.clock.Now
	}
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Guard: s.guard},
		api.Config{BaseURL: s.url, RateLimit: 1_000_000, Now: apiNow})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: handlers.New(a, p, pub)}}
	srv.Start()
	t.Cleanup(srv.Close)

	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Bäckerei Sonnenschein", Email: "owner@baeckerei.test", Password: "a long password"})
	if err != nil {
		t.Fatal(err)
	}
	s.acct = res.Account.ID
	if _, s.key, err = db.CreateKey(context.Background(), s.acct, store.KeySettings{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// apiClient sends /v1 requests over the network and validates every response
// against openapi.json; with key it authenticates.
func (s *site) apiClient(t *testing.T, key string) *apitest.Client {
	c := apitest.NewURLClient(t, s.url, s.v)
	if key != "" {
		c.Header.Set("Authorization", "Bearer "+key)
	}
	return c
}

func (s *site) form(t testing.TB, in store.FormInput) store.Form {
	t.Helper()
	if in.Name == nil {
		in.Name = ptr("Website")
	}
	f, err := s.db.CreateForm(context.Background(), s.acct, store.Actor{Type: store.ActorKey, ID: 1}, in)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// page is a fetched HTML page.
type page struct {
	status int
	header http.Header
	doc    *goquery.Document
}

func (s *site) get(t *testing.T, path string) page {
	t.Helper()
	res, err := s.http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: res.StatusCode, header: res.Header, doc: doc}
}

// postForm posts a browser form to path and returns the status and Location.
func (s *site) postForm(t *testing.T, path string, body string) (int, string) {
	t.Helper()
	res, err := s.http.Post(s.url+path, "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}

func (s *site) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// confirmPath is the link of the newest confirmation mail to email.
func (s *site) confirmPath(t *testing.T, email string) string {
	t.Helper()
	var path string
	if err := s.db.GetContext(context.Background(), &path, `SELECT link_path FROM system_mails
		WHERE account_id = $1 AND to_email = $2 AND kind = $3 ORDER BY id DESC LIMIT 1`, s.acct, email, store.SystemMailDOI); err != nil {
		t.Fatalf("confirmation mail to %s: %v", email, err)
	}
	return path
}
