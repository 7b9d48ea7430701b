package store

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/lib/pq"
)

// ListenNotifications is the process's one listener connection to PostgreSQL,
// whatever the number of things that wait for a NOTIFY: a key, account or plan
// changed in another process (keysChannel) flushes the key cache, and the
// flush is acknowledged to the change that waits for it; events
// committed anywhere (eventsChannel) wake this process's outbox consumers. It
// runs until ctx ends. Its connection is the one the DB's connection bound
// keeps for listeners (ListenerConns): a second listener on the same DB while
// one runs is refused. Without it the key cache stays off and the consumers
// poll.
func (db *DB) ListenNotifications(ctx context.Context, url string, log *slog.Logger) error {
	select {
	case db.listeners <- struct{}{}:
		defer func() { <-db.listeners }()
	default:
		return fmt.Errorf("store: listen: all %d listener connections of the bound are in use", ListenerConns)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The key cache serves only while this listener is connected and has
	// acknowledged the key generation (keycache.go); the connection's
	// application_name is how key changes find the listeners to wait for.
	name := newKeyListenerName()
	defer func() {
		db.keys.disable()
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = db.ExecContext(stopCtx, deleteKeyAck, name) // a leftover row is dropped by the next listener
	}()
	l := pq.NewListener(withParam(url, "application_name", name), 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if ev == pq.ListenerEventDisconnected || ev == pq.ListenerEventConnectionAttemptFailed {
			db.keys.disable()
		}
		if err != nil {
			log.Warn("notification listener", "event", ev, "err", err)
		}
	})
	defer l.Close()
	for _, channel := range []string{keysChannel, eventsChannel} {
		if err := l.Listen(channel); err != nil {
			return fmt.Errorf("store: listen %s: %w", channel, err)
		}
	}
	if _, err := db.ExecContext(ctx, deleteGoneKeyAcks); err != nil {
		log.Warn("notification listener: drop acknowledgements of gone listeners", "err", err)
	}
	if err := db.resyncKeys(ctx, name); err != nil {
		log.Warn("notification listener: key cache stays off", "err", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.Notify:
			switch {
			case n == nil:
				// After a reconnect notifications may have been missed.
				if err := db.resyncKeys(ctx, name); err != nil {
					log.Warn("notification listener: key cache stays off", "err", err)
				}
				db.newEvents.ring()
			case n.Channel == keysChannel:
				var err error
				if gen, perr := strconv.ParseInt(n.Extra, 10, 64); perr == nil {
					err = db.ackKeys(ctx, name, gen)
				} else {
					err = db.resyncKeys(ctx, name) // a notice without its generation
				}
				if err != nil {
					log.Warn("notification listener: key change not acknowledged", "err", err)
				}
			case n.Channel == eventsChannel:
				db.newEvents.ring()
			}
		}
	}
}

// bell wakes every goroutine waiting on it at once: wait returns the channel
// that the next ring closes.
type bell struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *bell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *bell) ring() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
