package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lib/pq"
)

// ListenNotifications is the process's one listener connection to PostgreSQL,
// whatever the number of things that wait for a NOTIFY: a key, account or plan
// changed in another process (keysChannel) flushes the key cache; events
// committed anywhere (eventsChannel) wake this process's outbox consumers. It
// runs until ctx ends. Its connection is the one the DB's connection bound
// keeps for listeners (ListenerConns): a second listener on the same DB while
// one runs is refused. Without it the key cache lives out its TTL and the
// consumers poll.
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
	l := pq.NewListener(url, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
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
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.Notify:
			switch {
			case n == nil:
				// After a reconnect notifications may have been missed.
				db.keys.flush()
				db.newEvents.ring()
			case n.Channel == keysChannel:
				db.keys.flush()
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
