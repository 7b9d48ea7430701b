package mailer_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/smtpserver"
)

// linkServer answers /ok 200, /missing 404, /nohead 405 to HEAD and 200 to
// GET, /r1 → /r2 → /r3 → /ok, and /loop redirects to itself for ever.
func linkServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/nohead", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	mux.HandleFunc("/r1", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/r2", http.StatusFound) })
	mux.HandleFunc("/r2", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/r3", http.StatusMovedPermanently) })
	mux.HandleFunc("/r3", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusSeeOther) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// closedPort returns an address on loopback where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func problems(rep mailer.LinkReport) map[string]mailer.LinkProblem {
	m := map[string]mailer.LinkProblem{}
	for _, p := range rep.Problems {
		m[p.URL] = p
	}
	return m
}

func TestCheckLinks(t *testing.T) {
	srv := linkServer(t)
	dead := "http://" + closedPort(t) + "/"
	links := []string{srv.URL + "/ok", srv.URL + "/missing", srv.URL + "/nohead", srv.URL + "/r1", srv.URL + "/loop", dead}
	client := mailer.NewLinkClient((&net.Dialer{}).DialContext)
	rep := mailer.CheckLinks(context.Background(), client, links)
	if rep.Checked != len(links) || rep.Omitted != 0 {
		t.Errorf("checked %d, omitted %d", rep.Checked, rep.Omitted)
	}
	got := problems(rep)
	if len(got) != 3 {
		t.Errorf("problems: %+v", rep.Problems)
	}
	if p := got[srv.URL+"/missing"]; p.Reason != mailer.LinkStatus || p.Status != 404 {
		t.Errorf("404: %+v", p)
	}
	if p := got[srv.URL+"/loop"]; p.Reason != mailer.LinkRedirects {
		t.Errorf("redirect loop: %+v", p)
	}
	if p := got[dead]; p.Reason != mailer.LinkRefused {
		t.Errorf("closed port: %+v", p)
	}
	// The order of the problems is the content's.
	if len(rep.Problems) == 3 && (rep.Problems[0].URL != srv.URL+"/missing" || rep.Problems[2].URL != dead) {
		t.Errorf("order: %+v", rep.Problems)
	}
}

func TestCheckLinksLimit(t *testing.T) {
	srv := linkServer(t)
	var links []string
	for i := range mailer.LinkCheckMax + 3 {
		links = append(links, fmt.Sprintf("%s/ok?%d", srv.URL, i))
	}
	rep := mailer.CheckLinks(context.Background(), mailer.NewLinkClient((&net.Dialer{}).DialContext), links)
	if rep.Checked != mailer.LinkCheckMax || rep.Omitted != 3 || len(rep.Problems) != 0 {
		t.Errorf("%+v", rep)
	}
}

// TestCheckLinksGuard: with the SMTP servers' guard as dialer, loopback is
// refused unless RUNDBRIEF_SMTP_ALLOW_PRIVATE allows it, also when a public
// looking redirect would lead there.
func TestCheckLinksGuard(t *testing.T) {
	srv := linkServer(t)
	links := []string{srv.URL + "/ok", srv.URL + "/r1"}
	deny := smtpserver.New(nil, smtpserver.Config{AllowPrivate: false})
	rep := mailer.CheckLinks(context.Background(), mailer.NewLinkClient(deny.DialContext), links)
	if len(rep.Problems) != 2 || rep.Problems[0].Reason != mailer.LinkBlocked || rep.Problems[1].Reason != mailer.LinkBlocked {
		t.Errorf("private not allowed: %+v", rep.Problems)
	}
	allow := smtpserver.New(nil, smtpserver.Config{AllowPrivate: true})
	rep = mailer.CheckLinks(context.Background(), mailer.NewLinkClient(allow.DialContext), links)
	if len(rep.Problems) != 0 {
		t.Errorf("private allowed: %+v", rep.Problems)
	}
}

func TestCheckableLinks(t *testing.T) {
	c := store.Campaign{HTML: `<a href="https://a.example/x">1</a> <a href=" https://a.example/x ">dup</a>
<a href="{{abmelde_link}}">ab</a> <a href="https://a.example/{{vorname}}">p</a> <a href="mailto:x@a.example">m</a>
<a href="tel:+49301234">t</a> <a href="https://rundbrief.example/u/abc">own</a> <a href="http://b.example/">2</a> <a href="/rel">rel</a>`}
	got := mailer.CheckableLinks(c, "https://rundbrief.example/")
	if want := []string{"https://a.example/x", "http://b.example/"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestCheckLinksDNSAndTimeout: a name that does not resolve and a server that
// does not answer in time are told apart.
func TestCheckLinksDNSAndTimeout(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(slow.Close)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, _ := net.SplitHostPort(addr); host == "nirgends.invalid" {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	rep := mailer.CheckLinks(ctx, mailer.NewLinkClient(dial), []string{"https://nirgends.invalid/", slow.URL + "/"})
	got := problems(rep)
	if p := got["https://nirgends.invalid/"]; p.Reason != mailer.LinkDNS {
		t.Errorf("dns: %+v", p)
	}
	if p := got[slow.URL+"/"]; p.Reason != mailer.LinkTimeout {
		t.Errorf("timeout: %+v", p)
	}
}
