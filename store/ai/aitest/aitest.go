// Package aitest runs fake AI providers for tests: local HTTP servers that speak
// Anthropic's Messages API and the OpenAI chat-completions format on the wire
// (paths, headers, body shapes, usage tokens, error bodies), record every request
// they receive, and answer what a test tells them to. A request that breaks the
// wire format fails the test.
//
//	primary := aitest.NewAnthropic(t, "sk-test", aitest.Rewrite)
//	svc := ai.NewService(db, ai.Config{Primary: ai.NewAnthropic(primary.URL, "sk-test")})
//	… primary.Calls()[0].System …
package aitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// Call is one request a fake provider received, decoded.
type Call struct {
	Path      string
	Header    http.Header
	Model     string
	MaxTokens int
	System    string
	User      string // the (last) user message
	Body      []byte // as sent
}

// Source is the text between the prompt's <<<TEXT and TEXT>>> markers, or "".
func (c Call) Source() string {
	_, rest, ok := strings.Cut(c.User, "<<<TEXT\n")
	if !ok {
		return ""
	}
	src, _, _ := strings.Cut(rest, "\nTEXT>>>")
	return src
}

// Reply is what a fake provider answers to one call.
type Reply struct {
	Status     int    // 0: 200
	Text       string // the answer
	TokensIn   int    // 0: estimated from the request
	TokensOut  int    // 0: estimated from Text
	NoUsage    bool   // leave out the usage object (some local servers do)
	Truncated  bool   // stop because of max_tokens
	Delay      time.Duration
	Hangup     bool        // close the connection without answering
	Header     http.Header // extra response headers, e.g. Location for a redirect
	RawBody    string      // send this body instead of the format's own
	ErrMessage string      // message of an error body (Status ≥ 400)
}

// Server is a fake provider.
type Server struct {
	*httptest.Server
	t        testing.TB
	format   string // "anthropic" or "openai"
	key      string
	respond  func(Call) Reply
	mu       sync.Mutex
	calls    []Call
	canceled atomic.Int64
}

// NewAnthropic starts a fake Messages API (POST /v1/messages) that requires
// x-api-key: key and anthropic-version: 2023-06-01. respond decides each answer.
func NewAnthropic(t testing.TB, key string, respond func(Call) Reply) *Server {
	return start(t, "anthropic", key, respond)
}

// NewOpenAI starts a fake chat-completions server (POST …/v1/chat/completions) that
// requires Authorization: Bearer key when key is not empty.
func NewOpenAI(t testing.TB, key string, respond func(Call) Reply) *Server {
	return start(t, "openai", key, respond)
}

func start(t testing.TB, format, key string, respond func(Call) Reply) *Server {
	s := &Server{t: t, format: format, key: key, respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// SetRespond replaces the answer function.
func (s *Server) SetRespond(respond func(Call) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = respond
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Canceled counts requests whose client gave up while a delayed answer was pending.
func (s *Server) Canceled() int { return int(s.canceled.Load()) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("aitest %s: read body: %v", s.format, err)
		return
	}
	c := Call{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if problem := s.decode(r, body, &c); problem != "" {
		s.t.Errorf("aitest %s: wire format: %s\n%s", s.format, problem, body)
		s.writeError(w, http.StatusBadRequest, problem)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	respond := s.respond
	s.mu.Unlock()
	if s.format == "anthropic" && r.Header.Get("x-api-key") != s.key ||
		s.format == "openai" && s.key != "" && r.Header.Get("Authorization") != "Bearer "+s.key {
		s.writeError(w, http.StatusUnauthorized, "invalid api key")
		return
	}
	reply := respond(c)
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			s.canceled.Add(1)
			return
		}
	}
	if reply.Hangup {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	for k, v := range reply.Header {
		w.Header()[k] = v
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.RawBody != "" {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply.RawBody)
		return
	}
	if status >= 300 {
		msg := reply.ErrMessage
		if msg == "" {
			msg = http.StatusText(status)
		}
		s.writeError(w, status, msg)
		return
	}
	in, out := reply.TokensIn, reply.TokensOut
	if in == 0 {
		in = (len([]rune(c.System+c.User)) + 3) / 4
	}
	if out == 0 {
		out = (len([]rune(reply.Text)) + 3) / 4
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.answer(c, reply, in, out))
}

// decode checks the request against the format and fills c; it returns a problem.
func (s *Server) decode(r *http.Request, body []byte, c *Call) string {
	if r.Method != http.MethodPost {
		return "method " + r.Method
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return "Content-Type " + ct
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	switch s.format {
	case "anthropic":
		if r.URL.Path != "/v1/messages" {
			return "path " + r.URL.Path
		}
		if v := r.Header.Get("anthropic-version"); v != "2023-06-01" {
			return "anthropic-version " + v
		}
		var req struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			System    string `json:"system"`
			Messages  []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := dec.Decode(&req); err != nil {
			return err.Error()
		}
		if req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0 || req.Messages[len(req.Messages)-1].Role != "user" {
			return "model, max_tokens and a final user message are required"
		}
		c.Model, c.MaxTokens, c.System, c.User = req.Model, req.MaxTokens, req.System, req.Messages[len(req.Messages)-1].Content
	case "openai":
		if !strings.HasSuffix(r.URL.Path, "/v1/chat/completions") || strings.Contains(r.URL.Path, "/v1/v1/") {
			return "path " + r.URL.Path
		}
		var req struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			Stream    bool   `json:"stream"`
			Messages  []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := dec.Decode(&req); err != nil {
			return err.Error()
		}
		if req.Model == "" || req.Stream || len(req.Messages) == 0 || req.Messages[len(req.Messages)-1].Role != "user" {
			return "model and a final user message are required, stream must be false"
		}
		for _, m := range req.Messages {
			if m.Role == "system" {
				c.System = m.Content
			}
		}
		c.Model, c.MaxTokens, c.User = req.Model, req.MaxTokens, req.Messages[len(req.Messages)-1].Content
	}
	return ""
}

func (s *Server) answer(c Call, reply Reply, in, out int) any {
	if s.format == "anthropic" {
		stop := "end_turn"
		if reply.Truncated {
			stop = "max_tokens"
		}
		res := map[string]any{
			"id": "msg_test", "type": "message", "role": "assistant", "model": c.Model,
			"content":     []map[string]any{{"type": "text", "text": reply.Text}},
			"stop_reason": stop, "stop_sequence": nil,
		}
		if !reply.NoUsage {
			res["usage"] = map[string]any{"input_tokens": in, "output_tokens": out}
		}
		return res
	}
	finish := "stop"
	if reply.Truncated {
		finish = "length"
	}
	res := map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": c.Model,
		"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": reply.Text}, "finish_reason": finish}},
	}
	if !reply.NoUsage {
		res["usage"] = map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	}
	return res
}

// writeError answers with the format's error body.
func (s *Server) writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if s.format == "anthropic" {
		kind := map[int]string{400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
		if kind == "" {
			kind = "api_error"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "code": status}})
}

// Rewrite answers like a model that follows the prompt: plain text comes back
// prefixed with "Neu: ", and in an HTML source each visible text is prefixed with
// "Neu: " while every tag, attribute, comment and <style> stays as it was. Without
// a source it answers "Neu: Text".
func Rewrite(c Call) Reply {
	src := c.Source()
	switch {
	case src == "":
		return Reply{Text: "Neu: Text"}
	case strings.Contains(c.System, "HTML-Fragment"):
		return Reply{Text: RewriteHTML(src, func(s string) string { return "Neu: " + s })}
	}
	return Reply{Text: "Neu: " + src}
}

// RewriteHTML applies f to every visible text of an HTML fragment and keeps
// everything else byte for byte.
func RewriteHTML(fragment string, f func(string) string) string {
	z := html.NewTokenizer(strings.NewReader(fragment))
	var b strings.Builder
	raw := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return b.String()
		}
		token := string(z.Raw())
		switch tt {
		case html.StartTagToken:
			name, _ := z.TagName()
			raw = string(name) == "style" || string(name) == "script"
		case html.EndTagToken:
			raw = false
		case html.TextToken:
			if trimmed := strings.TrimSpace(token); !raw && trimmed != "" {
				lead := token[:strings.Index(token, trimmed)]
				token = lead + f(trimmed) + token[len(lead)+len(trimmed):]
			}
		}
		b.WriteString(token)
	}
}

// Lines answers n numbered, quoted suggestions the way models like to write them,
// after an introduction line, so that the caller's cleaning is exercised.
func Lines(n int) func(Call) Reply {
	return func(Call) Reply {
		var b strings.Builder
		b.WriteString("Hier sind die Vorschläge:\n\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%d. „Vorschlag %d für {{vorname}}“\n", i, i)
		}
		return Reply{Text: b.String()}
	}
}

// Fixed always answers reply.
func Fixed(reply Reply) func(Call) Reply { return func(Call) Reply { return reply } }
