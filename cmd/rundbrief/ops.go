package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/rundbrief/rundbrief/handlers/ops"
	"github.com/rundbrief/rundbrief/store"
)

// operations is what lets several serve processes run behind a load balancer:
// this process's entry in the process registry, its metrics and the operator
// endpoints (/healthz, /readyz, /metrics).
type operations struct {
	process *store.Process
	metrics *ops.Metrics
	handler *ops.Ops
}

// newOperations sets up the metrics on a registry of their own and registers
// the process. It refuses to start when a live process on the same database
// runs with other private-address settings: one process would then deliver
// webhooks or mail to addresses another one refuses, depending on which
// process claims the row.
func newOperations(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger) (*operations, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	m, err := ops.NewMetrics(reg, ops.Sources{Gauges: db, Outbox: db, Log: log})
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if cfg.MetricsToken == "" {
		log.Warn("RUNDBRIEF_METRICS_TOKEN is not set: /metrics is open to anyone who reaches the service")
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	proc, err := db.RegisterProcess(ctx, store.ProcessInfo{Hostname: host, PID: os.Getpid(), Settings: sharedSettings(cfg)}, log)
	if err != nil {
		return nil, err
	}
	return &operations{
		process: proc,
		metrics: m,
		handler: ops.New(ops.Deps{Ready: db, Gatherer: reg, Metrics: m, Token: cfg.MetricsToken, Log: log}),
	}, nil
}

// sharedSettings are the settings every serve process on one database must
// agree on, by environment variable.
func sharedSettings(cfg Config) map[string]string {
	return map[string]string{
		"RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE": strconv.FormatBool(cfg.WebhookAllowPrivate),
		"RUNDBRIEF_SMTP_ALLOW_PRIVATE":    strconv.FormatBool(cfg.SMTPAllowPrivate),
	}
}
