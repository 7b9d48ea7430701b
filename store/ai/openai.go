package ai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// OpenAI calls an OpenAI-compatible chat-completions endpoint: OpenAI itself, or a
// local Ollama (http://localhost:11434) or llama.cpp server.
type OpenAI struct {
	endpoint string
	key      string
	model    string
	client   *http.Client
}

// NewOpenAI returns the provider for the server at baseURL. The path
// /v1/chat/completions is appended unless baseURL already ends in /v1 (then only
// /chat/completions) or names the endpoint itself. An empty key sends no
// Authorization header (local servers need none); model is sent with every request.
func NewOpenAI(baseURL, key, model string) *OpenAI {
	u := strings.TrimRight(baseURL, "/")
	switch {
	case strings.HasSuffix(u, "/chat/completions"):
	case strings.HasSuffix(u, "/v1"):
		u += "/chat/completions"
	default:
		u += "/v1/chat/completions"
	}
	return &OpenAI{endpoint: u, key: key, model: model, client: newHTTPClient()}
}

// Name is "openai" (the wire format; the server may be Ollama or llama.cpp).
func (p *OpenAI) Name() string { return "openai" }

type openAIMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openAIRequest struct {
	Model     string          `json:"model"`
	Messages  []openAIMessage `json:"messages"`
	MaxTokens int             `json:"max_tokens,omitempty"`
	Stream    bool            `json:"stream"`
}

type openAIResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Complete sends one chat-completions request with a system and a user message.
// The configured model wins over req.Model.
func (p *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	model := p.model
	if model == "" {
		model = req.Model
	}
	body, err := json.Marshal(openAIRequest{
		Model: model, MaxTokens: req.MaxTokens,
		Messages: []openAIMessage{{Role: "system", Content: req.System}, {Role: "user", Content: req.Prompt}},
	})
	if err != nil {
		return Response{}, &Error{Provider: p.Name(), Kind: KindRejected, Err: err}
	}
	header := http.Header{}
	if p.key != "" {
		header.Set("Authorization", "Bearer "+p.key)
	}
	data, err := post(ctx, p.client, p.Name(), p.endpoint, header, body)
	if err != nil {
		return Response{}, err
	}
	var res openAIResponse
	if err := json.Unmarshal(data, &res); err != nil || len(res.Choices) == 0 {
		return Response{}, &Error{Provider: p.Name(), Kind: KindRejected, Status: http.StatusOK, Err: errors.New("unreadable answer: " + snippet(data))}
	}
	c := res.Choices[0]
	out := Response{Text: c.Message.Content, Model: res.Model, Truncated: c.FinishReason == "length"}
	if out.Model == "" {
		out.Model = model
	}
	if res.Usage != nil && (res.Usage.PromptTokens > 0 || res.Usage.CompletionTokens > 0) {
		out.TokensIn, out.TokensOut = res.Usage.PromptTokens, res.Usage.CompletionTokens
	} else {
		out.TokensIn, out.TokensOut, out.Estimated = estimateTokens(req.System+req.Prompt), estimateTokens(out.Text), true
	}
	return out, nil
}
