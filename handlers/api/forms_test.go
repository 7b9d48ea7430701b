package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/services"
)

// formsClock is the clock of the API and its bot guard; tests move it to let a
// form's fill time pass.
type formsClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *formsClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *formsClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// formsEnv is an account with a key and an API whose bot guard runs on a test clock.
type formsEnv struct {
	*env
	clock *formsClock
	guard *botguard.Guard
	anon  *apitest.Client // no key: what a visitor's browser sends
}

func newFormsEnv(t *testing.T) *formsEnv {
	t.Helper()
	e := newEnv(t, "business")
	// The start of a real minute: the per-minute windows of these tests stay put.
	clk := &formsClock{t: time.Now().Truncate(time.Minute)}
	guard := botguard.New("forms test secret", clk.now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.New(&services.Set{DB: e.db, APILog: store.NewAPILogWriter(e.db, log), Log: log, Guard: guard},
		api.Config{BaseURL: "https://rundbrief.test", RateLimit: 1_000_000, Now: clk.now})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	e.h = r
	e.c = e.client(t, r, e.key)
	return &formsEnv{env: e, clock: clk, guard: guard, anon: e.client(t, r, "")}
}

type formJSON struct {
	ID              int64    `json:"id"`
	Name            string   `json:"name"`
	Token           string   `json:"token"`
	ListIDs         []int64  `json:"list_ids"`
	Tags            []string `json:"tags"`
	DoubleOptIn     bool     `json:"double_opt_in"`
	Fields          []string `json:"fields"`
	SuccessRedirect string   `json:"success_redirect"`
	SuccessMessage  string   `json:"success_message"`
	ProofOfWork     bool     `json:"proof_of_work"`
	MinFillSeconds  int      `json:"min_fill_seconds"`
	Submissions     int64    `json:"submissions"`
	SubscribeURL    string   `json:"subscribe_url"`
	HostedURL       string   `json:"hosted_url"`
}

func (e *formsEnv) form(t *testing.T, body map[string]any) formJSON {
	t.Helper()
	if body["name"] == nil {
		body["name"] = "Website"
	}
	var f struct {
		Data formJSON `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "POST", "/v1/forms", body, 201), &f); err != nil {
		t.Fatal(err)
	}
	return f.Data
}

// stamp fetches the form's stamp as signup.js does and lets 5 seconds pass.
func (e *formsEnv) stamp(t *testing.T, token string) string {
	t.Helper()
	var ch struct {
		Stamp     string              `json:"stamp"`
		Challenge *botguard.Challenge `json:"challenge"`
	}
	r := e.anon.Request(http.MethodGet, "/v1/subscribe/"+token+"/challenge", nil)
	if r.Status != 200 {
		t.Fatalf("challenge: %d %s", r.Status, r.Body)
	}
	r.Data(t, &ch)
	e.clock.add(5 * time.Second)
	return ch.Stamp
}

// post sends a sign-up from ip: JSON when body is a map, form-encoded when it is url.Values.
func (e *formsEnv) post(t *testing.T, token, ip string, body any) *apitest.Response {
	t.Helper()
	var req *http.Request
	switch b := body.(type) {
	case url.Values:
		req = httptest.NewRequest(http.MethodPost, "/v1/subscribe/"+token, strings.NewReader(b.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		req = httptest.NewRequest(http.MethodPost, "/v1/subscribe/"+token, strings.NewReader(string(enc)))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Origin", "https://www.kunde.example")
	req.RemoteAddr = ip + ":40000"
	r := e.anon.Do(req)
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("POST /v1/subscribe: Access-Control-Allow-Origin %q, want *", got)
	}
	return r
}

type signUpJSON struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func (e *formsEnv) signUp(t *testing.T, token string, body map[string]any) signUpJSON {
	t.Helper()
	r := e.post(t, token, "203.0.113.5", body)
	if r.Status != 201 {
		t.Fatalf("sign-up: %d %s", r.Status, r.Body)
	}
	var out signUpJSON
	r.Data(t, &out)
	return out
}

func ptrTo[T any](v T) *T { return &v }

func (e *formsEnv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFormsCRUDAPI(t *testing.T) {
	t.Parallel()
	e := newFormsEnv(t)
	l := e.list(t, "News", false)
	f := e.form(t, map[string]any{"name": "Fußzeile", "list_ids": []int64{l.ID}, "tags": []string{"web"},
		"fields": []string{"last_name", "first_name"}, "success_message": "Danke!"})
	if len(f.Token) != 24 || !f.DoubleOptIn || f.MinFillSeconds != 3 || f.ProofOfWork || len(f.ListIDs) != 1 ||
		strings.Join(f.Fields, ",") != "first_name,last_name" || f.SubscribeURL != "https://rundbrief.test/v1/subscribe/"+f.Token ||
		f.HostedURL != "https://rundbrief.test/subscribe/"+f.Token {
		t.Errorf("created: %+v", f)
	}
	var got struct {
		Data formJSON `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "PATCH", fmt.Sprintf("/v1/forms/%d", f.ID),
		map[string]any{"proof_of_work": true, "min_fill_seconds": 0, "success_redirect": "https://example.com/danke"}, 200), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Data.ProofOfWork || got.Data.MinFillSeconds != 0 || got.Data.SuccessRedirect != "https://example.com/danke" ||
		got.Data.Token != f.Token || got.Data.Name != "Fußzeile" {
		t.Errorf("patched: %+v", got.Data)
	}
	e.form(t, map[string]any{"name": "Zweites"})
	var page struct {
		Data []formJSON `json:"data"`
		pageJSON
	}
	if err := json.Unmarshal(e.do(t, "GET", "/v1/forms?per_page=1", nil, 200), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].Name != "Zweites" || page.Meta.Pagination.Total != 2 {
		t.Errorf("list: %+v", page)
	}
	e.do(t, "GET", fmt.Sprintf("/v1/forms/%d", f.ID), nil, 200)

	// Validation: unknown field, a relative redirect, a list of another account
	// (in the same database, so that its id is real).
	ctx := context.Background()
	acc, err := e.db.CreateAccount(ctx, store.NewAccount{Name: "Andere GmbH", Email: "owner@andere.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := e.db.CreateKey(ctx, acc.Account.ID, store.KeySettings{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	other := e.client(t, e.h, otherKey)
	foreign, err := e.db.CreateList(ctx, acc.Account.ID, store.Actor{Type: store.ActorKey, ID: 1}, store.ListInput{Name: ptrTo("Fremd")})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []map[string]any{
		{"name": "x", "fields": []string{"email"}},
		{"name": "x", "success_redirect": "/danke"},
		{"name": "x", "list_ids": []int64{foreign.ID}},
		{"name": ""},
	} {
		wantError(t, e.c.Request("POST", "/v1/forms", body), 422, "validation_error")
	}
	wantError(t, e.c.Request("PATCH", fmt.Sprintf("/v1/forms/%d", f.ID), map[string]any{"list_ids": []int64{foreign.ID}}), 422, "validation_error")

	// Another account's form is not found, for every operation.
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		wantError(t, other.Request(m, fmt.Sprintf("/v1/forms/%d", f.ID), map[string]any{}), 404, "not_found")
	}
	wantError(t, other.Request("GET", fmt.Sprintf("/v1/forms/%d/embed", f.ID), nil), 404, "not_found")

	// A read-only key cannot create forms.
	_, readKey := e.newKey(t, store.KeySettings{Name: "ro", Scopes: []string{"read"}})
	ro := e.client(t, e.h, readKey)
	wantError(t, ro.Request("POST", "/v1/forms", map[string]any{"name": "x"}), 403, "forbidden")

	e.do(t, "DELETE", fmt.Sprintf("/v1/forms/%d", f.ID), nil, 204)
	wantError(t, e.c.Request("GET", fmt.Sprintf("/v1/forms/%d", f.ID), nil), 404, "not_found")
	wantError(t, e.anon.Request("GET", "/v1/subscribe/"+f.Token+"/challenge", nil), 404, "not_found")
}

func TestFormEmbedAPI(t *testing.T) {
	t.Parallel()
	e := newFormsEnv(t)
	f := e.form(t, map[string]any{"fields": []string{"first_name", "city"}, "proof_of_work": true})
	var out struct {
		Data struct {
			HTML         string `json:"html"`
			SubscribeURL string `json:"subscribe_url"`
			ChallengeURL string `json:"challenge_url"`
			ScriptURL    string `json:"script_url"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "GET", fmt.Sprintf("/v1/forms/%d/embed", f.ID), nil, 200), &out); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(out.Data.HTML))
	if err != nil {
		t.Fatal(err)
	}
	form := doc.Find("form")
	if action, _ := form.Attr("action"); action != "https://rundbrief.test/v1/subscribe/"+f.Token || action != out.Data.SubscribeURL {
		t.Errorf("action %q", action)
	}
	if m, _ := form.Attr("method"); m != "post" {
		t.Errorf("method %q", m)
	}
	if c, _ := form.Attr("data-rundbrief-challenge"); c != out.Data.SubscribeURL+"/challenge" || c != out.Data.ChallengeURL {
		t.Errorf("challenge URL %q", c)
	}
	for _, name := range []string{"email", "first_name", "city"} {
		in := form.Find(`input[name="` + name + `"]`)
		id, _ := in.Attr("id")
		if in.Length() != 1 || id == "" || form.Find(`label[for="`+id+`"]`).Length() != 1 {
			t.Errorf("field %s without its label", name)
		}
	}
	if form.Find(`input[name="last_name"]`).Length() != 0 {
		t.Error("a field the form does not show is in the snippet")
	}
	hp := form.Find(`input[name="website"]`)
	box := hp.Parent()
	if tab, _ := hp.Attr("tabindex"); tab != "-1" {
		t.Errorf("honeypot tabindex %q", tab)
	}
	if ac, _ := hp.Attr("autocomplete"); ac != "off" {
		t.Errorf("honeypot autocomplete %q", ac)
	}
	if ah, _ := box.Attr("aria-hidden"); ah != "true" {
		t.Errorf("honeypot not aria-hidden: %q", ah)
	}
	if st, _ := box.Attr("style"); !strings.Contains(st, "left:-10000px") {
		t.Errorf("honeypot visible: style %q", st)
	}
	if form.Find(`input[type="hidden"][name="_rb_ts"]`).Length() != 1 || form.Find(`input[type="hidden"][name="altcha"]`).Length() != 1 {
		t.Error("stamp or proof-of-work field missing")
	}
	if src, _ := doc.Find("script").Attr("src"); src != "https://rundbrief.test/static/signup.js" || src != out.Data.ScriptURL {
		t.Errorf("script %q", src)
	}

	// A form without fill time and proof of work is plain HTML: no script.
	plain := e.form(t, map[string]any{"min_fill_seconds": 0})
	if err := json.Unmarshal(e.do(t, "GET", fmt.Sprintf("/v1/forms/%d/embed", plain.ID), nil, 200), &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Data.HTML, "<script") || strings.Contains(out.Data.HTML, `name="altcha"`) {
		t.Errorf("plain form's snippet: %s", out.Data.HTML)
	}
}

func TestSubscribeJSONAPI(t *testing.T) {
	t.Parallel()
	e := newFormsEnv(t)
	doiList := e.list(t, "Newsletter", false)
	doi := e.form(t, map[string]any{"list_ids": []int64{doiList.ID}, "tags": []string{"web"}})
	res := e.signUp(t, doi.Token, map[string]any{"email": "Erika@Example.com", "first_name": "Erika", "_rb_ts": e.stamp(t, doi.Token)})
	if res.Status != "pending" || !strings.Contains(res.Message, "bestätigen") {
		t.Errorf("double opt-in: %+v", res)
	}
	c, err := e.db.ContactByEmail(context.Background(), e.acct, "erika@example.com")
	if err != nil || c.Status != "pending" || c.Source != "form" || c.FirstName != "Erika" || len(c.Lists) != 1 {
		t.Fatalf("contact = %+v, %v", c, err)
	}
	if n := e.count(t, `SELECT count(*) FROM system_mails WHERE account_id = $1 AND to_email = $2`, e.acct, c.Email); n != 1 {
		t.Errorf("%d confirmation mails", n)
	}

	single := e.form(t, map[string]any{"double_opt_in": false, "success_message": "Willkommen an Bord!"})
	res = e.signUp(t, single.Token, map[string]any{"email": "max@example.com", "_rb_ts": e.stamp(t, single.Token)})
	if res.Status != "subscribed" || res.Message != "Willkommen an Bord!" {
		t.Errorf("single opt-in: %+v", res)
	}
	var f struct {
		Data formJSON `json:"data"`
	}
	if err := json.Unmarshal(e.do(t, "GET", fmt.Sprintf("/v1/forms/%d", single.ID), nil, 200), &f); err != nil || f.Data.Submissions != 1 {
		t.Errorf("submissions = %d, %v", f.Data.Submissions, err)
	}

	// Honeypot: answered exactly as a success, nothing is created.
	bot := e.signUp(t, single.Token, map[string]any{"email": "bot@example.com", "website": "http://spam.example"})
	if bot != (signUpJSON{Status: "subscribed", Message: "Willkommen an Bord!"}) {
		t.Errorf("honeypot answer %+v differs from a success", bot)
	}
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1 AND email = 'bot@example.com'`, e.acct); n != 0 {
		t.Error("the honeypot created a contact")
	}

	// Stamp missing or too fast: 422 naming _rb_ts.
	fast := e.guard.Stamp(single.Token)
	for name, stamp := range map[string]string{"missing": "", "too fast": fast} {
		r := e.post(t, single.Token, "203.0.113.5", map[string]any{"email": "fast@example.com", "_rb_ts": stamp})
		fields := wantError(t, r, 422, "validation_error")["fields"].(map[string]any)
		if fields["_rb_ts"] == nil {
			t.Errorf("%s stamp: fields %v", name, fields)
		}
	}
	r := e.post(t, single.Token, "203.0.113.5", map[string]any{"email": "kein-at", "_rb_ts": e.stamp(t, single.Token)})
	if fields := wantError(t, r, 422, "validation_error")["fields"].(map[string]any); fields["email"] == nil {
		t.Errorf("invalid address: fields %v", fields)
	}

	// Unknown token: 404, for the sign-up and its challenge.
	wantError(t, e.post(t, strings.Repeat("x", 24), "203.0.113.5", map[string]any{"email": "a@example.com"}), 404, "not_found")
	wantError(t, e.anon.Request("GET", "/v1/subscribe/nope/challenge", nil), 404, "not_found")

	// The browser's preflight for a JSON post is answered with *.
	pre := e.anon.Request(http.MethodOptions, "/v1/subscribe/"+single.Token, nil, hdr("Origin", "https://www.kunde.example",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type"))
	if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Errorf("preflight: %d %v", pre.Status, pre.Header)
	}
}

func TestSubscribeFormPostAPI(t *testing.T) {
	t.Parallel()
	e := newFormsEnv(t)
	f := e.form(t, map[string]any{"fields": []string{"first_name"}})
	ok := e.post(t, f.Token, "203.0.113.6", url.Values{"email": {"anna@example.com"}, "first_name": {"Anna"}, "_rb_ts": {e.stamp(t, f.Token)}})
	if ok.Status != 303 || ok.Header.Get("Location") != "https://rundbrief.test/subscribe/"+f.Token+"?danke=1&bestaetigen=1" {
		t.Errorf("browser sign-up: %d → %q", ok.Status, ok.Header.Get("Location"))
	}
	if c, err := e.db.ContactByEmail(context.Background(), e.acct, "anna@example.com"); err != nil || c.FirstName != "Anna" {
		t.Errorf("contact %+v, %v", c, err)
	}

	// Refused: back to the hosted page with the error codes, never the typed values.
	bad := e.post(t, f.Token, "203.0.113.6", url.Values{"email": {"geheim-aber-kaputt"}})
	loc := bad.Header.Get("Location")
	if bad.Status != 303 || loc != "https://rundbrief.test/subscribe/"+f.Token+"?fehler="+url.QueryEscape("_rb_ts,email") {
		t.Errorf("refused browser sign-up: %d → %q", bad.Status, loc)
	}
	if strings.Contains(loc, "geheim") {
		t.Error("the typed address is in the redirect")
	}

	// Honeypot: redirected like a success.
	bot := e.post(t, f.Token, "203.0.113.6", url.Values{"email": {"bot@example.com"}, "website": {"x"}})
	if bot.Status != 303 || bot.Header.Get("Location") != ok.Header.Get("Location") {
		t.Errorf("honeypot: %d → %q", bot.Status, bot.Header.Get("Location"))
	}

	// success_redirect wins.
	e.do(t, "PATCH", fmt.Sprintf("/v1/forms/%d", f.ID), map[string]any{"success_redirect": "https://kunde.example/danke", "double_opt_in": false}, 200)
	red := e.post(t, f.Token, "203.0.113.6", url.Values{"email": {"ben@example.com"}, "_rb_ts": {e.stamp(t, f.Token)}})
	if red.Status != 303 || red.Header.Get("Location") != "https://kunde.example/danke" {
		t.Errorf("success_redirect: %d → %q", red.Status, red.Header.Get("Location"))
	}

	// An unknown token is 404 for a browser too.
	wantError(t, e.post(t, strings.Repeat("y", 24), "203.0.113.6", url.Values{"email": {"a@example.com"}}), 404, "not_found")
}

func TestSubscribeProofOfWorkAPI(t *testing.T) {
	t.Parallel()
	e := newFormsEnv(t)
	f := e.form(t, map[string]any{"proof_of_work": true, "double_opt_in": false})
	challenge := func() botguard.Challenge {
		t.Helper()
		var ch struct {
			Stamp     string              `json:"stamp"`
			Challenge *botguard.Challenge `json:"challenge"`
		}
		r := e.anon.Request(http.MethodGet, "/v1/subscribe/"+f.Token+"/challenge", nil)
		r.Data(t, &ch)
		if ch.Challenge == nil || ch.Challenge.Algorithm != "SHA-256" || ch.Challenge.MaxNumber != store.ChallengeMaxNumber ||
			r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("challenge response: %s %v", r.Body, r.Header)
		}
		return *ch.Challenge
	}
	solved, err := botguard.Solve(challenge())
	if err != nil {
		t.Fatal(err)
	}
	stamp := e.stamp(t, f.Token)
	if res := e.signUp(t, f.Token, map[string]any{"email": "a@example.com", "_rb_ts": stamp, "altcha": solved}); res.Status != "subscribed" {
		t.Errorf("solved: %+v", res)
	}
	// The same solution again, and a solution with a wrong number.
	raw, _ := base64.StdEncoding.DecodeString(solved)
	var s botguard.Solution
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	s.Number++
	wrong, _ := json.Marshal(s)
	for name, payload := range map[string]string{"replayed": solved, "wrong": base64.StdEncoding.EncodeToString(wrong), "missing": ""} {
		r := e.post(t, f.Token, "203.0.113.5", map[string]any{"email": "b@example.com", "_rb_ts": stamp, "altcha": payload})
		if fields := wantError(t, r, 422, "validation_error")["fields"].(map[string]any); fields["altcha"] == nil {
			t.Errorf("%s payload: fields %v", name, fields)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, e.acct); n != 1 {
		t.Errorf("%d contacts, want 1", n)
	}
}

func TestSubscribeRateLimitsAPI(t *testing.T) {
	t.Parallel()
	e := newFormsEnv(t)
	l := e.list(t, "News", false)
	f := e.form(t, map[string]any{"min_fill_seconds": 0, "double_opt_in": false, "list_ids": []int64{l.ID}})
	for i := range 10 {
		if r := e.post(t, f.Token, "198.51.100.20", map[string]any{"email": fmt.Sprintf("p%d@example.com", i)}); r.Status != 201 {
			t.Fatalf("sign-up %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	r := e.post(t, f.Token, "198.51.100.20", map[string]any{"email": "eleven@example.com"})
	body := wantError(t, r, 429, "rate_limited")
	retry := r.Header.Get("Retry-After")
	if retry == "" || retry != fmt.Sprint(body["retry_after"]) {
		t.Errorf("Retry-After %q, error.retry_after %v", retry, body["retry_after"])
	}
	// A browser gets the hosted page with the message instead.
	br := e.post(t, f.Token, "198.51.100.20", url.Values{"email": {"twelve@example.com"}})
	if br.Status != 303 || !strings.HasSuffix(br.Header.Get("Location"), "?fehler=limit") {
		t.Errorf("browser over the limit: %d → %q", br.Status, br.Header.Get("Location"))
	}
	if r := e.post(t, f.Token, "198.51.100.21", map[string]any{"email": "other-ip@example.com"}); r.Status != 201 {
		t.Errorf("another address: %d %s", r.Status, r.Body)
	}

	// 200 per day and list: spend the list's real day counter.
	if _, err := e.db.ExecContext(context.Background(), `UPDATE rate_counters SET count = $2 WHERE bucket = $1`,
		store.DayBucketPrefix+store.SignUpListBucket(l.ID), store.SignUpsPerListDay); err != nil {
		t.Fatal(err)
	}
	r = e.post(t, f.Token, "198.51.100.22", map[string]any{"email": "busy@example.com"})
	wantError(t, r, 429, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Error("day limit without Retry-After")
	}
}
