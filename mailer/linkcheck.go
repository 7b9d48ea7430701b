package mailer

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/html"

	"github.com/rundbrief/rundbrief/store"
)

// Limits of the link check: it runs while the send confirmation waits, so it
// asks few links, a few at a time, and gives each little time.
const (
	LinkCheckMax       = 20
	LinkCheckTimeout   = 5 * time.Second
	linkCheckParallel  = 4
	linkCheckRedirects = 5
	linkCheckBodyLimit = 4 << 10
)

// Reasons why a link does not answer (LinkProblem.Reason); the portal words them.
const (
	LinkDNS       = "dns"       // the host name does not resolve
	LinkRefused   = "refused"   // nothing listens there
	LinkTimeout   = "timeout"   // no answer within LinkCheckTimeout
	LinkStatus    = "status"    // an HTTP status of 400 or more (LinkProblem.Status)
	LinkRedirects = "redirects" // more than five redirects
	LinkBlocked   = "blocked"   // a non-public address, refused by the dialer's guard
	LinkFailed    = "failed"    // any other failure (TLS, malformed answer …)
)

// LinkProblem is one link that does not answer.
type LinkProblem struct {
	URL    string
	Reason string
	Status int // the HTTP status, for LinkStatus
}

// LinkReport is the outcome of CheckLinks: how many links were asked, how
// many were left out over LinkCheckMax, and those that did not answer, in the
// order of the content.
type LinkReport struct {
	Checked, Omitted int
	Problems         []LinkProblem
}

// NewLinkClient returns the HTTP client the link check uses: every connection
// goes through dial (the caller's guard against private addresses, asked again
// for each redirect's connection), no proxy, at most five redirects.
func NewLinkClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dial,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    LinkCheckTimeout,
			ResponseHeaderTimeout:  LinkCheckTimeout,
			MaxResponseHeaderBytes: 64 << 10,
			DisableKeepAlives:      true, // one request per host, mostly: nothing to keep
		},
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) > linkCheckRedirects {
				return errTooManyRedirects
			}
			return nil
		},
	}
}

var errTooManyRedirects = errors.New("mailer: more than five redirects")

// CheckableLinks returns the distinct http(s) links of a campaign's HTML
// content that can be asked before the send: not placeholders ({{…}}), not
// mailto: or tel:, and none starting with one of skipPrefixes (the product's
// own tracking and unsubscribe addresses).
func CheckableLinks(c store.Campaign, skipPrefixes ...string) []string {
	htmlSrc, _, err := ContentSources(c)
	if err != nil {
		return nil
	}
	var links []string
	z := html.NewTokenizer(strings.NewReader(htmlSrc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return links
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if tok.Data != "a" {
			continue
		}
		href, ok := attrOf(tok, "href")
		href = strings.TrimSpace(href)
		if !ok || strings.Contains(href, "{{") || slices.Contains(links, href) {
			continue
		}
		u, err := url.Parse(href)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		if slices.ContainsFunc(skipPrefixes, func(p string) bool { return p != "" && strings.HasPrefix(href, p) }) {
			continue
		}
		links = append(links, href)
	}
}

// CheckLinks asks each of links (the first LinkCheckMax) with client, a few
// at a time: HEAD, or GET where a server refuses HEAD (405, 501).
func CheckLinks(ctx context.Context, client *http.Client, links []string) LinkReport {
	var rep LinkReport
	if len(links) > LinkCheckMax {
		rep.Omitted = len(links) - LinkCheckMax
		links = links[:LinkCheckMax]
	}
	rep.Checked = len(links)
	results := make([]*LinkProblem, len(links))
	sem := make(chan struct{}, linkCheckParallel)
	var wg sync.WaitGroup
	for i, link := range links {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = checkLink(ctx, client, link)
		}()
	}
	wg.Wait()
	for _, p := range results {
		if p != nil {
			rep.Problems = append(rep.Problems, *p)
		}
	}
	return rep
}

func checkLink(ctx context.Context, client *http.Client, link string) *LinkProblem {
	ctx, cancel := context.WithTimeout(ctx, LinkCheckTimeout)
	defer cancel()
	status, err := ask(ctx, client, http.MethodHead, link)
	if err == nil && (status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented) {
		status, err = ask(ctx, client, http.MethodGet, link)
	}
	switch {
	case err != nil:
		return &LinkProblem{URL: link, Reason: linkReason(err)}
	case status >= 400:
		return &LinkProblem{URL: link, Reason: LinkStatus, Status: status}
	}
	return nil
}

func ask(ctx context.Context, client *http.Client, method, link string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, link, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "Rundbrief-Linkpruefung/1")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	// Read a little so that the answer is complete, never a whole page.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, linkCheckBodyLimit))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// linkReason sorts a request's error into a LinkProblem reason.
func linkReason(err error) string {
	var (
		dns *net.DNSError
		// The outbound guard's refusal (store/webhook.BlockedAddressError),
		// recognised by its method so that the mailer need not import it.
		blocked interface{ BlockedAddress() bool }
	)
	switch {
	case errors.Is(err, errTooManyRedirects):
		return LinkRedirects
	case errors.As(err, &blocked):
		return LinkBlocked
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return LinkTimeout
	case errors.As(err, &dns):
		if dns.IsTimeout {
			return LinkTimeout
		}
		return LinkDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return LinkRefused
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return LinkTimeout
	}
	return LinkFailed
}
