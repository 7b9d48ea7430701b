package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rundbrief/rundbrief/handlers"
	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/portal"
	"github.com/rundbrief/rundbrief/handlers/public"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/services"
)

// phoneWidth is the CSS width of a common phone (iPhone 12 to 15).
const phoneWidth = 390

// fullServer is the application with every service that serve builds, so
// that the pages of every feature exist; its workers do not run.
func fullServer(t *testing.T) (*httptest.Server, *store.DB) {
	t.Helper()
	dbURL := dbtest.URL(t)
	db := dbtest.Open(t, dbURL)
	const base = "http://rundbrief.test"
	set, err := services.New(db, services.Config{DatabaseURL: dbURL, BaseURL: base, Secret: "phone end-to-end secret, at least 32 characters", WebhookAllowPrivate: true, SMTPAllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := portal.New(set, portal.Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := public.New(set, public.Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handlers.New(api.New(set, api.Config{BaseURL: base, RateLimit: 1_000_000}), p, pub))
	t.Cleanup(srv.Close)
	return srv, db
}

// seedThroughAPI fills an account as a marketer's would look after a few
// weeks, with long names and addresses where real data has them, so that the
// pages show tables, details and badges rather than empty states.
func seedThroughAPI(t *testing.T, base, key string) {
	t.Helper()
	call := func(method, path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+"/v1"+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %v", method, path, res.StatusCode, out)
		}
		return out
	}
	id := func(m map[string]any) int64 {
		if d, ok := m["data"].(map[string]any); ok {
			m = d
		}
		f, _ := m["id"].(float64)
		return int64(f)
	}
	list := id(call("POST", "/lists", map[string]any{"name": "Kundinnen und Kunden aus dem Onlineshop mit Newsletter-Einwilligung"}))
	call("POST", "/lists", map[string]any{"name": "Presse"})
	var contacts []map[string]any
	for i := range 30 {
		contacts = append(contacts, map[string]any{
			"email":      fmt.Sprintf("maximiliane.mustermann-schoenberger.%02d@sehr-lange-firmendomain-beispiel.de", i),
			"first_name": "Maximiliane", "last_name": "Mustermann-Schönberger",
			"tags": []string{"stammkundschaft", "messe-2026-frankfurt"}, "list_ids": []int64{list},
		})
	}
	call("POST", "/contacts/bulk", map[string]any{"contacts": contacts})
	call("POST", "/newsletters", map[string]any{
		"name": "Frühlingsaktion 2026 – alle Neuheiten aus der Backstube", "subject": "Unsere Frühlingsneuheiten sind da",
		"markdown": "# Hallo {{first_name}}\n\nFrische Brötchen. [Zum Shop](https://example.com/shop)", "list_ids": []int64{list},
	})
	call("POST", "/forms", map[string]any{"name": "Anmeldung auf der Startseite der Website", "list_ids": []int64{list}})
	call("POST", "/webhooks", map[string]any{"url": "http://127.0.0.1:9/rundbrief/empfaenger/ein/sehr/langer/pfad/zum/shop-system", "events": []string{"contact.created"}})
}

// TestPortalOnPhones visits every page of the portal that a signed-in owner
// can reach by following links, at the width of a phone, and fails on any
// page that scrolls sideways or uses an id twice; it saves a screenshot of
// each as an artifact.
// It also checks the navigation: folded behind the menu button on a phone,
// and opened by it.
func TestPortalOnPhones(t *testing.T) {
	t.Parallel()
	srv, db := fullServer(t)
	ctx := context.Background()
	acct, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bäckerei Müller & Söhne Feinbackwaren GmbH", Email: "inhaberin@baeckerei-mueller-feinbackwaren.de", Password: "sauerteig-seit-1923", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, acct.Account.ID, store.KeySettings{Name: "Onlineshop"})
	if err != nil {
		t.Fatal(err)
	}
	seedThroughAPI(t, srv.URL, key)

	b := newTab(t, phoneWidth, 844, 4*time.Minute)
	b.signIn(srv.URL, "inhaberin@baeckerei-mueller-feinbackwaren.de", "sauerteig-seit-1923")

	// The navigation is folded away until the menu button opens it.
	navShown := `getComputedStyle(document.querySelector('[data-testid="sidebar"] nav')).display !== "none"`
	if shown := b.read("nav folded", evalString(`String(`+navShown+`)`)); shown != "false" {
		t.Errorf("on a phone the navigation shows before the menu is opened")
	}
	// The folded navigation is as tall on a screen taller than the page: the
	// rest of the screen went to it as a blank band on short pages.
	sidebarHeight := `String(Math.round(document.querySelector('[data-testid="sidebar"]').getBoundingClientRect().height))`
	atPhone := b.read("sidebar height", evalString(sidebarHeight))
	b.do("a screen taller than the page", chromedp.EmulateViewport(phoneWidth, 6000))
	if tall := b.read("sidebar height on a tall screen", evalString(sidebarHeight)); tall != atPhone {
		t.Errorf("the folded navigation is %s px tall on a tall screen, %s px on a phone", tall, atPhone)
	}
	b.do("the phone's screen", chromedp.EmulateViewport(phoneWidth, 844))
	b.do("open the menu", chromedp.Click(tid("menu-toggle")), until(navShown))
	if exp := b.read("menu state", evalString(`document.querySelector('[data-testid="menu-toggle"]').getAttribute("aria-expanded")`)); exp != "true" {
		t.Errorf("menu button aria-expanded = %q after opening", exp)
	}

	visited := crawlPortal(t, b, srv.URL, 400)
	var wide, dups, broke, cramped []string
	for _, pg := range visited {
		if pg.over > 0 {
			wide = append(wide, fmt.Sprintf("%s: %d px, %d too wide (widest: %s)", pg.path, pg.width, pg.over, pg.culprit))
		}
		if pg.broken != "[]" {
			broke = append(broke, pg.path+": "+pg.broken)
		}
		if pg.cramped != "[]" {
			cramped = append(cramped, pg.path+": "+pg.cramped)
		}
		if len(pg.dupIDs) > 0 {
			dups = append(dups, pg.path+": "+strings.Join(pg.dupIDs, ", "))
		}
	}
	// An id names one element: labels, aria references and fragment links
	// find the first of two, and the second is unreachable.
	if len(dups) > 0 {
		t.Errorf("ids used twice on one page:\n  %s", strings.Join(dups, "\n  "))
	}
	// A label, badge or column header broken inside a word ("stammkund" /
	// "schaft") reads as two words.
	if len(broke) > 0 {
		t.Errorf("words broken across lines:\n  %s", strings.Join(broke, "\n  "))
	}
	if len(cramped) > 0 {
		t.Errorf("filter rows touching the table below them:\n  %s", strings.Join(cramped, "\n  "))
	}
	sort.Strings(wide)
	if len(wide) > 0 {
		t.Errorf("%d of %d pages scroll sideways at %d px (less the scrollbar):\n  %s", len(wide), len(visited), phoneWidth, strings.Join(wide, "\n  "))
	}
	// Every entry of the navigation was among the pages.
	seen := map[string]bool{}
	for _, pg := range visited {
		seen[pg.path] = true
	}
	for _, href := range navHrefs(t, b) {
		if !seen[href] {
			t.Errorf("navigation entry %s was not visited", href)
		}
	}
	if len(visited) < 25 {
		t.Errorf("only %d pages visited; the crawl missed the portal", len(visited))
	}
}

type phonePage struct {
	path    string
	over    int // px the page reaches past the width it has for content
	width   int
	culprit string
	dupIDs  []string // ids that more than one element carries
	broken  string   // JSON list of the words of labels, badges and headers broken inside
	cramped string   // JSON list of the filter rows (their labels) that touch what follows
}

// widestScript reports how far the document reaches past the width it has
// for content and, when it does, the element that reaches furthest right, so
// that a failure names what to fix. The width for content is the viewport's
// less headless Chromium's scrollbar (clientWidth): 375 px at phoneWidth,
// the width of the smaller phones.
const widestScript = `(function () {
  var w = document.documentElement.scrollWidth, room = document.documentElement.clientWidth, culprit = "";
  if (w > room) {
    var best = 0;
    document.querySelectorAll("body *").forEach(function (el) {
      var r = el.getBoundingClientRect();
      if (r.right >= best && r.width > 0) {
        best = r.right;
        culprit = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
          (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") +
          " (" + Math.round(r.right) + " px)";
      }
    });
  }
  var seen = {}, dups = [];
  document.querySelectorAll("[id]").forEach(function (el) {
    if (seen[el.id] && dups.indexOf(el.id) < 0) dups.push(el.id);
    seen[el.id] = true;
  });
  return JSON.stringify({over: Math.max(0, w - room), width: w, culprit: culprit, dups: dups});
})()`

// crawlPortal follows the same-origin links of the portal breadth-first from
// the dashboard, up to limit pages, and measures each at the tab's width.
func crawlPortal(t *testing.T, b *tab, base string, limit int) []phonePage {
	t.Helper()
	queue := []string{"/dashboard"}
	queued := map[string]bool{"/dashboard": true}
	// One page per route is enough: /contacts/7 looks as /contacts/8 does.
	routes := map[string]bool{}
	var out []phonePage
	for len(queue) > 0 && len(out) < limit {
		path := queue[0]
		queue = queue[1:]
		b.do("visit "+path, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS("body")))
		var m struct {
			Over    int      `json:"over"`
			Width   int      `json:"width"`
			Culprit string   `json:"culprit"`
			Dups    []string `json:"dups"`
		}
		if err := json.Unmarshal([]byte(b.read("measure "+path, evalString(widestScript))), &m); err != nil {
			t.Fatalf("measure %s: %v", path, err)
		}
		out = append(out, phonePage{path: path, over: m.Over, width: m.Width, culprit: m.Culprit, dupIDs: m.Dups})
		// Words broken inside: a chip keeps its name on one line by its style
		// (its ellipsis would count as a break here).
		out[len(out)-1].broken = b.read("broken words of "+path, evalString(brokenWords(`.badge, th, .btn, nav a, label, legend`)))
		// A row of filter links keeps what follows it off its buttons.
		out[len(out)-1].cramped = b.read("filter rows of "+path, evalString(`JSON.stringify(Array.from(document.querySelectorAll("nav.btn-group"))
			.filter(n => n.nextElementSibling && n.nextElementSibling.getBoundingClientRect().top - n.getBoundingClientRect().bottom < 8)
			.map(n => n.getAttribute("aria-label")))`))
		name := strings.NewReplacer("/", "_", "?", "_", "=", "-", "&", "_").Replace(strings.TrimPrefix(path, "/"))
		b.do("screenshot "+path, screenshot(t, b.dir, "phone-"+name))

		hrefs, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("a[href]")).map(function (a) { return a.href })`))
		if err != nil {
			t.Fatalf("links of %s: %v", path, err)
		}
		for _, h := range hrefs {
			if p, ok := portalLink(base, h); ok && !queued[p] && !routes[routeOf(p)] {
				queued[p] = true
				routes[routeOf(p)] = true
				queue = append(queue, p)
			}
		}
	}
	return out
}

// portalLink turns an absolute link into a portal path worth visiting: same
// origin, a page rather than a file, an action or another surface; and only
// the first page of a paged list.
func portalLink(base, href string) (string, bool) {
	u, err := url.Parse(href)
	if err != nil || !strings.HasPrefix(href, base) {
		return "", false
	}
	p := u.Path
	for _, skip := range []string{"/v1", "/static", "/logout", "/subscribe/", "/confirm/", "/unsubscribe/", "/book/", "/hooks/", "/o/", "/c/"} {
		if strings.HasPrefix(p, skip) {
			return "", false
		}
	}
	if strings.HasSuffix(p, ".csv") || strings.Contains(p, "/export") || strings.Contains(p, "/download") {
		return "", false
	}
	q := u.Query()
	q.Del("page")
	q.Del("after")
	q.Del("before")
	if len(q) > 0 {
		return p + "?" + q.Encode(), true
	}
	return p, true
}

// routeOf is the path with its numeric segments replaced, /contacts/{id}, and
// query values holding digits replaced too: a calendar's ?datum=2026-12-01
// links to the next month without end, and one month looks as the next does.
func routeOf(p string) string {
	path, query, _ := strings.Cut(p, "?")
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			segs[i] = "{id}"
		}
	}
	route := strings.Join(segs, "/")
	if query == "" {
		return route
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return route + "?" + query
	}
	for k, vs := range q {
		for i, v := range vs {
			if strings.ContainsAny(v, "0123456789") {
				vs[i] = "{v}"
			}
		}
		q[k] = vs
	}
	return route + "?" + q.Encode()
}

// navHrefs are the paths of the sidebar's entries.
func navHrefs(t *testing.T, b *tab) []string {
	t.Helper()
	hrefs, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="sidebar"] nav a')).map(function (a) { return a.getAttribute("href") })`))
	if err != nil {
		t.Fatal(err)
	}
	return hrefs
}

// evalString evaluates a JavaScript expression that yields a string.
func evalString(expr string) chromedp.Action[string] { return chromedp.Evaluate[string](expr) }

// TestNewsletterPreviewWidths: the editor's preview shows the mail at the
// 600 px of a desktop mail client, and at a phone's width after one click.
func TestNewsletterPreviewWidths(t *testing.T) {
	t.Parallel()
	srv, db := fullServer(t)
	ctx := context.Background()
	acct, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bäckerei", Email: "vorschau@baeckerei.example", Password: "sauerteig-seit-1923", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, acct.Account.ID, store.KeySettings{Name: "Test"})
	if err != nil {
		t.Fatal(err)
	}
	seedThroughAPI(t, srv.URL, key)
	b := newTab(t, 1440, 900, time.Minute)
	b.signIn(srv.URL, "vorschau@baeckerei.example", "sauerteig-seit-1923")
	width := `String(Math.round(document.querySelector('[data-testid="preview-iframe"]').getBoundingClientRect().width))`
	b.do("open the draft", chromedp.Navigate(srv.URL+"/newsletters"), chromedp.Click(tid("newsletter-name")),
		chromedp.WaitVisible(tid("preview-iframe")))
	if got := b.read("desktop width", evalString(width)); got != "600" {
		t.Errorf("preview is %s px wide, want 600", got)
	}
	b.do("switch to mobile", chromedp.Click(chromedp.CSS(`label:has(#preview-mobile)`)), until(width+` === "375"`))
}

// TestABFormShowsTheChosenType: the A/B form shows the variant-B fields of the
// chosen test type and the settings of the chosen mode, nothing else.
func TestABFormShowsTheChosenType(t *testing.T) {
	t.Parallel()
	srv, db := fullServer(t)
	ctx := context.Background()
	acct, err := db.CreateAccount(ctx, store.NewAccount{Name: "Bäckerei", Email: "abtest@baeckerei.example", Password: "sauerteig-seit-1923", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, acct.Account.ID, store.KeySettings{Name: "Test"})
	if err != nil {
		t.Fatal(err)
	}
	seedThroughAPI(t, srv.URL, key)
	b := newTab(t, 1280, 900, time.Minute)
	b.signIn(srv.URL, "abtest@baeckerei.example", "sauerteig-seit-1923")
	shown := func(name string) string {
		return `(document.querySelector('[name="` + name + `"]').offsetParent !== null)`
	}
	b.do("open the form", chromedp.Navigate(srv.URL+"/ab-tests/new"), chromedp.WaitVisible(tid("ab-form")),
		chromedp.SetValue(chromedp.CSS(`#field-test_type`), "sender"), chromedp.SetValue(chromedp.CSS(`#field-mode`), "winner"),
		until(shown("b_from_name")+` && !`+shown("b_subject")+` && !`+shown("b_content")+` && `+shown("wait_hours")+` && !`+shown("split_a")))
	b.do("switch to content, split", chromedp.SetValue(chromedp.CSS(`#field-test_type`), "content"), chromedp.SetValue(chromedp.CSS(`#field-mode`), "split"),
		until(shown("b_content")+` && !`+shown("b_from_name")+` && `+shown("split_a")+` && !`+shown("wait_hours")))
}
