package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// ProcessInfo describes a `serve` process for the registry. Settings are the
// configuration values every process on one database must share, keyed by
// the name an operator knows them by (the environment variable).
type ProcessInfo struct {
	Hostname string
	PID      int
	Settings map[string]string
}

// Registry timing: a process renews its row every HeartbeatInterval, and a row
// not renewed for StaleAfter (three missed heartbeats) counts as gone.
const (
	HeartbeatInterval = 10 * time.Second
	StaleAfter        = 3 * HeartbeatInterval
)

// ProcessMismatchError is returned by RegisterProcess when a live process runs
// with other settings. It names each differing setting with both values.
type ProcessMismatchError struct {
	Other   ProcessInfo // the live process that disagrees
	Differs []string    // setting names, sorted
	Mine    map[string]string
}

// Error names the settings, this process's values and the other process's.
func (e *ProcessMismatchError) Error() string {
	parts := make([]string, 0, len(e.Differs))
	for _, k := range e.Differs {
		parts = append(parts, fmt.Sprintf("%s=%s here but %s=%s there", k, e.Mine[k], k, e.Other.Settings[k]))
	}
	return fmt.Sprintf("store: another serve process on this database (host %s, pid %d) runs with other settings: %s; every serve process on one database must use the same values",
		e.Other.Hostname, e.Other.PID, strings.Join(parts, ", "))
}

// processLock serialises registrations, so that two processes with different
// settings that start at the same moment cannot both pass the check. The
// number is arbitrary and used nowhere else.
const processLock = 7_316_180_019

const (
	deleteStaleProcesses = `DELETE FROM processes WHERE heartbeat_at < now() - $1 * interval '1 millisecond'`
	selectLiveProcesses  = `SELECT hostname, pid, settings FROM processes ORDER BY started_at, id`
	insertProcess        = `INSERT INTO processes (id, hostname, pid, settings) VALUES ($1, $2, $3, $4)`
	renewProcess         = `UPDATE processes SET heartbeat_at = now() WHERE id = $1`
	deleteProcess        = `DELETE FROM processes WHERE id = $1`
)

// Process is this process's entry in the registry; Run keeps it alive.
type Process struct {
	db       *DB
	id       string
	info     ProcessInfo
	settings []byte
	log      *slog.Logger
}

// RegisterProcess enters this process into the registry of running `serve`
// processes, after removing the entries of processes that are gone. It
// returns a *ProcessMismatchError when a live process runs with other
// settings. The caller runs the returned Process's Run as a worker; log
// receives the heartbeat's failures.
func (db *DB) RegisterProcess(ctx context.Context, info ProcessInfo, log *slog.Logger) (*Process, error) {
	settings, err := json.Marshal(info.Settings)
	if err != nil {
		return nil, fmt.Errorf("store: register process: %w", err)
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Process{db: db, id: hex.EncodeToString(b), info: info, settings: settings, log: log}
	if err := p.register(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// register checks the live processes' settings and enters this one, under a
// lock that serialises registrations.
func (p *Process) register(ctx context.Context) error {
	return p.db.WithTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, processLock); err != nil {
			return fmt.Errorf("store: register process: %w", err)
		}
		if _, err := tx.ExecContext(ctx, deleteStaleProcesses, StaleAfter.Milliseconds()); err != nil {
			return fmt.Errorf("store: register process: %w", err)
		}
		var live []struct {
			Hostname string `db:"hostname"`
			PID      int    `db:"pid"`
			Settings []byte `db:"settings"`
		}
		if err := tx.SelectContext(ctx, &live, selectLiveProcesses); err != nil {
			return fmt.Errorf("store: register process: %w", err)
		}
		for _, l := range live {
			var theirs map[string]string
			if err := json.Unmarshal(l.Settings, &theirs); err != nil {
				return fmt.Errorf("store: register process: settings of pid %d: %w", l.PID, err)
			}
			if differs := differingSettings(p.info.Settings, theirs); len(differs) > 0 {
				return &ProcessMismatchError{Other: ProcessInfo{Hostname: l.Hostname, PID: l.PID, Settings: theirs},
					Differs: differs, Mine: p.info.Settings}
			}
		}
		if _, err := tx.ExecContext(ctx, insertProcess, p.id, p.info.Hostname, p.info.PID, p.settings); err != nil {
			return fmt.Errorf("store: register process: %w", err)
		}
		return nil
	})
}

// differingSettings names the settings whose values differ, a setting only one
// side has included (an older binary that lacks a setting disagrees with one
// that has it).
func differingSettings(mine, theirs map[string]string) []string {
	var out []string
	for k := range maps.Keys(mine) {
		if v, ok := theirs[k]; !ok || v != mine[k] {
			out = append(out, k)
		}
	}
	for k := range maps.Keys(theirs) {
		if _, ok := mine[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Run renews the process's heartbeat every HeartbeatInterval and removes gone
// processes' rows until ctx ends, then deletes its own row so that a
// replacement with other settings may start at once.
func (p *Process) Run(ctx context.Context) error {
	tick := time.NewTicker(HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return p.Deregister(stopCtx)
		case <-tick.C:
			// A failed heartbeat is retried at the next tick: the row is lost
			// only after StaleAfter without one.
			if err := p.Heartbeat(ctx); err != nil && ctx.Err() == nil {
				p.log.Error("process registry: heartbeat", "err", err)
			}
		}
	}
}

// Heartbeat renews the process's row and removes the rows of processes that
// are gone. A row that was removed meanwhile (the database was out of reach
// for longer than StaleAfter) is entered again through the same check as at
// start, so a process with other settings that started in the gap is reported
// as a *ProcessMismatchError.
func (p *Process) Heartbeat(ctx context.Context) error {
	res, err := p.db.ExecContext(ctx, renewProcess, p.id)
	if err != nil {
		return fmt.Errorf("store: process heartbeat: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: process heartbeat: %w", err)
	} else if n == 0 {
		return p.register(ctx)
	}
	if _, err := p.db.ExecContext(ctx, deleteStaleProcesses, StaleAfter.Milliseconds()); err != nil {
		return fmt.Errorf("store: process heartbeat: %w", err)
	}
	return nil
}

// Deregister removes the process's row at once.
func (p *Process) Deregister(ctx context.Context) error {
	if _, err := p.db.ExecContext(ctx, deleteProcess, p.id); err != nil {
		return fmt.Errorf("store: deregister process: %w", err)
	}
	return nil
}
