package inbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// The steps of a connection, named in German in a failed test's message.
const (
	StepConnect = "Verbindung"
	StepTLS     = "TLS"
	StepLogin   = "Anmeldung"
	StepFolder  = "Ordner"
)

// StepError is a connection that failed at one step. It is a validation
// error on the field that step depends on, so that PUT /inbox/settings
// answers 422 naming the step.
type StepError struct {
	Step    string
	Field   string
	Message string // German, starts with the step
	Err     error
}

func (e *StepError) Error() string { return "inbox: " + e.Step + ": " + e.Message }
func (e *StepError) Unwrap() error { return e.Err }

// Validation is the 422 of a failed connection test.
func (e *StepError) Validation() error {
	return store.Invalid(e.Field, e.Message)
}

// connConfig is what one IMAP connection needs.
type connConfig struct {
	Host, Username, Password, Encryption, Folder string
	Port                                         int
}

func (c connConfig) addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// session is a logged-in IMAP connection with its folder selected.
type session struct {
	c    *imapclient.Client
	mbox *imap.SelectData
	stop func() bool
}

func (s *session) close() {
	if s.stop != nil {
		s.stop()
	}
	_ = s.c.Logout().Wait()
	_ = s.c.Close()
}

// open connects through the address guard (checked on every dial), secures
// the connection, logs in and selects the folder; a failure is a *StepError.
// The connection closes when ctx ends.
func (s *Service) open(ctx context.Context, cfg connConfig) (*session, error) {
	if msg := s.cfg.Guard.CheckHost(ctx, cfg.Host); msg != "" {
		return nil, &StepError{Step: StepConnect, Field: "host", Message: "Verbindung nicht erlaubt: " + msg}
	}
	dialCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	raw, err := s.cfg.Guard.DialContext(dialCtx, "tcp", cfg.addr())
	if err != nil {
		var blocked *webhook.BlockedAddressError
		if errors.As(err, &blocked) {
			return nil, &StepError{Step: StepConnect, Field: "host", Err: err,
				Message: fmt.Sprintf("Verbindung nicht erlaubt: die Adresse %s ist nicht öffentlich erreichbar.", blocked.Addr)}
		}
		return nil, &StepError{Step: StepConnect, Field: "host", Err: err,
			Message: fmt.Sprintf("Verbindung zu %s fehlgeschlagen: der Server ist nicht erreichbar (%s).", cfg.addr(), shortErr(err))}
	}
	_ = raw.SetDeadline(time.Now().Add(s.cfg.Timeout))
	opts := &imapclient.Options{TLSConfig: s.tlsConfig(cfg.Host)}
	var c *imapclient.Client
	switch cfg.Encryption {
	case store.EncryptionTLS:
		tc := tls.Client(raw, opts.TLSConfig)
		if err := tc.HandshakeContext(dialCtx); err != nil {
			_ = raw.Close()
			return nil, &StepError{Step: StepTLS, Field: "encryption", Err: err,
				Message: fmt.Sprintf("TLS fehlgeschlagen: die verschlüsselte Verbindung zu %s kam nicht zustande (%s). Stimmen Port und Verschlüsselung?", cfg.addr(), shortErr(err))}
		}
		c = imapclient.New(tc, opts)
	case store.EncryptionSTARTTLS:
		c, err = imapclient.NewStartTLS(raw, opts)
		if err != nil {
			_ = raw.Close()
			return nil, &StepError{Step: StepTLS, Field: "encryption", Err: err,
				Message: fmt.Sprintf("TLS fehlgeschlagen: STARTTLS mit %s kam nicht zustande (%s).", cfg.addr(), shortErr(err))}
		}
	default:
		c = imapclient.New(raw, opts)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	fail := func(e *StepError) (*session, error) {
		stop()
		_ = c.Close()
		return nil, e
	}
	if err := c.WaitGreeting(); err != nil {
		return fail(&StepError{Step: StepConnect, Field: "host", Err: err,
			Message: fmt.Sprintf("Verbindung zu %s fehlgeschlagen: der Server meldet sich nicht als IMAP-Server (%s).", cfg.addr(), shortErr(err))})
	}
	if err := c.Login(cfg.Username, cfg.Password).Wait(); err != nil {
		return fail(&StepError{Step: StepLogin, Field: "password", Err: err,
			Message: "Anmeldung fehlgeschlagen: Benutzername oder Passwort wurden abgelehnt."})
	}
	mbox, err := c.Select(cfg.Folder, nil).Wait()
	if err != nil {
		return fail(&StepError{Step: StepFolder, Field: "folder", Err: err,
			Message: fmt.Sprintf("Ordner %q nicht gefunden oder nicht lesbar.", cfg.Folder)})
	}
	// From here on the sync sets its own pace; ctx bounds it.
	_ = raw.SetDeadline(time.Time{})
	return &session{c: c, mbox: mbox, stop: stop}, nil
}

func (s *Service) tlsConfig(host string) *tls.Config {
	var c *tls.Config
	if s.cfg.TLSConfig != nil {
		c = s.cfg.TLSConfig.Clone()
	} else {
		c = &tls.Config{}
	}
	c.ServerName = host
	c.MinVersion = tls.VersionTLS12
	return c
}

func shortErr(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return strings.TrimSpace(msg)
}

// sentFolder finds the folder marked \Sent, else one with a usual name; "" when
// the server has none.
func sentFolder(c *imapclient.Client) string {
	list, err := c.List("", "*", nil).Collect()
	if err != nil {
		return ""
	}
	for _, m := range list {
		for _, a := range m.Attrs {
			if a == imap.MailboxAttrSent {
				return m.Mailbox
			}
		}
	}
	for _, m := range list {
		switch strings.ToLower(m.Mailbox) {
		case "sent", "sent items", "sent messages", "gesendet", "gesendete objekte", "gesendete elemente", "inbox.sent", "inbox/sent":
			return m.Mailbox
		}
	}
	return ""
}
