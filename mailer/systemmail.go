package mailer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

// SystemSenders opens the Sender for an account's system mail (double opt-in
// confirmations, notifications): the operator relay, or the development outbox
// when none is configured. *Transports implements it.
type SystemSenders interface {
	OpenSystem(accountID int64) (Sender, Route, error)
	// Open is the account's own route (its default server, else the relay,
	// else the outbox), for system mail marked AccountRoute.
	Open(ctx context.Context, accountID, serverID int64) (Sender, Route, error)
}

// SystemMailOptions configure a SystemMailWorker.
type SystemMailOptions struct {
	// BaseURL is RUNDBRIEF_BASE_URL, for the links in the bodies.
	BaseURL string
	// Interval is how often the queue is checked; zero: 2 s.
	Interval time.Duration
	// Now is the clock of the retry schedule; nil: time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// SystemMailWorker sends the queued system_mails rows. Several processes may run
// one each: a mail is claimed with FOR UPDATE SKIP LOCKED while it is sent, so it
// goes out once. A failed mail is tried again with a growing pause
// (store.SystemMailBackoff), up to store.SystemMailMaxAttempts times.
type SystemMailWorker struct {
	db      *store.DB
	senders SystemSenders
	opts    SystemMailOptions
}

// NewSystemMailWorker returns the system mail sender; run it with Run.
func NewSystemMailWorker(db *store.DB, senders SystemSenders, opts SystemMailOptions) *SystemMailWorker {
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &SystemMailWorker{db: db, senders: senders, opts: opts}
}

// Run sends due system mail every Interval until ctx ends.
func (w *SystemMailWorker) Run(ctx context.Context) error {
	tick := time.NewTicker(w.opts.Interval)
	defer tick.Stop()
	for {
		if _, err := w.SendDue(ctx); err != nil && ctx.Err() == nil {
			w.opts.Log.Error("system mail", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// SendDue sends every system mail that is due now, one at a time, and returns how
// many it tried (sent or failed). A failed send is recorded on the mail, not
// returned; the error is the database's.
func (w *SystemMailWorker) SendDue(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		found, err := w.db.SendNextSystemMail(ctx, w.opts.Now(), func(m store.SystemMail) error {
			err := w.send(ctx, m)
			if err != nil {
				w.opts.Log.Warn("system mail not sent", "id", m.ID, "kind", m.Kind, "attempt", m.Attempts+1, "err", err)
			}
			return err
		})
		if err != nil || !found {
			return n, err
		}
		n++
	}
	return n, nil
}

// send renders m and hands it to the account's system mail route.
func (w *SystemMailWorker) send(ctx context.Context, m store.SystemMail) error {
	var (
		sender Sender
		route  Route
		err    error
	)
	if m.AccountRoute {
		sender, route, err = w.senders.Open(ctx, m.AccountID, 0)
	} else {
		sender, route, err = w.senders.OpenSystem(m.AccountID)
	}
	if err != nil {
		return err
	}
	defer sender.Close()
	text, html := m.Bodies(w.opts.BaseURL)
	msg := &Message{
		From: route.From, To: Address{Email: m.ToEmail}, Subject: m.Subject, Text: text, HTML: html, Calendar: m.Calendar,
		// RFC 3834: no auto-replies to mail the service sends by itself.
		Headers: map[string]string{"Auto-Submitted": "auto-generated"},
	}
	err = sender.Send(ctx, msg)
	var se *SendError
	if errors.Is(err, ErrInvalidMessage) || (errors.As(err, &se) && se.Permanent) {
		return fmt.Errorf("%w: %w", store.ErrSystemMailRejected, err)
	}
	return err
}
