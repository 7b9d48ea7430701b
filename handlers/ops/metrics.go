package ops

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rundbrief/rundbrief/store"
)

// Gauges are the numbers read from the database at scrape time. The queue and
// backlog are shared by every process, so each process reports the same value.
type Gauges interface {
	SendQueueDepth(ctx context.Context) (int64, error)
	WebhookBacklog(ctx context.Context) (int64, error)
	PoolStats() map[string]store.PoolStats
}

// OutboxLagger reports how far each consumer of the events outbox is behind.
// It is its own interface so that per-consumer cursors can replace today's
// single consumer without touching the collector.
type OutboxLagger interface {
	OutboxLag(ctx context.Context) (map[string]store.ConsumerLag, error)
}

// Sources are where the scrape-time metrics come from.
type Sources struct {
	Gauges Gauges
	Outbox OutboxLagger
	Log    *slog.Logger
}

// Metrics holds the process's counters. It implements the counting interfaces
// the send worker (mailer.OutcomeCounter), the webhook service
// (webhook.OutcomeCounter) and the API log writer (store.APILogLossCounter)
// declare.
type Metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	sends        *prometheus.CounterVec
	webhooks     *prometheus.CounterVec
	workerErrors *prometheus.CounterVec
	apiLogLost   prometheus.Counter
}

// Send outcomes as labelled in rundbrief_mail_outcomes_total.
var sendOutcomes = map[string]string{
	store.RecipientSent: "sent", store.RecipientFailed: "failed", store.RecipientSkipped: "skipped", store.RecipientQueued: "retried",
}

// NewMetrics creates the metrics and registers them, with a collector that reads
// the database gauges at scrape time, on reg.
func NewMetrics(reg prometheus.Registerer, src Sources) (*Metrics, error) {
	if src.Log == nil {
		src.Log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rundbrief_http_requests_total",
			Help: "HTTP requests of the API, the portal and the public pages, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rundbrief_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rundbrief_mail_outcomes_total",
			Help: "Recipients of newsletters and single emails whose send outcome this process recorded: sent, failed, skipped (blocked or unsubscribed), retried (transient failure).",
		}, []string{"outcome"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rundbrief_webhook_attempts_total",
			Help: "Webhook delivery attempts this process recorded: succeeded, retrying (failed, another attempt scheduled), failed (none left).",
		}, []string{"outcome"}),
		workerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rundbrief_worker_errors_total",
			Help: "Background workers that stopped with an error, by worker.",
		}, []string{"worker"}),
		apiLogLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rundbrief_api_log_rows_lost_total",
			Help: "API log rows this process could not store: refused by the database for their content, or still unwritten when the process stopped.",
		}),
	}
	// Known outcomes start at 0, so that rate() sees the first one.
	for _, o := range sendOutcomes {
		m.sends.WithLabelValues(o)
	}
	for _, o := range []string{store.DeliverySucceeded, store.DeliveryRetrying, store.DeliveryFailed} {
		m.webhooks.WithLabelValues(o)
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.sends, m.webhooks, m.workerErrors, m.apiLogLost, newDBCollector(src)} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// CountSendOutcomes counts n recipients recorded with a send worker status.
func (m *Metrics) CountSendOutcomes(status string, n int) {
	outcome, ok := sendOutcomes[status]
	if !ok {
		outcome = status
	}
	m.sends.WithLabelValues(outcome).Add(float64(n))
}

// CountWebhookOutcomes counts n recorded webhook attempts with an outcome.
func (m *Metrics) CountWebhookOutcomes(outcome string, n int) {
	m.webhooks.WithLabelValues(outcome).Add(float64(n))
}

// CountAPILogLost counts n API log rows that could not be stored.
func (m *Metrics) CountAPILogLost(n int) {
	m.apiLogLost.Add(float64(n))
}

// WorkerStopped counts a background worker that ended with an error.
func (m *Metrics) WorkerStopped(worker string) {
	m.workerErrors.WithLabelValues(worker).Inc()
}

// Measure counts every request by its route pattern (never the raw path, whose
// ids and tokens would make the series unbounded) and times it. The operator
// endpoints themselves are left out: probes would drown the rest.
func (m *Metrics) Measure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		switch route {
		case HealthPath, ReadyPath, MetricsPath:
			return
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		m.requests.WithLabelValues(route, r.Method, strconv.Itoa(status)).Inc()
		m.duration.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
	})
}

// scrapeTimeout bounds the database reads of one scrape (Prometheus gives up
// after 10 s by default).
const scrapeTimeout = 5 * time.Second

// dbCollector reads the shared gauges from the database when Prometheus
// scrapes, so that they are current and cost nothing between scrapes.
type dbCollector struct {
	src                                    Sources
	up, queue, backlog, lagEvents, lagAge  *prometheus.Desc
	poolMax, poolOpen, poolInUse, poolIdle *prometheus.Desc
	poolWaits, poolWaited                  *prometheus.Desc
}

func newDBCollector(src Sources) *dbCollector {
	pool := []string{"pool"}
	return &dbCollector{
		src:   src,
		up:    prometheus.NewDesc("rundbrief_database_up", "1 when this scrape's database reads succeeded, 0 when one failed.", nil, nil),
		queue: prometheus.NewDesc("rundbrief_send_queue_depth", "Recipients queued or being sent, over all processes (counted up to 100000).", nil, nil),
		backlog: prometheus.NewDesc("rundbrief_webhook_backlog",
			"Webhook deliveries with an attempt outstanding, over all processes (counted up to 100000).", nil, nil),
		lagEvents: prometheus.NewDesc("rundbrief_outbox_lag_events",
			"Outbox events a consumer has not handled yet (counted up to 100000).", []string{"consumer"}, nil),
		lagAge: prometheus.NewDesc("rundbrief_outbox_lag_seconds",
			"Age of the oldest outbox event a consumer has not handled yet; 0 when it is caught up.", []string{"consumer"}, nil),
		poolMax:    prometheus.NewDesc("rundbrief_db_pool_max_open_connections", "Connection limit of the pool.", pool, nil),
		poolOpen:   prometheus.NewDesc("rundbrief_db_pool_open_connections", "Open connections of the pool.", pool, nil),
		poolInUse:  prometheus.NewDesc("rundbrief_db_pool_in_use_connections", "Connections of the pool in use.", pool, nil),
		poolIdle:   prometheus.NewDesc("rundbrief_db_pool_idle_connections", "Idle connections of the pool.", pool, nil),
		poolWaits:  prometheus.NewDesc("rundbrief_db_pool_waits_total", "Times a caller waited for a connection of the pool.", pool, nil),
		poolWaited: prometheus.NewDesc("rundbrief_db_pool_wait_seconds_total", "Time callers waited for a connection of the pool.", pool, nil),
	}
}

// Describe sends the descriptions of every metric the collector reports.
func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.queue, c.backlog, c.lagEvents, c.lagAge,
		c.poolMax, c.poolOpen, c.poolInUse, c.poolIdle, c.poolWaits, c.poolWaited} {
		ch <- d
	}
}

// Collect reads the gauges. A read that fails leaves its metric out and sets
// rundbrief_database_up to 0, so the rest of the scrape still arrives.
func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	// Collect gets no context from the Prometheus library; the timeout keeps a
	// scrape from piling up behind an unreachable database.
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	up := 1.0
	failed := func(what string, err error) {
		up = 0
		c.src.Log.Debug("metrics scrape: "+what, "err", err)
	}
	if n, err := c.src.Gauges.SendQueueDepth(ctx); err != nil {
		failed("send queue depth", err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(n))
	}
	if n, err := c.src.Gauges.WebhookBacklog(ctx); err != nil {
		failed("webhook backlog", err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(n))
	}
	if lags, err := c.src.Outbox.OutboxLag(ctx); err != nil {
		failed("outbox lag", err)
	} else {
		for consumer, l := range lags {
			ch <- prometheus.MustNewConstMetric(c.lagEvents, prometheus.GaugeValue, float64(l.Events), consumer)
			ch <- prometheus.MustNewConstMetric(c.lagAge, prometheus.GaugeValue, l.Age.Seconds(), consumer)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	for name, s := range c.src.Gauges.PoolStats() {
		ch <- prometheus.MustNewConstMetric(c.poolMax, prometheus.GaugeValue, float64(s.MaxOpen), name)
		ch <- prometheus.MustNewConstMetric(c.poolOpen, prometheus.GaugeValue, float64(s.Open), name)
		ch <- prometheus.MustNewConstMetric(c.poolInUse, prometheus.GaugeValue, float64(s.InUse), name)
		ch <- prometheus.MustNewConstMetric(c.poolIdle, prometheus.GaugeValue, float64(s.Idle), name)
		ch <- prometheus.MustNewConstMetric(c.poolWaits, prometheus.CounterValue, float64(s.WaitCount), name)
		ch <- prometheus.MustNewConstMetric(c.poolWaited, prometheus.CounterValue, s.WaitDuration.Seconds(), name)
	}
}
