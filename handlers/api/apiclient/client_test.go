package apiclient_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apiclient"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/services"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// newServer serves /v1 over a test database as serve wires it (all services,
// no operator relay, so mail goes to the development outbox) on a real
// listener, and returns a generated client holding a key of a new account.
// Every response the client receives is also validated against the document.
func newServer(t *testing.T) *apiclient.ClientWithResponses {
	t.Helper()
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	acct, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, acct.Account.ID, store.KeySettings{Name: "generated client"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const baseURL = "https://rundbrief.test"
	set, err := services.New(db, services.Config{
		DatabaseURL: url, BaseURL: baseURL, Secret: "generated client test secret, long enough",
		Transport: mailer.TransportOptions{DefaultFrom: mailer.DefaultFrom(baseURL), HELO: mailer.HELOName(baseURL)}, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The API log writer is the only worker a request waits for.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = set.APILog.Run(runCtx) })
	t.Cleanup(func() {
		stop()
		wg.Wait()
	})
	r := chi.NewRouter()
	r.Mount("/v1", api.New(set, api.Config{BaseURL: baseURL, RateLimit: 1_000_000}).Handler())
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)

	v := apitest.NewValidator(t, api.OpenAPIDocument())
	c, err := apiclient.NewClientWithResponses(srv.URL+"/v1",
		apiclient.WithHTTPClient(&http.Client{Transport: validating{t: t, v: v, next: srv.Client().Transport}}),
		apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// validating checks every response against the OpenAPI document, as the
// other API tests do, so that what the generated client decodes is what the
// document promises.
type validating struct {
	t    *testing.T
	v    *apitest.Validator
	next http.RoundTripper
}

func (rt validating) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := rt.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	rt.v.Check(rt.t, req, res.StatusCode, res.Header, body)
	return res, nil
}

func ptr[T any](v T) *T { return &v }

// customField builds one value of custom_fields, which the document
// describes as oneOf string, number (double), boolean or null.
func customField(t *testing.T, v any) *apiclient.ContactWrite_CustomFields_AdditionalProperties {
	t.Helper()
	var f apiclient.ContactWrite_CustomFields_AdditionalProperties
	var err error
	switch v := v.(type) {
	case string:
		err = f.FromContactWriteCustomFields0(v)
	case float64:
		err = f.FromContactWriteCustomFields1(v)
	case bool:
		err = f.FromContactWriteCustomFields2(v)
	default:
		t.Fatalf("no custom field type for %T", v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &f
}

// TestGeneratedClientAgainstServer uses the committed generated client as a
// Go user would, against a real server over PostgreSQL: create contacts (with
// custom fields of each type), list them in two pages, decode a validation
// error, and send a newsletter's test mail into the development outbox.
func TestGeneratedClientAgainstServer(t *testing.T) {
	c := newServer(t)
	ctx := t.Context()

	// Create a contact; custom_fields round-trip with their types. The
	// number is beyond float32's exact integers, so a float32 field (the
	// generator's default for a plain `number`) would change it.
	created, err := c.UpsertContactWithResponse(ctx, nil, apiclient.ContactWrite{
		Email:     "anna@example.org",
		FirstName: ptr("Anna"),
		Tags:      ptr([]string{"kundin"}),
		CustomFields: &map[string]*apiclient.ContactWrite_CustomFields_AdditionalProperties{
			"kundennummer": customField(t, float64(123456789)),
			"stadt":        customField(t, "Köln"),
			"vip":          customField(t, true),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.StatusCode() != http.StatusCreated || created.JSON201 == nil {
		t.Fatalf("create contact: %d %s", created.StatusCode(), created.Body)
	}
	anna := created.JSON201.Data
	if anna.Email != "anna@example.org" || anna.FirstName != "Anna" || anna.Status != apiclient.ContactStatusSubscribed {
		t.Errorf("created contact: %+v", anna)
	}
	if n, err := anna.CustomFields["kundennummer"].AsContactCustomFields1(); err != nil || n != 123456789 {
		t.Errorf("custom field kundennummer = %v (%v), want 123456789", n, err)
	}
	if s, err := anna.CustomFields["stadt"].AsContactCustomFields0(); err != nil || s != "Köln" {
		t.Errorf("custom field stadt = %q (%v), want Köln", s, err)
	}
	if b, err := anna.CustomFields["vip"].AsContactCustomFields2(); err != nil || !b {
		t.Errorf("custom field vip = %v (%v), want true", b, err)
	}
	ids := map[int64]bool{anna.Id: true}
	for _, email := range []string{"ben@example.org", "cem@example.org"} {
		r, err := c.UpsertContactWithResponse(ctx, nil, apiclient.ContactWrite{Email: email})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON201 == nil {
			t.Fatalf("create %s: %d %s", email, r.StatusCode(), r.Body)
		}
		ids[r.JSON201.Data.Id] = true
	}

	// A 422 decodes into the typed error with its fields.
	bad, err := c.UpsertContactWithResponse(ctx, nil, apiclient.ContactWrite{Email: "not an address"})
	if err != nil {
		t.Fatal(err)
	}
	if bad.JSON422 == nil || bad.JSON422.Error.Code != apiclient.ValidationErrorErrorCodeValidationError || bad.JSON422.Error.Fields["email"] == "" || bad.JSON422.Error.RequestId == "" {
		t.Fatalf("invalid email: %d %s, decoded %+v", bad.StatusCode(), bad.Body, bad.JSON422)
	}

	// Two pages of two: every contact once.
	seen := map[int64]bool{}
	for page, want := range map[int]int{1: 2, 2: 1} {
		r, err := c.ListContactsWithResponse(ctx, &apiclient.ListContactsParams{Page: ptr(page), PerPage: ptr(2)})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil {
			t.Fatalf("list page %d: %d %s", page, r.StatusCode(), r.Body)
		}
		p := r.JSON200.Meta.Pagination
		if len(r.JSON200.Data) != want || p.Page != page || p.PerPage != 2 || p.Total != 3 || p.Pages != 2 {
			t.Errorf("page %d: %d contacts, pagination %+v", page, len(r.JSON200.Data), p)
		}
		for _, ct := range r.JSON200.Data {
			if seen[ct.Id] || !ids[ct.Id] {
				t.Errorf("page %d: contact %d listed twice or unknown", page, ct.Id)
			}
			seen[ct.Id] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("two pages listed %d of 3 contacts", len(seen))
	}

	// A newsletter's test mail lands in the development outbox.
	nl, err := c.CreateNewsletterWithResponse(ctx, nil, apiclient.NewsletterWrite{
		Name: ptr("Herbst"), Subject: ptr("Neues im Herbst"), Markdown: ptr("Hallo {{vorname|Hallo}},\n\nneue Kurse."),
	})
	if err != nil {
		t.Fatal(err)
	}
	if nl.JSON201 == nil {
		t.Fatalf("create newsletter: %d %s", nl.StatusCode(), nl.Body)
	}
	var to apiclient.NewsletterTestRequest_To
	if err := to.FromNewsletterTestRequestTo0("tester@example.org"); err != nil {
		t.Fatal(err)
	}
	sent, err := c.TestNewsletterWithResponse(ctx, nl.JSON201.Data.Id, nil, apiclient.NewsletterTestRequest{To: to})
	if err != nil {
		t.Fatal(err)
	}
	if sent.JSON200 == nil || sent.JSON200.Data.Sent != 1 || sent.JSON200.Data.Failed != 0 {
		t.Fatalf("test mail: %d %s", sent.StatusCode(), sent.Body)
	}
	box, err := c.ListDevOutboxWithResponse(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if box.JSON200 == nil || len(box.JSON200.Data) != 1 {
		t.Fatalf("dev outbox: %d %s", box.StatusCode(), box.Body)
	}
	if m := box.JSON200.Data[0]; m.To != "tester@example.org" || m.Subject == "" {
		t.Errorf("outbox mail: %+v", m)
	}
}
