package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/integration"
)

func TestIntegrationPages(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	ctx := context.Background()
	list, err := s.db.CreateList(ctx, acct.ID, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: ptr("Käufer")})
	if err != nil {
		t.Fatal(err)
	}

	empty := c.get("/integrations")
	wantStatus(t, empty, http.StatusOK)
	if empty.find("integrations-empty").Length() != 1 {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	// Every provider has its setup steps; before saving there is no URL yet.
	for _, p := range store.IntegrationProviders() {
		form := c.get("/integrations/new?provider=" + p)
		wantStatus(t, form, http.StatusOK)
		if form.find("setup-"+p).Find("li").Length() < 3 || form.find("integration-inbound-later").Length() != 1 {
			t.Fatalf("%s setup:\n%s", p, form.Body)
		}
	}
	bad := c.post("/integrations/new", url.Values{"provider": {"stripe"}, "name": {""}})
	wantStatus(t, bad, http.StatusUnprocessableEntity)
	if text(bad.find("error-name")) == "" {
		t.Fatalf("no error next to the name:\n%s", bad.Body)
	}

	r := c.post("/integrations/new", url.Values{"provider": {"generic"}, "name": {"Mein Shop"}, "secret": {"portal-secret"},
		"list_ids": {itoa(list.ID)}, "tags": {"kunde, vip"}, "active": {"1"}})
	if r.StatusCode != http.StatusSeeOther || !strings.HasSuffix(r.Header.Get("Location"), "/edit") {
		t.Fatalf("create: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	edit := c.get(r.Header.Get("Location"))
	inbound := edit.find("integration-inbound").AttrOr("value", "")
	if !strings.HasPrefix(inbound, base+"/hooks/generic/") || edit.find("integration-inbound-copy").AttrOr("data-copy", "") != "integration-inbound" {
		t.Fatalf("inbound URL %q:\n%s", inbound, edit.Body)
	}
	if strings.Contains(edit.Body, "portal-secret") {
		t.Fatal("the secret is shown")
	}
	igs, _, err := s.db.Integrations(ctx, acct.ID, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(igs) != 1 || !igs[0].HasSecret() || !slices.Equal(igs[0].Tags, []string{"kunde", "vip"}) || len(igs[0].ListIDs) != 1 {
		t.Fatalf("stored %+v %v", igs, err)
	}
	id := itoa(igs[0].ID)

	// Saving with an empty secret field keeps the secret.
	wantRedirect(t, c.post("/integrations/"+id+"/edit", url.Values{"name": {"Shop"}, "tags": {"kunde"}, "active": {"1"}}), "/integrations")
	if ig, _ := s.db.Integration(ctx, acct.ID, igs[0].ID); !ig.HasSecret() || ig.Name != "Shop" || len(ig.ListIDs) != 0 {
		t.Fatalf("after edit %+v", ig)
	}

	// The test event goes through the inbound handling and shows in the log
	// with its raw payload.
	wantRedirect(t, c.post("/integrations/"+id+"/test", nil), "/integrations/"+id+"/events")
	log := c.get("/integrations/" + id + "/events")
	wantStatus(t, log, http.StatusOK)
	ev := log.find("integration-event")
	if ev.Length() != 1 || ev.AttrOr("data-status", "") != store.IntegrationProcessed ||
		!strings.Contains(text(ev.Find(`[data-testid="integration-event-payload"]`)), `"event": "order.completed"`) {
		t.Fatalf("event log:\n%s", log.Body)
	}
	if _, err := s.db.ContactByEmail(ctx, acct.ID, integration.TestBuyer); err != nil {
		t.Fatalf("test buyer: %v", err)
	}

	// A real call to the inbound URL (the public route of the same process).
	body := `{"event":"order.completed","order_id":"X1","email":"kaeufer@example.com","product":"Kurs","amount":10,"currency":"EUR"}`
	req, _ := http.NewRequest(http.MethodPost, strings.Replace(inbound, base, s.URL, 1), strings.NewReader(body))
	req.Header.Set("X-Signature", integration.GenericSignature([]byte(body), "portal-secret"))
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("inbound: %v %v", err, res)
	}
	_ = res.Body.Close()
	if n := c.get("/integrations/" + id + "/events").find("integration-event").Length(); n != 2 {
		t.Fatalf("events %d", n)
	}

	wantStatus(t, c.get("/integrations/"+id+"/delete"), http.StatusOK)
	wantRedirect(t, c.post("/integrations/"+id+"/delete", nil), "/integrations")
	if _, err := s.db.Integration(ctx, acct.ID, igs[0].ID); err == nil {
		t.Fatal("not deleted")
	}

	// Another plan: the pages say so with 402.
	other := newAccount(t, s.db, "pro")
	c2 := newClient(t, s)
	c2.signIn(other.Email, other.Password)
	wantStatus(t, c2.get("/integrations"), http.StatusPaymentRequired)
}

func ptr[T any](v T) *T { return &v }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
