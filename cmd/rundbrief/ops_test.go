package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// startServe runs `serve` on dbURL with extra environment and returns its base
// URL once /readyz answers 200, or the error serve stopped with.
func startServe(t *testing.T, dbURL string, vars map[string]string) (string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	all := map[string]string{"DATABASE_URL": dbURL, "RUNDBRIEF_ADDR": addr, "RUNDBRIEF_DATA_DIR": t.TempDir(),
		"RUNDBRIEF_SECRET": strings.Repeat("s", 32)}
	for k, v := range vars {
		all[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, env(all), io.Discard, quiet()) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-done:
			done <- err // for the cleanup
			return "", err
		default:
		}
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base, nil
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("serve not ready within 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func request(t *testing.T, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// counter reads one series from /metrics, parsed as the Prometheus text format.
func counter(t *testing.T, base, token, name string, labels map[string]string) float64 {
	t.Helper()
	status, body := request(t, http.MethodGet, base+"/metrics", token, nil)
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is no Prometheus text: %v", err)
	}
	return seriesValue(families[name], labels)
}

func seriesValue(f *dto.MetricFamily, labels map[string]string) float64 {
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	return -1
}

// TestServeMetricsFollowASendAndAWebhook drives a real serve process: one
// single email to the development outbox and one webhook delivery move its
// counters, /metrics needs the token, and a second process on the database is
// refused with other private-address settings and welcome with the same.
func TestServeMetricsFollowASendAndAWebhook(t *testing.T) {
	dbURL := dbtest.URL(t)
	const token = "metrics-token-for-the-test"
	base, err := startServe(t, dbURL, map[string]string{"RUNDBRIEF_METRICS_TOKEN": token, "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := request(t, http.MethodGet, base+"/metrics", "", nil); status != 401 {
		t.Fatalf("/metrics without the token: %d", status)
	}
	if status, body := request(t, http.MethodGet, base+"/healthz", "", nil); status != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("/healthz: %d %s", status, body)
	}

	out, err := cli(t, dbURL, "account", "create", "--name", "Ops", "--email", "ops@example.org", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var acct struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &acct); err != nil {
		t.Fatal(err)
	}
	out, err = cli(t, dbURL, "key", "create", "--account", fmt.Sprint(acct.ID), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var key struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &key); err != nil {
		t.Fatal(err)
	}

	var received atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)

	sent := map[string]string{"outcome": "sent"}
	delivered := map[string]string{"outcome": "succeeded"}
	if s, d := counter(t, base, token, "rundbrief_mail_outcomes_total", sent), counter(t, base, token, "rundbrief_webhook_attempts_total", delivered); s != 0 || d != 0 {
		t.Fatalf("before anything happened: sent %v, delivered %v", s, d)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/webhooks", key.Key, map[string]any{"url": recv.URL + "/hook", "events": []string{"contact.created"}}); status != 201 {
		t.Fatalf("create webhook: %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/contacts", key.Key, map[string]any{"email": "neu@example.org"}); status != 201 {
		t.Fatalf("create contact: %d %s", status, body)
	}
	if status, body := request(t, http.MethodPost, base+"/v1/emails/send", key.Key, map[string]any{"to": "einzel@example.org", "subject": "Rechnung", "html": "<p>Hallo</p>"}); status != 202 {
		t.Fatalf("send: %d %s", status, body)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, d := counter(t, base, token, "rundbrief_mail_outcomes_total", sent), counter(t, base, token, "rundbrief_webhook_attempts_total", delivered)
		if s == 1 && d == 1 && received.Load() == 1 {
			break
		}
		if s > 1 || d > 1 || time.Now().After(deadline) {
			t.Fatalf("sent %v, delivered %v, received %d; want one each", s, d, received.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := counter(t, base, token, "rundbrief_http_requests_total", map[string]string{"route": "/v1/contacts", "method": "POST", "status": "201"}); n != 1 {
		t.Errorf("POST /v1/contacts counted %v times", n)
	}
	if n := counter(t, base, token, "rundbrief_send_queue_depth", map[string]string{}); n != 0 {
		t.Errorf("queue depth %v after the send", n)
	}

	// A second process with other private-address settings is refused,
	// naming the variable; one with the same settings joins.
	_, err = startServe(t, dbURL, map[string]string{"RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "false"})
	if err == nil || !strings.Contains(err.Error(), "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE=false here but RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE=true there") {
		t.Fatalf("second process with other settings: %v", err)
	}
	second, err := startServe(t, dbURL, map[string]string{"RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": "true"})
	if err != nil {
		t.Fatalf("second process with the same settings: %v", err)
	}
	if status, _ := request(t, http.MethodGet, second+"/metrics", "", nil); status != 200 {
		t.Errorf("second process's /metrics without a token configured: %d", status)
	}
}
