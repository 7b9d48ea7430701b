package mailer

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wneessen/go-mail/smtp"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// This file is the SMTP transport. An SMTPSender keeps one connection open and sends
// message after message over it; a Pool keeps idle connections per server for the
// send workers. The session is set up (EHLO, STARTTLS, AUTH) with go-mail's SMTP
// client (package github.com/wneessen/go-mail/smtp) rather than through go-mail's
// Client, because the send pipeline and the connection test need to know exactly
// which step failed and the server's reply code and text. The mail transactions
// themselves are written by smtpwire.go straight onto the session's connection:
// pipelined (RFC 2920) and with BDAT (RFC 3030) when the server offers them, which
// go-mail's client cannot do. Messages are rendered by mime.go.

// Sender sends messages. The send pipeline gets one from Transports.Open (or a Pool)
// and must Close it when done, which returns a pooled connection for reuse.
type Sender interface {
	// Send delivers m to its one recipient. On failure the error is a *SendError
	// (classify it with errors.As), an error wrapping ErrInvalidMessage (the message
	// cannot be built: permanent, but no bounce), or the context's error. Send fills
	// m.MessageID and m.Date when they are empty.
	Send(ctx context.Context, m *Message) error
	// Close releases the Sender. It does not fail a send that already returned.
	Close() error
}

// Stage is the step of an SMTP session at which something failed.
type Stage string

// The stages, in session order. Connect, TLS and Auth concern the server as a
// whole; Mail, Rcpt and Data concern one message.
const (
	StageConnect Stage = "connect" // TCP connect, greeting, EHLO
	StageTLS     Stage = "tls"     // implicit TLS handshake or STARTTLS
	StageAuth    Stage = "auth"    // SMTP AUTH (PLAIN or LOGIN)
	StageMail    Stage = "mail"    // MAIL FROM
	StageRcpt    Stage = "rcpt"    // RCPT TO
	StageData    Stage = "data"    // DATA, the content and the final reply
)

// SendError is a failed SMTP send.
//
//   - Permanent: the server refused this message for good (a 5xx reply to MAIL,
//     RCPT or DATA). Do not retry. At StageRcpt and StageData this is a bounce of
//     the recipient (Bounce reports it).
//   - otherwise transient: a 4xx reply or a network error. Retry later. Failures
//     at StageConnect, StageTLS and StageAuth are never Permanent even with a 5xx
//     reply (a wrong password is the server configuration's problem, not the
//     recipient's): the pipeline should retry later and tell the user.
type SendError struct {
	Stage     Stage
	Permanent bool
	Code      int    // SMTP reply code; 0 for network and TLS errors
	Enhanced  string // RFC 3463 enhanced status code such as "5.1.1", when given
	Reason    string // the server's reply ("550 5.1.1 no such user") or the network error
	Err       error  // the underlying error
}

func (e *SendError) Error() string {
	return fmt.Sprintf("mailer: smtp %s failed: %s", e.Stage, e.Reason)
}

func (e *SendError) Unwrap() error { return e.Err }

// Bounce reports whether the recipient was rejected for good: a permanent failure
// at RCPT or DATA.
func (e *SendError) Bounce() bool {
	return e.Permanent && (e.Stage == StageRcpt || e.Stage == StageData)
}

// Encryption is how a connection is secured.
type Encryption string

// Encryption modes. None, STARTTLS and TLS are what users choose for their SMTP
// servers; Opportunistic is for the operator relay's smtp:// URL.
const (
	// EncryptionNone sends everything in plain text, AUTH included: go-mail's SMTP
	// client refuses PLAIN and LOGIN without TLS (except to localhost), so the
	// sender allows unencrypted AUTH deliberately and only in this mode, which
	// the user picked explicitly.
	EncryptionNone Encryption = "none"
	// EncryptionSTARTTLS requires STARTTLS after the greeting.
	EncryptionSTARTTLS Encryption = "starttls"
	// EncryptionTLS speaks TLS from the first byte (port 465).
	EncryptionTLS Encryption = "tls"
	// EncryptionOpportunistic uses STARTTLS when the server offers it and plain
	// text otherwise; AUTH then still refuses to send a password unencrypted to
	// anything but localhost.
	EncryptionOpportunistic Encryption = "opportunistic"
)

// Defaults of ServerConfig.
const (
	DefaultTimeout = 30 * time.Second
	defaultHELO    = "localhost"
)

// ServerConfig is everything needed to connect to one SMTP server. It holds the
// plain password: never log it (its LogValue and String leave the password out).
type ServerConfig struct {
	Host       string
	Port       int
	Username   string // empty: no AUTH
	Password   string
	Encryption Encryption
	// RatePerSecond caps messages per second over all connections of this
	// configuration in this process (Pool) or of one SMTPSender; 0 = unlimited.
	RatePerSecond int
	// TLSConfig is the base TLS configuration, cloned for each connection with
	// ServerName set to Host. Nil: the system's root certificates. Tests put the
	// test server's certificate into RootCAs here.
	TLSConfig *tls.Config
	// HELO is the name sent with EHLO; empty: "localhost". Use the service's
	// public host name (HELOName).
	HELO string
	// Timeout bounds the connection setup and each message's transaction;
	// zero: DefaultTimeout.
	Timeout time.Duration
	// PublicOnly refuses to connect to an address that is not public
	// (loopback, private, link-local …, webhook.PublicAddr). It is checked on
	// the address actually dialled, so a host name that resolves to a public
	// address when saved and to an internal one when sending (DNS rebinding)
	// still cannot reach the operator's network.
	PublicOnly bool
}

// Addr is host:port.
func (c ServerConfig) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// String describes the configuration without the password.
func (c ServerConfig) String() string {
	return fmt.Sprintf("smtp %s (%s, user %q, password set: %t)", c.Addr(), c.Encryption, c.Username, c.Password != "")
}

// LogValue keeps the password out of structured logs.
func (c ServerConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("addr", c.Addr()), slog.String("encryption", string(c.Encryption)),
		slog.String("username", c.Username), slog.Bool("has_password", c.Password != ""))
}

func (c *ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *ServerConfig) tlsConfig() *tls.Config {
	var tc *tls.Config
	if c.TLSConfig != nil {
		tc = c.TLSConfig.Clone()
	} else {
		tc = &tls.Config{}
	}
	tc.ServerName = c.Host
	if tc.MinVersion == 0 {
		tc.MinVersion = tls.VersionTLS12
	}
	return tc
}

// key identifies the configuration in a Pool: connections are shared only between
// identical configurations, so a changed password or host never reuses an old one.
func (c *ServerConfig) key() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q|%d|%q|%q|%q|%d|%q|%d|%p|%t", c.Host, c.Port, c.Username, c.Password, c.Encryption,
		c.RatePerSecond, c.HELO, c.Timeout, c.TLSConfig, c.PublicOnly)
	return hex.EncodeToString(h.Sum(nil))
}

// HELOName derives the EHLO name from the public base URL: its host when that is a
// domain name, an address literal for an IP, "localhost" otherwise.
func HELOName(baseURL string) string {
	host := baseURL
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	host, _, _ = strings.Cut(host, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	switch {
	case host == "":
		return defaultHELO
	case net.ParseIP(host) != nil:
		if strings.Contains(host, ":") {
			return "[IPv6:" + host + "]"
		}
		return "[" + host + "]"
	case strings.Contains(host, "."):
		return host
	}
	return defaultHELO
}

// dialPublicOnly is the dialer's check of ServerConfig.PublicOnly, run for
// every address the dialer tries, after name resolution.
func dialPublicOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unexpected dial address %q: %w", address, err)
	}
	if !webhook.PublicAddr(ap.Addr()) {
		return &webhook.BlockedAddressError{Addr: ap.Addr()}
	}
	return nil
}

// Errors of the connection setup that are not server replies.
var (
	errNoStartTLS = errors.New("server does not offer STARTTLS")
	errNoAuth     = errors.New("server does not offer AUTH")
	errNoAuthMech = errors.New("server offers neither AUTH PLAIN nor AUTH LOGIN")
)

// conn is one open SMTP session.
type conn struct {
	client *smtp.Client
	raw    net.Conn // the TCP connection under any TLS, for deadlines
	// What the server offered after EHLO (after STARTTLS, if any).
	pipelining bool // RFC 2920: commands may be sent without waiting for replies
	chunking   bool // RFC 3030: BDAT instead of DATA
	smtputf8   bool // RFC 6531: non-ASCII addresses
}

// pastDeadline makes blocked reads and writes return at once.
var pastDeadline = time.Unix(1, 0)

// dial opens a session: connect, optional TLS, EHLO, STARTTLS, AUTH. Errors are
// *SendError at StageConnect, StageTLS or StageAuth.
func dial(ctx context.Context, cfg *ServerConfig) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	var d net.Dialer
	if cfg.PublicOnly {
		d.Control = dialPublicOnly
	}
	raw, err := d.DialContext(ctx, "tcp", cfg.Addr())
	if err != nil {
		return nil, newSendError(StageConnect, err)
	}
	fail := func(stage Stage, err error) (*conn, error) {
		_ = raw.Close()
		if ctx.Err() != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, newSendError(stage, err)
	}
	// The SMTP client takes no context: ending ctx expires the deadline instead.
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(pastDeadline) })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(deadline)
	}
	var nc net.Conn = raw
	if cfg.Encryption == EncryptionTLS {
		tc := tls.Client(raw, cfg.tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(StageTLS, err)
		}
		nc = tc
	}
	client, err := smtp.NewClient(nc, cfg.Host)
	if err != nil {
		return fail(StageConnect, err)
	}
	helo := cfg.HELO
	if helo == "" {
		helo = defaultHELO
	}
	if err := client.Hello(helo); err != nil {
		return fail(StageConnect, err)
	}
	if cfg.Encryption == EncryptionSTARTTLS || cfg.Encryption == EncryptionOpportunistic {
		offered, _ := client.Extension("STARTTLS")
		switch {
		case offered:
			if err := client.StartTLS(cfg.tlsConfig()); err != nil {
				return fail(StageTLS, err)
			}
		case cfg.Encryption == EncryptionSTARTTLS:
			return fail(StageTLS, errNoStartTLS)
		}
	}
	if cfg.Username != "" {
		auth, err := chooseAuth(client, cfg)
		if err != nil {
			return fail(StageAuth, err)
		}
		if err := client.Auth(auth); err != nil {
			return fail(StageAuth, err)
		}
	}
	c := &conn{client: client, raw: raw}
	c.pipelining, _ = client.Extension("PIPELINING")
	c.chunking, _ = client.Extension("CHUNKING")
	c.smtputf8, _ = client.Extension("SMTPUTF8")
	return c, nil
}

// chooseAuth picks PLAIN, else LOGIN, among the mechanisms the server offers.
// Unencrypted AUTH is allowed only with EncryptionNone (see there).
func chooseAuth(c *smtp.Client, cfg *ServerConfig) (smtp.Auth, error) {
	ok, params := c.Extension("AUTH")
	if !ok {
		return nil, errNoAuth
	}
	mechs := strings.Fields(strings.ToUpper(params))
	allowPlain := cfg.Encryption == EncryptionNone
	switch {
	case slices.Contains(mechs, "PLAIN"):
		return smtp.PlainAuth("", cfg.Username, cfg.Password, cfg.Host, allowPlain), nil
	case slices.Contains(mechs, "LOGIN"):
		return smtp.LoginAuth(cfg.Username, cfg.Password, cfg.Host, allowPlain), nil
	}
	return nil, errNoAuthMech
}

var enhancedCode = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}\b`)

// newSendError classifies err at stage: a server reply keeps its code, and a 5xx
// reply to MAIL, RCPT or DATA is permanent; everything else is transient.
func newSendError(stage Stage, err error) *SendError {
	se := &SendError{Stage: stage, Err: err}
	var tp *textproto.Error
	if errors.As(err, &tp) {
		msg := strings.Join(strings.Fields(tp.Msg), " ")
		se.Code = tp.Code
		se.Enhanced = enhancedCode.FindString(msg)
		se.Reason = strconv.Itoa(tp.Code) + " " + msg
		se.Permanent = tp.Code >= 500 && (stage == StageMail || stage == StageRcpt || stage == StageData)
		return se
	}
	se.Reason = strings.Join(strings.Fields(err.Error()), " ")
	return se
}

// brokenConn reports whether the connection must not be used again: anything but
// an ordinary server reply, and 421 (the server is closing the channel).
func (e *SendError) brokenConn() bool { return e.Code == 0 || e.Code == 421 }

// SMTPSender sends messages over one SMTP connection, opened on the first Send and
// reopened after the connection broke. It is safe for concurrent use, but sends
// are serialised: use one SMTPSender per worker to send in parallel.
type SMTPSender struct {
	cfg     ServerConfig
	limiter *limiter

	mu       sync.Mutex
	conn     *conn
	lastUsed time.Time
	dials    int
	wire     wireBuffers
}

// NewSMTPSender returns a Sender for cfg; it connects on the first Send.
func NewSMTPSender(cfg ServerConfig) *SMTPSender {
	return &SMTPSender{cfg: cfg, limiter: newLimiter(cfg.RatePerSecond)}
}

// Dials is the number of connection attempts the sender has made so far.
func (s *SMTPSender) Dials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials
}

// Send delivers m over the open connection, connecting first if needed. When a
// reused connection turns out to be dead before the message content was sent
// (the server closed it while idle), Send reconnects and tries once more: the
// server had not accepted anything, so nothing is sent twice.
func (s *SMTPSender) Send(ctx context.Context, m *Message) error {
	if err := s.limiter.wait(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.wire.render(m); err != nil {
		return err
	}
	defer s.wire.trim()
	from, to := m.envelope()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.conn != nil && s.conn.closedByPeer() {
			// The server closed the idle connection (or announced it would):
			// nothing of this message was sent yet.
			s.dropConn()
		}
		reused := s.conn != nil
		if !reused {
			c, err := dial(ctx, &s.cfg)
			s.dials++
			if err != nil {
				return err
			}
			s.conn = c
		}
		err, contentSent := s.transact(ctx, from, to)
		s.lastUsed = time.Now()
		if err == nil {
			return nil
		}
		if err.brokenConn() {
			s.dropConn()
			if reused && !contentSent && attempt == 0 && ctx.Err() == nil {
				continue
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return err
	}
}

// transact runs one mail transaction of the rendered message (see smtpwire.go).
// contentSent is true once the server may have the message (the DATA command was
// accepted, or the BDAT chunk went out after MAIL and RCPT were not refused): a
// retry could deliver it twice.
func (s *SMTPSender) transact(ctx context.Context, from, to string) (err *SendError, contentSent bool) {
	c := s.conn
	if e := c.raw.SetDeadline(time.Now().Add(s.cfg.timeout())); e != nil {
		return newSendError(StageMail, e), false
	}
	stop := context.AfterFunc(ctx, func() { _ = c.raw.SetDeadline(pastDeadline) })
	defer stop()
	se, contentSent, next := s.wire.transact(c, from, to)
	switch next {
	case afterReset:
		se = s.reset(se)
	case afterDrop:
		s.dropConn()
	}
	return se, contentSent
}

// reset aborts the transaction after a rejected command, so that the connection
// can carry the next message; a failing RSET marks the connection broken.
func (s *SMTPSender) reset(se *SendError) *SendError {
	if se.brokenConn() {
		return se
	}
	if err := s.conn.client.Reset(); err != nil {
		s.dropConn()
	}
	return se
}

// dropConn closes the connection without QUIT.
func (s *SMTPSender) dropConn() {
	if s.conn != nil {
		_ = s.conn.raw.Close()
		s.conn = nil
	}
}

// idleSince reports when the sender was last used and whether a connection is open.
func (s *SMTPSender) idleSince() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUsed, s.conn != nil
}

// Close ends the session politely (QUIT, bounded by a short deadline) and closes
// the connection.
func (s *SMTPSender) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	c := s.conn
	s.conn = nil
	_ = c.raw.SetDeadline(time.Now().Add(5 * time.Second))
	err := c.client.Quit()
	_ = c.raw.Close()
	if err != nil {
		return fmt.Errorf("mailer: quit: %w", err)
	}
	return nil
}

// Check connects to the server, does TLS and AUTH as configured, and quits: the
// connection test. The error is a *SendError at StageConnect, StageTLS or
// StageAuth (see Diagnose), or the context's error.
func Check(ctx context.Context, cfg ServerConfig) error {
	c, err := dial(ctx, &cfg)
	if err != nil {
		return err
	}
	_ = c.raw.SetDeadline(time.Now().Add(5 * time.Second))
	_ = c.client.Quit()
	_ = c.raw.Close()
	return nil
}

// limiter spaces events evenly: at most n per second, without bursts. A nil
// limiter does not limit.
type limiter struct {
	interval time.Duration
	mu       sync.Mutex
	next     time.Time
}

func newLimiter(perSecond int) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{interval: time.Second / time.Duration(perSecond)}
}

// wait blocks until the caller may send, or ctx ends.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.interval)
	l.mu.Unlock()
	d := at.Sub(now)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PoolOptions tune a Pool.
type PoolOptions struct {
	// MaxIdlePerServer bounds the idle connections kept per server configuration;
	// zero: 4.
	MaxIdlePerServer int
	// IdleTimeout closes connections unused for this long (servers drop idle
	// clients after a few minutes anyway); zero: one minute.
	IdleTimeout time.Duration
}

// Pool hands out Senders per server configuration and keeps their connections open
// between uses: Get returns an idle connection of the same configuration when there
// is one, and the Sender's Close puts it back. Senders of one configuration share
// one rate limiter. Run closes idle connections; Close closes all of them.
type Pool struct {
	opts PoolOptions

	mu       sync.Mutex
	idle     map[string][]*SMTPSender // most recently returned last
	limiters map[string]*limiter
	closed   bool
}

// NewPool returns an empty pool.
func NewPool(opts PoolOptions) *Pool {
	if opts.MaxIdlePerServer <= 0 {
		opts.MaxIdlePerServer = 4
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = time.Minute
	}
	return &Pool{opts: opts, idle: map[string][]*SMTPSender{}, limiters: map[string]*limiter{}}
}

// Get returns a Sender for cfg: a pooled idle connection of the same configuration,
// or a new one that connects on its first Send. Close it when done.
func (p *Pool) Get(cfg ServerConfig) Sender {
	key := cfg.key()
	p.mu.Lock()
	defer p.mu.Unlock()
	if list := p.idle[key]; len(list) > 0 {
		s := list[len(list)-1]
		p.idle[key] = list[:len(list)-1]
		return &pooledSender{pool: p, key: key, s: s}
	}
	l, ok := p.limiters[key]
	if !ok {
		l = newLimiter(cfg.RatePerSecond)
		p.limiters[key] = l
	}
	s := NewSMTPSender(cfg)
	s.limiter = l
	return &pooledSender{pool: p, key: key, s: s}
}

// Idle is the number of idle connections in the pool.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, list := range p.idle {
		n += len(list)
	}
	return n
}

// put takes a sender back: kept when its connection is open and there is room,
// closed otherwise.
func (p *Pool) put(key string, s *SMTPSender) error {
	if _, open := s.idleSince(); !open {
		return nil
	}
	p.mu.Lock()
	if !p.closed && len(p.idle[key]) < p.opts.MaxIdlePerServer {
		p.idle[key] = append(p.idle[key], s)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	return s.Close()
}

// Run closes connections idle for longer than IdleTimeout, every few seconds,
// until ctx ends; then it closes the pool.
func (p *Pool) Run(ctx context.Context) error {
	t := time.NewTicker(min(p.opts.IdleTimeout/4, 15*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return p.Close()
		case now := <-t.C:
			p.closeIdle(now.Add(-p.opts.IdleTimeout))
		}
	}
}

// closeIdle closes the idle connections last used before cutoff.
func (p *Pool) closeIdle(cutoff time.Time) {
	var stale []*SMTPSender
	p.mu.Lock()
	for key, list := range p.idle {
		kept := list[:0]
		for _, s := range list {
			if last, open := s.idleSince(); open && last.After(cutoff) {
				kept = append(kept, s)
			} else {
				stale = append(stale, s)
			}
		}
		if len(kept) == 0 {
			delete(p.idle, key)
		} else {
			p.idle[key] = kept
		}
	}
	p.mu.Unlock()
	for _, s := range stale {
		_ = s.Close()
	}
}

// Close closes every idle connection; Senders in use close theirs when closed.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = map[string][]*SMTPSender{}
	p.mu.Unlock()
	var errs []error
	for _, list := range idle {
		for _, s := range list {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// ErrSenderClosed is returned by Send on a pooled Sender after its Close.
var ErrSenderClosed = errors.New("mailer: sender is closed")

// pooledSender is a Sender on loan from a Pool.
type pooledSender struct {
	pool   *Pool
	key    string
	s      *SMTPSender
	closed atomic.Bool
}

func (ps *pooledSender) Send(ctx context.Context, m *Message) error {
	if ps.closed.Load() {
		return ErrSenderClosed // the connection may already serve another worker
	}
	return ps.s.Send(ctx, m)
}

// Close returns the connection to the pool; further calls do nothing.
func (ps *pooledSender) Close() error {
	if ps.closed.Swap(true) {
		return nil
	}
	return ps.pool.put(ps.key, ps.s)
}

// Relay is the operator relay, RUNDBRIEF_SMTP_URL: used by accounts without an SMTP
// server of their own and for system mail.
type Relay struct {
	Server ServerConfig
	From   Address // the sender of mail through the relay
}

// ParseRelayURL reads RUNDBRIEF_SMTP_URL:
//
//	smtp://user:pass@host:port   STARTTLS when the server offers it (port 587 by default)
//	smtps://user:pass@host:port  implicit TLS (port 465 by default)
//
// User and password are optional and URL-encoded. Optional query parameters:
// from (the sender address; default: the user name when it is an address, else
// defaultFrom), from_name, rate_per_second, and encryption (none or starttls, to
// override smtp://'s opportunistic STARTTLS).
func ParseRelayURL(raw string, defaultFrom Address) (Relay, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Relay{}, errors.New("mailer: RUNDBRIEF_SMTP_URL is not a URL")
	}
	var r Relay
	switch u.Scheme {
	case "smtp":
		r.Server.Encryption, r.Server.Port = EncryptionOpportunistic, 587
	case "smtps":
		r.Server.Encryption, r.Server.Port = EncryptionTLS, 465
	default:
		return Relay{}, errors.New("mailer: RUNDBRIEF_SMTP_URL must start with smtp:// or smtps://")
	}
	r.Server.Host = u.Hostname()
	if r.Server.Host == "" {
		return Relay{}, errors.New("mailer: RUNDBRIEF_SMTP_URL lacks the host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Relay{}, errors.New("mailer: RUNDBRIEF_SMTP_URL has an invalid port")
		}
		r.Server.Port = n
	}
	if u.User != nil {
		r.Server.Username = u.User.Username()
		r.Server.Password, _ = u.User.Password()
	}
	q := u.Query()
	switch enc := q.Get("encryption"); {
	case enc == "":
	case u.Scheme == "smtp" && (enc == string(EncryptionNone) || enc == string(EncryptionSTARTTLS)):
		r.Server.Encryption = Encryption(enc)
	default:
		return Relay{}, fmt.Errorf("mailer: RUNDBRIEF_SMTP_URL: encryption=%q is not allowed (smtp:// takes none or starttls)", enc)
	}
	if s := q.Get("rate_per_second"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return Relay{}, errors.New("mailer: RUNDBRIEF_SMTP_URL: rate_per_second must be a whole number ≥ 0")
		}
		r.Server.RatePerSecond = n
	}
	r.From = Address{Name: q.Get("from_name"), Email: q.Get("from")}
	if r.From.Email == "" {
		if bareAddress(r.Server.Username) {
			r.From.Email = r.Server.Username
		} else {
			r.From.Email = defaultFrom.Email
		}
	}
	if r.From.Name == "" {
		r.From.Name = defaultFrom.Name
	}
	if !bareAddress(r.From.Email) {
		return Relay{}, fmt.Errorf("mailer: RUNDBRIEF_SMTP_URL: from=%q is not an email address", r.From.Email)
	}
	return r, nil
}

// DefaultFrom is the sender of system mail when nothing else names one:
// "Rundbrief <noreply@host>" with the host of the public base URL.
func DefaultFrom(baseURL string) Address {
	host := strings.Trim(HELOName(baseURL), "[]")
	if host == defaultHELO || strings.Contains(host, ":") || net.ParseIP(host) != nil {
		host = "localhost"
	}
	return Address{Name: "Rundbrief", Email: "noreply@" + host}
}

// RouteKind says where an account's mail goes.
type RouteKind string

// Route kinds, in the order Open tries them.
const (
	RouteServer    RouteKind = "smtp_server" // one of the account's own SMTP servers
	RouteRelay     RouteKind = "relay"       // the operator relay (RUNDBRIEF_SMTP_URL)
	RouteDevOutbox RouteKind = "dev_outbox"  // captured in dev_outbox, not sent
)

// Route describes the Sender Open returned.
type Route struct {
	Kind     RouteKind
	ServerID int64 // RouteServer only
	// From is the route's sender: the server's from_email and from_name, or the
	// relay's. Messages normally use it; a request's from_name may override the
	// name.
	From Address
	// RatePerSecond is the route's limit (0 = unlimited). The Sender already
	// keeps to it within this process; several processes each keep to it alone.
	RatePerSecond int
}

// TransportOptions configure Transports.
type TransportOptions struct {
	Relay       *Relay      // nil: no operator relay, i.e. development (dev outbox)
	DefaultFrom Address     // the sender on the dev outbox route
	HELO        string      // EHLO name for every connection (HELOName)
	TLSConfig   *tls.Config // base TLS configuration; nil: system roots (tests inject RootCAs)
	Timeout     time.Duration
	Pool        PoolOptions
	// PublicServersOnly sets ServerConfig.PublicOnly for the accounts' own
	// servers (not the operator relay): on unless RUNDBRIEF_SMTP_ALLOW_PRIVATE.
	PublicServersOnly bool
}

// Transports opens Senders for accounts: the account's own SMTP server, else the
// operator relay, else the development outbox. It owns the connection Pool; run
// Run as a worker.
type Transports struct {
	db   *store.DB
	box  *secret.Box
	opts TransportOptions
	pool *Pool
}

// NewTransports returns the account-aware sender factory. box opens the stored
// SMTP passwords.
func NewTransports(db *store.DB, box *secret.Box, opts TransportOptions) *Transports {
	if opts.Relay != nil {
		r := *opts.Relay
		r.Server = withDefaults(r.Server, opts)
		opts.Relay = &r
	}
	return &Transports{db: db, box: box, opts: opts, pool: NewPool(opts.Pool)}
}

func withDefaults(c ServerConfig, o TransportOptions) ServerConfig {
	if c.TLSConfig == nil {
		c.TLSConfig = o.TLSConfig
	}
	if c.HELO == "" {
		c.HELO = o.HELO
	}
	if c.Timeout == 0 {
		c.Timeout = o.Timeout
	}
	return c
}

// DevOutboxEnabled reports whether mail without an own SMTP server is captured
// (no RUNDBRIEF_SMTP_URL): the development mode, in which GET /v1/dev/outbox exists.
func (t *Transports) DevOutboxEnabled() bool { return t.opts.Relay == nil }

// Run closes idle pooled connections until ctx ends, then all of them.
func (t *Transports) Run(ctx context.Context) error { return t.pool.Run(ctx) }

// Open returns a Sender for the account's mail and where it goes. serverID picks
// one of the account's servers (store.ErrNotFound when it has no such server); 0
// takes the account's default server, else the operator relay, else the
// development outbox. Close the Sender when done: that returns the connection to
// the pool.
func (t *Transports) Open(ctx context.Context, accountID, serverID int64) (Sender, Route, error) {
	var (
		srv store.SMTPServer
		err error
	)
	if serverID != 0 {
		srv, err = t.db.SMTPServer(ctx, accountID, serverID)
	} else {
		srv, err = t.db.DefaultSMTPServer(ctx, accountID)
		if errors.Is(err, store.ErrNotFound) {
			return t.fallback(accountID)
		}
	}
	if err != nil {
		return nil, Route{}, err
	}
	cfg, err := t.serverConfig(ctx, srv)
	if err != nil {
		return nil, Route{}, err
	}
	return t.pool.Get(cfg), Route{Kind: RouteServer, ServerID: srv.ID, From: Address{Name: srv.FromName, Email: srv.FromEmail},
		RatePerSecond: srv.RatePerSecond}, nil
}

// OpenSystem returns the Sender for system mail of an account (double opt-in,
// notifications): the operator relay, else the development outbox.
func (t *Transports) OpenSystem(accountID int64) (Sender, Route, error) {
	return t.fallback(accountID)
}

func (t *Transports) fallback(accountID int64) (Sender, Route, error) {
	if r := t.opts.Relay; r != nil {
		return t.pool.Get(r.Server), Route{Kind: RouteRelay, From: r.From, RatePerSecond: r.Server.RatePerSecond}, nil
	}
	return NewDevOutbox(t.db, accountID), Route{Kind: RouteDevOutbox, From: t.opts.DefaultFrom}, nil
}

// serverConfig turns a stored server into a connection configuration, opening its
// password.
func (t *Transports) serverConfig(ctx context.Context, srv store.SMTPServer) (ServerConfig, error) {
	password := ""
	if srv.HasPassword {
		var err error
		if password, err = t.db.SMTPServerPassword(ctx, t.box, srv.AccountID, srv.ID); err != nil {
			return ServerConfig{}, err
		}
	}
	return withDefaults(ServerConfig{
		Host: srv.Host, Port: srv.Port, Username: srv.Username, Password: password,
		Encryption: Encryption(srv.Encryption), RatePerSecond: srv.RatePerSecond, PublicOnly: t.opts.PublicServersOnly,
	}, t.opts), nil
}

// testTimeout bounds a connection test, which a person waits for.
const testTimeout = 15 * time.Second

// TestServer runs the connection test of one of the account's servers (connect,
// TLS, AUTH, QUIT), records the outcome on the server and returns it. The error is
// for the lookup (store.ErrNotFound) and the database, not for the test's outcome.
func (t *Transports) TestServer(ctx context.Context, accountID, serverID int64) (TestResult, error) {
	srv, err := t.db.SMTPServer(ctx, accountID, serverID)
	if err != nil {
		return TestResult{}, err
	}
	cfg, err := t.serverConfig(ctx, srv)
	if err != nil {
		return TestResult{}, err
	}
	if cfg.Timeout == 0 || cfg.Timeout > testTimeout {
		cfg.Timeout = testTimeout
	}
	start := time.Now()
	err = Check(ctx, cfg)
	if ctx.Err() != nil {
		return TestResult{}, ctx.Err()
	}
	res := Diagnose(cfg, err)
	res.Duration = time.Since(start)
	res.TestedAt = start
	if err := t.db.RecordSMTPServerTest(ctx, accountID, serverID, start, res.Code); err != nil {
		return TestResult{}, err
	}
	return res, nil
}

// TestResult is the outcome of a connection test.
type TestResult struct {
	OK       bool
	Code     string // TestOK, TestConnectFailed, TestTLSFailed or TestAuthFailed
	Message  string // German, for the user
	Detail   string // the server's reply or the network error, for whoever runs the server
	Duration time.Duration
	TestedAt time.Time
}

// Codes of a connection test.
const (
	TestOK            = "ok"
	TestConnectFailed = "connect_failed"
	TestTLSFailed     = "tls_failed"
	TestAuthFailed    = "auth_failed"
)

// Diagnose explains the result of Check for cfg in German.
func Diagnose(cfg ServerConfig, err error) TestResult {
	if err == nil {
		msg := "Verbindung, Verschlüsselung und Anmeldung erfolgreich."
		switch {
		case cfg.Encryption == EncryptionNone && cfg.Username == "":
			msg = "Verbindung erfolgreich (unverschlüsselt, ohne Anmeldung)."
		case cfg.Encryption == EncryptionNone:
			msg = "Verbindung und Anmeldung erfolgreich (unverschlüsselt)."
		case cfg.Username == "":
			msg = "Verbindung und Verschlüsselung erfolgreich (ohne Anmeldung)."
		}
		return TestResult{OK: true, Code: TestOK, Message: msg}
	}
	var se *SendError
	if !errors.As(err, &se) {
		return TestResult{Code: TestConnectFailed, Message: "Der Verbindungstest ist fehlgeschlagen.", Detail: err.Error()}
	}
	res := TestResult{Detail: se.Reason}
	addr := cfg.Addr()
	switch se.Stage {
	case StageTLS:
		res.Code, res.Message = TestTLSFailed, tlsMessage(cfg, se)
	case StageAuth:
		res.Code, res.Message = TestAuthFailed, authMessage(se)
	default:
		res.Code, res.Message = TestConnectFailed, connectMessage(addr, se)
	}
	return res
}

func connectMessage(addr string, se *SendError) string {
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		blocked *webhook.BlockedAddressError
	)
	switch {
	case se.Code != 0:
		return fmt.Sprintf("Der Server %s hat die Verbindung abgelehnt: %s", addr, se.Reason)
	case errors.As(se.Err, &blocked):
		return fmt.Sprintf("Verbindung zu %s nicht erlaubt: %s ist keine öffentliche Adresse (RUNDBRIEF_SMTP_ALLOW_PRIVATE ist aus).", addr, blocked.Addr)
	case errors.Is(se.Err, syscall.ECONNREFUSED):
		return fmt.Sprintf("Verbindung zu %s abgelehnt: Auf diesem Port nimmt kein SMTP-Server Verbindungen an. Host und Port prüfen.", addr)
	case errors.As(se.Err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Sprintf("Der Hostname %s ist unbekannt.", dnsErr.Name)
	case errors.Is(se.Err, context.DeadlineExceeded) || errors.As(se.Err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("Zeitüberschreitung bei der Verbindung zu %s: Der Server antwortet nicht (Firewall, falscher Port oder falsche Verschlüsselung?).", addr)
	case errors.Is(se.Err, io.EOF):
		return fmt.Sprintf("Der Server %s hat die Verbindung ohne Antwort geschlossen. Ist die Verschlüsselung richtig gewählt (Port 465 = tls, 587 = starttls)?", addr)
	}
	return fmt.Sprintf("Keine Verbindung zu %s möglich.", addr)
}

func tlsMessage(cfg ServerConfig, se *SendError) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		notTLS    tls.RecordHeaderError
	)
	switch {
	case errors.Is(se.Err, errNoStartTLS):
		return "Der Server bietet kein STARTTLS an. Verschlüsselung „tls“ (meist Port 465) wählen oder, nur in einem vertrauenswürdigen Netz, „none“."
	case se.Code != 0:
		return "Der Server hat STARTTLS abgelehnt: " + se.Reason
	case errors.As(se.Err, &unknownCA):
		return "Das Zertifikat des Servers ist nicht vertrauenswürdig (unbekannte oder selbst signierte Zertifizierungsstelle)."
	case errors.As(se.Err, &hostErr):
		return fmt.Sprintf("Das Zertifikat des Servers gilt nicht für den Hostnamen %s.", cfg.Host)
	case errors.As(se.Err, &invalid) && invalid.Reason == x509.Expired:
		return "Das Zertifikat des Servers ist abgelaufen oder noch nicht gültig."
	case errors.As(se.Err, &notTLS):
		return "Der Server antwortet nicht mit TLS. Falscher Port oder falsche Verschlüsselung? (Port 465 = tls, 587 = starttls)"
	}
	return "Die TLS-Verschlüsselung ist fehlgeschlagen."
}

func authMessage(se *SendError) string {
	switch {
	case errors.Is(se.Err, errNoAuth):
		return "Der Server bietet keine Anmeldung (AUTH) an. Viele Server erlauben sie erst nach STARTTLS; sonst den Benutzernamen leer lassen."
	case errors.Is(se.Err, errNoAuthMech):
		return "Der Server bietet weder PLAIN noch LOGIN zur Anmeldung an."
	case errors.Is(se.Err, smtp.ErrUnencrypted):
		return "Das Passwort wird nicht unverschlüsselt gesendet: Verschlüsselung „starttls“ oder „tls“ wählen."
	case se.Code == 535 || se.Code == 534 || se.Code == 530:
		return "Anmeldung fehlgeschlagen: Benutzername oder Passwort ist falsch (" + se.Reason + ")."
	case se.Code != 0:
		return "Anmeldung fehlgeschlagen: " + se.Reason
	}
	return "Die Anmeldung ist fehlgeschlagen."
}
