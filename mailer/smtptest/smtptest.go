// Package smtptest runs a real SMTP server (github.com/emersion/go-smtp) on
// 127.0.0.1 for tests: it records every message, and can require AUTH, speak
// STARTTLS or implicit TLS with a certificate made on the spot, reject chosen
// recipients or their content, leave PIPELINING and CHUNKING out of its EHLO
// reply (and notice a client that uses them anyway), count and drop
// connections.
//
// Like Postfix, the server sends the replies to pipelined commands together:
// a reply waits until the server reads again (or closes), which RFC 2920
// allows. go-smtp alone writes every reply line at once, which made the sink
// of the send benchmarks cost more CPU than a real relay's front end.
//
//	srv := smtptest.Start(t, smtptest.Options{TLS: smtptest.STARTTLS, Username: "u", Password: "p"})
//	cfg := mailer.ServerConfig{Host: srv.Host, Port: srv.Port, …, TLSConfig: srv.ClientTLSConfig()}
//	… send …
//	msgs := srv.Messages()
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// TLSMode is how the server offers TLS.
type TLSMode int

// TLS modes.
const (
	NoTLS    TLSMode = iota // plain SMTP; AUTH allowed without TLS
	STARTTLS                // plain connect, STARTTLS offered; AUTH only after it
	Implicit                // TLS from the first byte (SMTPS)
)

// Options configure a test server.
type Options struct {
	TLS TLSMode
	// Username and Password, when Username is set, make AUTH (PLAIN and LOGIN)
	// required before MAIL FROM; wrong credentials get 535.
	Username, Password string
	// Mechanisms are the AUTH mechanisms offered; nil: PLAIN and LOGIN.
	Mechanisms []string
	// Reject maps a recipient address (any case) to the reply code its RCPT TO
	// gets: e.g. 550 (permanent, 5.1.1 no such mailbox), 552 (5.2.2 mailbox
	// full), 554 (5.7.1 policy) or 451 (transient).
	Reject map[string]int
	// Certificate is the server's certificate; nil: NewCertificate for
	// 127.0.0.1 and localhost. Share one between servers to trust them all
	// with one RootCAs pool.
	Certificate *tls.Certificate
	// RejectData maps a recipient address (any case) to the reply code the
	// message gets after its content (DATA or BDAT), e.g. 554 (content refused)
	// or 451.
	RejectData map[string]int
	// NoPipelining and NoChunking take PIPELINING (RFC 2920) and CHUNKING (RFC
	// 3030, BDAT) out of the EHLO reply, and count a client that pipelines
	// commands or sends BDAT anyway (Violations). Only for sessions without
	// TLS: the reply is rewritten on the wire.
	NoPipelining, NoChunking bool
	// Trace records the commands of every session as the server read them
	// (Commands), to see how a client pipelines.
	Trace bool
	// Discard counts messages without keeping their content (benchmarks).
	Discard bool
}

// Message is one message the server accepted.
type Message struct {
	From string   // MAIL FROM address
	To   []string // RCPT TO addresses
	Data []byte   // the content as received (CRLF line ends, dot-unstuffed)
	User string   // the authenticated user, "" without AUTH
	TLS  bool     // whether the session was encrypted
}

// Server is a running test SMTP server on 127.0.0.1.
type Server struct {
	Host string // "127.0.0.1"
	Port int

	opts       Options
	srv        *smtp.Server
	ln         net.Listener
	roots      *x509.CertPool
	done       chan struct{}
	conns      atomic.Int64
	msgs       atomic.Int64
	mu         sync.Mutex
	open       map[*trackedConn]struct{}
	records    []Message
	violations []string
	commands   [][]string
}

// Start runs a server until the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := start(opts)
	if err != nil {
		tb.Fatalf("smtptest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

func start(opts Options) (*Server, error) {
	if (opts.NoPipelining || opts.NoChunking) && opts.TLS != NoTLS {
		return nil, errors.New("NoPipelining and NoChunking need a server without TLS")
	}
	s := &Server{opts: opts, done: make(chan struct{}), open: map[*trackedConn]struct{}{}}
	var tlsConfig *tls.Config
	if opts.TLS != NoTLS {
		cert := opts.Certificate
		if cert == nil {
			c, _, err := NewCertificate("127.0.0.1", "localhost")
			if err != nil {
				return nil, err
			}
			cert = &c
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return nil, err
		}
		s.roots = x509.NewCertPool()
		s.roots.AddCert(leaf)
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := raw.Addr().(*net.TCPAddr)
	s.Host, s.Port = addr.IP.String(), addr.Port
	s.ln = raw
	var ln net.Listener = &trackingListener{Listener: raw, s: s}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &session{s: s, tls: isTLS}, nil
	}))
	s.srv.Domain = "smtptest.local"
	s.srv.ReadTimeout = 30 * time.Second
	s.srv.WriteTimeout = 30 * time.Second
	s.srv.MaxMessageBytes = 25 << 20
	s.srv.ErrorLog = log.New(io.Discard, "", 0)
	switch opts.TLS {
	case NoTLS:
		s.srv.AllowInsecureAuth = true
	case STARTTLS:
		s.srv.TLSConfig = tlsConfig
	case Implicit:
		ln = tls.NewListener(ln, tlsConfig)
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// RootCAs trusts the server's certificate (nil without TLS).
func (s *Server) RootCAs() *x509.CertPool { return s.roots }

// ClientTLSConfig is a client configuration that trusts the server's certificate.
func (s *Server) ClientTLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.roots, MinVersion: tls.VersionTLS12}
}

// Connections is the number of connections accepted so far.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Count is the number of messages accepted so far.
func (s *Server) Count() int { return int(s.msgs.Load()) }

// Messages returns the accepted messages in order (empty with Options.Discard).
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.records...)
}

// Violations describes what clients did that the server had not offered:
// pipelined commands with NoPipelining, BDAT with NoChunking.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// Commands returns, with Options.Trace, the client's commands (MAIL, RCPT,
// DATA, BDAT, RSET, QUIT lines) grouped by the read that brought them: a
// client that pipelines sends several in one group.
func (s *Server) Commands() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// DropConnections closes every open client connection abruptly, as a server that
// restarts or times out idle clients does.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := make([]*trackedConn, 0, len(s.open))
	for c := range s.open {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Conn.Close()
	}
}

// Close stops the server and closes its connections.
func (s *Server) Close() {
	_ = s.srv.Close()
	_ = s.ln.Close() // go-smtp misses a listener Serve has not registered yet
	<-s.done
}

// NewCertificate makes a self-signed ECDSA certificate for hosts (IP addresses or
// DNS names), valid for a day, and a pool that trusts it.
func NewCertificate(hosts ...string) (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "smtptest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

// session is one SMTP session; it implements smtp.AuthSession.
type session struct {
	s    *Server
	tls  bool
	user string
	from string
	to   []string
}

func (se *session) AuthMechanisms() []string {
	if se.s.opts.Username == "" {
		return nil
	}
	if se.s.opts.Mechanisms != nil {
		return se.s.opts.Mechanisms
	}
	return []string{sasl.Plain, sasl.Login}
}

func (se *session) Auth(mech string) (sasl.Server, error) {
	check := func(username, password string) error {
		if se.s.opts.Username == "" || username != se.s.opts.Username || password != se.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		se.user = username
		return nil
	}
	if !slices.Contains(se.AuthMechanisms(), mech) {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, username, password string) error { return check(username, password) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.s.opts.Username != "" && se.user == "" {
		return smtp.ErrAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	for addr, code := range se.s.opts.Reject {
		if strings.EqualFold(addr, to) {
			return rejection(code)
		}
	}
	se.to = append(se.to, to)
	return nil
}

func rejection(code int) *smtp.SMTPError {
	switch code {
	case 552:
		return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{5, 2, 2}, Message: "Mailbox full"}
	case 554:
		return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Rejected by policy"}
	}
	if code >= 500 {
		return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "Mailbox unavailable"}
	}
	return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{4, 2, 0}, Message: "Mailbox busy, try again later"}
}

func (se *session) Data(r io.Reader) error {
	if code := se.rejectData(); code != 0 {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
		if code >= 500 {
			return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Message content rejected"}
		}
		return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again later"}
	}
	var data []byte
	if se.s.opts.Discard {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
	} else {
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(r); err != nil {
			return err
		}
		data = buf.Bytes()
	}
	se.s.msgs.Add(1)
	if !se.s.opts.Discard {
		se.s.mu.Lock()
		se.s.records = append(se.s.records, Message{From: se.from, To: se.to, Data: data, User: se.user, TLS: se.tls})
		se.s.mu.Unlock()
	}
	return nil
}

// rejectData is the RejectData code for the session's recipients, or 0.
func (se *session) rejectData() int {
	for addr, code := range se.s.opts.RejectData {
		for _, to := range se.to {
			if strings.EqualFold(addr, to) {
				return code
			}
		}
	}
	return 0
}

func (se *session) Reset() {
	se.from, se.to = "", nil
}

func (se *session) Logout() error { return nil }

// loginServer is the server side of AUTH LOGIN, which go-sasl lacks.
type loginServer struct {
	step  int
	user  string
	check func(username, password string) error
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step = 1
		if len(response) == 0 {
			return []byte("Username:"), false, nil
		}
		fallthrough // the username came as the initial response
	case 1:
		l.user, l.step = string(response), 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		return nil, true, l.check(l.user, string(response))
	}
	return nil, true, errors.New("smtptest: unexpected LOGIN step")
}

// trackingListener counts accepted connections and remembers the open ones.
type trackingListener struct {
	net.Listener
	s *Server
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.conns.Add(1)
	tc := &trackedConn{Conn: c, s: l.s}
	l.s.mu.Lock()
	l.s.open[tc] = struct{}{}
	l.s.mu.Unlock()
	return tc, nil
}

// trackedConn is a server connection that holds back the server's replies
// until the server reads again or closes (see the package comment), and with
// NoPipelining or NoChunking checks the client's commands.
type trackedConn struct {
	net.Conn
	s       *Server
	mu      sync.Mutex // the server may close a connection while it writes
	pending []byte     // replies not yet sent
	failed  error      // the error of sending them
}

// Write keeps the reply; with NoPipelining or NoChunking it drops the line of
// the EHLO reply that offers the extension (go-smtp writes each line alone,
// and neither is ever the last).
func (c *trackedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil {
		return 0, c.failed
	}
	o := &c.s.opts
	if o.NoPipelining && string(p) == "250-PIPELINING\r\n" || o.NoChunking && string(p) == "250-CHUNKING\r\n" {
		return len(p), nil
	}
	c.pending = append(c.pending, p...)
	return len(p), nil
}

// flush sends the replies held back.
func (c *trackedConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) > 0 && c.failed == nil {
		_, c.failed = c.Conn.Write(c.pending)
		c.pending = c.pending[:0]
	}
	return c.failed
}

func (c *trackedConn) Read(p []byte) (int, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if o := &c.s.opts; n > 0 && (o.NoPipelining || o.NoChunking || o.Trace) {
		c.check(p[:n])
	}
	return n, err
}

// check looks at what the client sent in one piece: a client that waits for
// each reply never sends two commands at once, and one that was not offered
// CHUNKING never sends BDAT.
func (c *trackedConn) check(chunk []byte) {
	commands := 0
	var found []string
	for line := range strings.SplitSeq(string(chunk), "\r\n") {
		for _, verb := range []string{"MAIL FROM:", "RCPT TO:", "DATA", "BDAT ", "RSET", "QUIT"} {
			if strings.HasPrefix(strings.ToUpper(line), verb) && (verb != "DATA" || len(line) == 4) {
				commands++
				found = append(found, line)
				if verb == "BDAT " && c.s.opts.NoChunking {
					c.s.violate("BDAT without CHUNKING: " + line)
				}
			}
		}
	}
	if commands > 1 && c.s.opts.NoPipelining {
		c.s.violate("pipelined without PIPELINING: " + strings.Join(found, " | "))
	}
	if c.s.opts.Trace && commands > 0 {
		c.s.mu.Lock()
		c.s.commands = append(c.s.commands, found)
		c.s.mu.Unlock()
	}
}

func (s *Server) violate(what string) {
	s.mu.Lock()
	s.violations = append(s.violations, what)
	s.mu.Unlock()
}

func (c *trackedConn) Close() error {
	_ = c.flush()
	c.s.mu.Lock()
	delete(c.s.open, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
