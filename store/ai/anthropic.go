package ai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// AnthropicVersion is the Messages API version the requests are written for.
const AnthropicVersion = "2023-06-01"

// Anthropic calls Anthropic's Messages API (POST {URL}/v1/messages).
type Anthropic struct {
	url    string
	key    string
	client *http.Client
}

// NewAnthropic returns the provider for the API at baseURL (e.g.
// https://api.anthropic.com; a trailing /v1 is tolerated) with the given key.
func NewAnthropic(baseURL, key string) *Anthropic {
	u := strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")
	return &Anthropic{url: u, key: key, client: newHTTPClient()}
}

// Name is "anthropic".
func (p *Anthropic) Name() string { return "anthropic" }

type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    string             `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
}

type anthropicResponse struct {
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// Complete sends one Messages API request.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := json.Marshal(anthropicRequest{
		Model: req.Model, MaxTokens: req.MaxTokens, System: req.System,
		Messages: []anthropicMessage{{Role: "user", Content: req.Prompt}},
	})
	if err != nil {
		return Response{}, &Error{Provider: p.Name(), Kind: KindRejected, Err: err}
	}
	header := http.Header{}
	header.Set("x-api-key", p.key)
	header.Set("anthropic-version", AnthropicVersion)
	data, err := post(ctx, p.client, p.Name(), p.url+"/v1/messages", header, body)
	if err != nil {
		return Response{}, err
	}
	var res anthropicResponse
	if err := json.Unmarshal(data, &res); err != nil {
		return Response{}, &Error{Provider: p.Name(), Kind: KindRejected, Status: http.StatusOK, Err: errors.New("unreadable answer: " + snippet(data))}
	}
	var text strings.Builder
	for _, c := range res.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	out := Response{Text: text.String(), Model: res.Model, Truncated: res.StopReason == "max_tokens"}
	if out.Model == "" {
		out.Model = req.Model
	}
	if res.Usage != nil {
		out.TokensIn, out.TokensOut = res.Usage.InputTokens, res.Usage.OutputTokens
	} else {
		out.TokensIn, out.TokensOut, out.Estimated = estimateTokens(req.System+req.Prompt), estimateTokens(out.Text), true
	}
	return out, nil
}
