// Package ai generates marketing text with a large language model: the providers
// (Anthropic's Messages API first, any OpenAI-compatible chat-completions endpoint as
// fallback), the German prompts per action, the HTML structure check, and the
// Service that validates a request, calls a provider and debits the account's AI
// credit. The API, the portal's editor and later features (sequence outlining,
// inbox reply drafts) all go through Service.
package ai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Provider is one language-model backend.
type Provider interface {
	// Name identifies the provider in results and the ledger: "anthropic", "openai".
	Name() string
	// Complete sends one system prompt and one user message and returns the answer.
	// Failures are *Error values, so that the caller can tell whether to fall back.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Request is one completion call.
type Request struct {
	Model     string // the provider's model id; a provider with its own configured model ignores it
	System    string
	Prompt    string // the user message
	MaxTokens int
}

// Response is a provider's answer with the tokens it counted.
type Response struct {
	Text      string
	Model     string // the model that answered, as the provider names it
	TokensIn  int
	TokensOut int
	// Truncated means the answer hit MaxTokens and is cut off.
	Truncated bool
	// Estimated means the provider reported no token counts and they were estimated.
	Estimated bool
}

// Kind classifies a provider failure.
type Kind int

// The kinds of provider failures.
const (
	// KindNetwork: the connection failed before an answer (refused, reset, DNS).
	// Worth one quick retry, then the fallback.
	KindNetwork Kind = iota + 1
	// KindUnavailable: a timeout, a 5xx or a 429. The fallback is tried.
	KindUnavailable
	// KindRejected: the provider refused the request (another 4xx, e.g. a wrong key)
	// or answered with something unreadable. A fallback would not be the fix.
	KindRejected
)

// Error is a failed provider call.
type Error struct {
	Provider string
	Kind     Kind
	Status   int // HTTP status, 0 when none came back
	Err      error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("ai: %s: HTTP %d: %v", e.Provider, e.Status, e.Err)
	}
	return fmt.Sprintf("ai: %s: %v", e.Provider, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Unavailable reports whether the provider could not serve the call for now, so
// that another provider should be tried.
func (e *Error) Unavailable() bool { return e.Kind == KindNetwork || e.Kind == KindUnavailable }

// Retryable reports whether one more attempt at the same provider makes sense.
func (e *Error) Retryable() bool { return e.Kind == KindNetwork }

// maxResponseBody bounds what is read from a provider: an answer of 8k tokens is
// far below it, and a misbehaving server cannot exhaust memory.
const maxResponseBody = 4 << 20

// errRedirect is a redirect the client refused to follow.
var errRedirect = errors.New("redirect refused")

// newHTTPClient is the client of every provider: no overall timeout (each call's
// context carries one) and no redirects to another host, so that a key sent in a
// header never leaves for a server it was not meant for.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 0, // the call's context bounds the wait for a (slow) model
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 || req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
				return fmt.Errorf("%w: to %s", errRedirect, req.URL.Host)
			}
			return nil
		},
	}
}

// post sends body as JSON to url with header and reads the answer within the size
// limit. Any failure is an *Error classified for the fallback decision.
func post(ctx context.Context, client *http.Client, provider, url string, header http.Header, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Provider: provider, Kind: KindRejected, Err: err}
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return nil, &Error{Provider: provider, Kind: classifyTransport(ctx, err), Err: err}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBody+1))
	if err != nil {
		return nil, &Error{Provider: provider, Kind: classifyTransport(ctx, err), Status: res.StatusCode, Err: err}
	}
	if len(data) > maxResponseBody {
		return nil, &Error{Provider: provider, Kind: KindRejected, Status: res.StatusCode, Err: errors.New("response too large")}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		kind := KindRejected
		if res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests {
			kind = KindUnavailable
		}
		return nil, &Error{Provider: provider, Kind: kind, Status: res.StatusCode, Err: errors.New(snippet(data))}
	}
	return data, nil
}

// classifyTransport tells a timeout (the call's deadline passed) from a failed
// connection; both lead to the fallback, only the latter to a retry.
func classifyTransport(ctx context.Context, err error) Kind {
	var netErr net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return KindUnavailable
	case errors.As(err, &netErr) && netErr.Timeout():
		return KindUnavailable
	case errors.Is(err, errRedirect):
		return KindRejected
	}
	return KindNetwork
}

// snippet is the start of an error body, for the log.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = "empty body"
	}
	return s
}

// estimateTokens guesses a token count when a provider reports none: about four
// characters per token for German and English prose.
func estimateTokens(s string) int {
	n := len([]rune(s))
	return (n + 3) / 4
}
