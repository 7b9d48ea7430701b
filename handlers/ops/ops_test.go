package ops_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rundbrief/rundbrief/handlers/ops"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// newServer serves the operator endpoints and two application routes behind
// Measure, as handlers.WithOps does.
func newServer(t *testing.T, db *store.DB, token string) (*httptest.Server, *ops.Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := ops.NewMetrics(reg, ops.Sources{Gauges: db, Outbox: db})
	if err != nil {
		t.Fatal(err)
	}
	o := ops.New(ops.Deps{Ready: db, Gatherer: reg, Metrics: m, Token: token})
	r := chi.NewRouter()
	r.Use(o.Measure)
	o.Routes(r)
	r.Route("/v1", func(r chi.Router) {
		r.Get("/contacts/{id}", func(w http.ResponseWriter, r *http.Request) {
			if chi.URLParam(r, "id") == "404" {
				http.NotFound(w, r)
				return
			}
			_, _ = io.WriteString(w, "{}")
		})
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv, m
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// readiness returns /readyz's status and reason.
func readiness(t *testing.T, base string) (int, string) {
	t.Helper()
	status, body := get(t, base+ops.ReadyPath, "")
	var r struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if (status == 200) != (r.Status == "ready") {
		t.Fatalf("/readyz %d with %q", status, body)
	}
	return status, r.Reason
}

func TestHealthzAnswersWithoutAnything(t *testing.T) {
	srv, _ := newServer(t, dbtest.NewDB(t), "secret-token")
	status, body := get(t, srv.URL+ops.HealthPath, "")
	if status != 200 || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("/healthz: %d %q", status, body)
	}
}

// TestReadyzFollowsTheDatabase stops a real PostgreSQL server under a ready
// process and starts it again on the same socket.
func TestReadyzFollowsTheDatabase(t *testing.T) {
	pg := dbtest.OwnServer(t)
	db := pg.DB
	srv, _ := newServer(t, db, "")

	if status, reason := readiness(t, srv.URL); status != 200 {
		t.Fatalf("running database: %d %s", status, reason)
	}
	pg.Stop()
	if status, reason := readiness(t, srv.URL); status != 503 || reason != ops.ReasonDatabaseUnreachable {
		t.Fatalf("stopped database: %d %q", status, reason)
	}
	// Alive all the same: a balancer must not restart the process for it.
	if status, _ := get(t, srv.URL+ops.HealthPath, ""); status != 200 {
		t.Fatalf("/healthz while the database is away: %d", status)
	}
	pg.Start()
	if status, reason := readiness(t, srv.URL); status != 200 {
		t.Fatalf("database back: %d %q", status, reason)
	}
}

func TestReadyzWantsEveryMigration(t *testing.T) {
	db := dbtest.NewDB(t)
	srv, _ := newServer(t, db, "")
	if status, reason := readiness(t, srv.URL); status != 200 {
		t.Fatalf("migrated: %d %s", status, reason)
	}
	if _, err := db.ExecContext(context.Background(), `DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)`); err != nil {
		t.Fatal(err)
	}
	if status, reason := readiness(t, srv.URL); status != 503 || reason != ops.ReasonMigrationsPending {
		t.Fatalf("a migration missing: %d %q", status, reason)
	}
}

func TestMetricsToken(t *testing.T) {
	db := dbtest.NewDB(t)
	srv, _ := newServer(t, db, "s3cret-token")
	for _, token := range []string{"", "wrong", "s3cret-token-and-more", "s3cret-toke"} {
		if status, _ := get(t, srv.URL+ops.MetricsPath, token); status != 401 {
			t.Errorf("token %q: %d, want 401", token, status)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+ops.MetricsPath, nil)
	req.SetBasicAuth("x", "s3cret-token")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("basic auth: %v %v, want 401", resp, err)
	}
	if status, body := get(t, srv.URL+ops.MetricsPath, "s3cret-token"); status != 200 || !strings.Contains(body, "rundbrief_send_queue_depth") {
		t.Errorf("with the token: %d", status)
	}
	open, _ := newServer(t, db, "")
	if status, _ := get(t, open.URL+ops.MetricsPath, ""); status != 200 {
		t.Errorf("without a token configured: %d, want 200", status)
	}
}

// scrape parses /metrics as the Prometheus text format.
func scrape(t *testing.T, base, token string) map[string]*dto.MetricFamily {
	t.Helper()
	status, body := get(t, base+ops.MetricsPath, token)
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is no Prometheus text: %v", err)
	}
	return families
}

// value is the value of the family's series with exactly these labels; -1
// when there is none.
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
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
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func TestMetricsCountByRoutePattern(t *testing.T) {
	db := dbtest.NewDB(t)
	srv, m := newServer(t, db, "")
	for _, p := range []string{"/v1/contacts/1", "/v1/contacts/2", "/v1/contacts/404", "/nowhere/abc"} {
		get(t, srv.URL+p, "")
	}
	get(t, srv.URL+ops.ReadyPath, "")
	m.CountSendOutcomes(store.RecipientSent, 3)
	m.CountSendOutcomes(store.RecipientQueued, 1)
	m.CountWebhookOutcomes(store.DeliveryRetrying, 2)
	m.WorkerStopped("webhooks")

	f := scrape(t, srv.URL, "")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rundbrief_http_requests_total", map[string]string{"route": "/v1/contacts/{id}", "method": "GET", "status": "200"}, 2},
		{"rundbrief_http_requests_total", map[string]string{"route": "/v1/contacts/{id}", "method": "GET", "status": "404"}, 1},
		{"rundbrief_http_requests_total", map[string]string{"route": "unmatched", "method": "GET", "status": "404"}, 1},
		{"rundbrief_http_request_duration_seconds", map[string]string{"route": "/v1/contacts/{id}", "method": "GET"}, 3},
		{"rundbrief_mail_outcomes_total", map[string]string{"outcome": "sent"}, 3},
		{"rundbrief_mail_outcomes_total", map[string]string{"outcome": "retried"}, 1},
		{"rundbrief_mail_outcomes_total", map[string]string{"outcome": "failed"}, 0},
		{"rundbrief_webhook_attempts_total", map[string]string{"outcome": "retrying"}, 2},
		{"rundbrief_webhook_attempts_total", map[string]string{"outcome": "succeeded"}, 0},
		{"rundbrief_worker_errors_total", map[string]string{"worker": "webhooks"}, 1},
		{"rundbrief_database_up", map[string]string{}, 1},
		{"rundbrief_send_queue_depth", map[string]string{}, 0},
		{"rundbrief_webhook_backlog", map[string]string{}, 0},
		{"rundbrief_outbox_lag_events", map[string]string{"consumer": "webhooks"}, 0},
		{"rundbrief_outbox_lag_seconds", map[string]string{"consumer": "webhooks"}, 0},
	} {
		if got := value(f, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Each pool is exported, and together they are the connection bound less
	// the listener's connection.
	pools := 0.0
	for _, pool := range []string{"main", "relaxed", "generic", "queue"} {
		n := value(f, "rundbrief_db_pool_max_open_connections", map[string]string{"pool": pool})
		if n < 1 {
			t.Errorf("pool %s: max open %v", pool, n)
		}
		pools += n
	}
	if pools != store.DefaultMaxConns-store.ListenerConns {
		t.Errorf("pools hold %v connections, want %d", pools, store.DefaultMaxConns-store.ListenerConns)
	}
	// Never the raw path, and not the probes.
	for _, s := range f["rundbrief_http_requests_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "route" && (strings.Contains(l.GetValue(), "404") || strings.Contains(l.GetValue(), "abc") || l.GetValue() == ops.ReadyPath) {
				t.Errorf("route label %q", l.GetValue())
			}
		}
	}
	for _, name := range []string{"rundbrief_db_pool_open_connections", "rundbrief_db_pool_in_use_connections", "rundbrief_db_pool_idle_connections",
		"rundbrief_db_pool_waits_total", "rundbrief_db_pool_wait_seconds_total"} {
		if n := len(f[name].GetMetric()); n != 4 {
			t.Errorf("%s: %d pools, want 4", name, n)
		}
	}
}

// TestMetricsWithoutDatabase: a scrape still answers, and says the database
// reads failed.
func TestMetricsWithoutDatabase(t *testing.T) {
	db := dbtest.Open(t, dbtest.URL(t))
	srv, _ := newServer(t, db, "")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f := scrape(t, srv.URL, "")
	if up := value(f, "rundbrief_database_up", map[string]string{}); up != 0 {
		t.Fatalf("rundbrief_database_up = %v with the pools closed", up)
	}
	if _, ok := f["rundbrief_send_queue_depth"]; ok {
		t.Error("a queue depth without a database")
	}
}

// An API log row the database refuses is counted in
// rundbrief_api_log_rows_lost_total, which starts at 0.
func TestMetricsCountLostAPILogRows(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	srv, m := newServer(t, db, "")
	if got := value(scrape(t, srv.URL, ""), "rundbrief_api_log_rows_lost_total", map[string]string{}); got != 0 {
		t.Fatalf("before any loss: %v, want 0", got)
	}
	w := store.NewAPILogWriter(db, nil).CountLosses(m)
	// No such account: the database refuses the row for good.
	w.Add(ctx, store.APILogEntry{AccountID: 1 << 40, RequestID: "req_lost", Method: "GET", Path: "/v1/me", Status: 200, CreatedAt: time.Now()})
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := value(scrape(t, srv.URL, ""), "rundbrief_api_log_rows_lost_total", map[string]string{}); got != 1 {
		t.Errorf("after one refused row: %v, want 1", got)
	}
}
