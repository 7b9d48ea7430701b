// Package imaptest runs a real IMAP server (go-imap v2's imapserver over
// imapmemserver) inside a test process, on a port of its own, so that the
// inbox's tests sync, flag and append over the real protocol.
package imaptest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"

	"github.com/rundbrief/rundbrief/mailer/smtptest"
)

// Options configure a Server.
type Options struct {
	Username, Password string // default "inbox@example.com" / "secret"
	// TLS serves implicit TLS with a certificate for 127.0.0.1 (RootCAs trusts it).
	TLS bool
	// Folders are created besides INBOX, e.g. "Sent".
	Folders []string
}

// Server is a running IMAP server.
type Server struct {
	Host     string
	Port     int
	Username string
	Password string
	user     *imapmemserver.User
	srv      *imapserver.Server
	ln       net.Listener
	roots    *x509.CertPool
	conns    atomic.Int64
}

// Start runs a server until the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := New(opts)
	if err != nil {
		tb.Fatalf("imaptest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Close() }

// New runs a server until Close (for a server in a process of its own, e.g.
// a benchmark that measures its client's memory alone).
func New(opts Options) (*Server, error) {
	if opts.Username == "" {
		opts.Username, opts.Password = "inbox@example.com", "secret"
	}
	s := &Server{Username: opts.Username, Password: opts.Password}
	mem := imapmemserver.New()
	s.user = imapmemserver.NewUser(opts.Username, opts.Password)
	mem.AddUser(s.user)
	for _, f := range append([]string{"INBOX"}, opts.Folders...) {
		if err := s.user.Create(f, nil); err != nil {
			return nil, fmt.Errorf("create %s: %w", f, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	s.Host, s.Port = addr.IP.String(), addr.Port
	s.ln = &countingListener{Listener: ln, n: &s.conns}
	if opts.TLS {
		cert, roots, err := smtptest.NewCertificate("127.0.0.1", "localhost")
		if err != nil {
			return nil, err
		}
		s.roots = roots
		s.ln = tls.NewListener(s.ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	s.srv = imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}},
		InsecureAuth: true,
		Logger:       log.New(io.Discard, "", 0),
	})
	go func() { _ = s.srv.Serve(s.ln) }()
	return s, nil
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// Connections is the number of connections accepted so far.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// RootCAs trusts the TLS certificate (Options.TLS).
func (s *Server) RootCAs() *x509.CertPool { return s.roots }

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Append stores a raw message (CRLF lines) in folder.
func (s *Server) Append(tb testing.TB, folder string, raw []byte, flags ...imap.Flag) {
	tb.Helper()
	if err := s.AppendRaw(folder, raw, flags...); err != nil {
		tb.Fatalf("imaptest: append: %v", err)
	}
}

// AppendRaw is Append without a test.
func (s *Server) AppendRaw(folder string, raw []byte, flags ...imap.Flag) error {
	_, err := s.user.Append(folder, literal{bytes.NewReader(raw), int64(len(raw))}, &imap.AppendOptions{Flags: flags, Time: time.Now()})
	return err
}

type literal struct {
	*bytes.Reader
	n int64
}

func (l literal) Size() int64 { return l.n }

// Mail builds a simple text message.
func Mail(from, subject, body string, headers ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: inbox@example.com\r\nSubject: %s\r\nDate: %s\r\n", from, subject, time.Now().Format(time.RFC1123Z))
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	fmt.Fprintf(&b, "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", body)
	return b.Bytes()
}

// client logs in with a plain client (tests read the server's state with it).
func (s *Server) client(tb testing.TB) *imapclient.Client {
	tb.Helper()
	var (
		c   *imapclient.Client
		err error
	)
	if s.roots != nil {
		c, err = imapclient.DialTLS(s.Addr(), &imapclient.Options{TLSConfig: &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1"}})
	} else {
		c, err = imapclient.DialInsecure(s.Addr(), nil)
	}
	if err != nil {
		tb.Fatalf("imaptest: dial: %v", err)
	}
	if err := c.Login(s.Username, s.Password).Wait(); err != nil {
		tb.Fatalf("imaptest: login: %v", err)
	}
	return c
}

// Flags returns the flags of every message in folder by UID.
func (s *Server) Flags(tb testing.TB, folder string) map[imap.UID][]imap.Flag {
	tb.Helper()
	c := s.client(tb)
	defer c.Close()
	mbox, err := c.Select(folder, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		tb.Fatalf("imaptest: select: %v", err)
	}
	out := map[imap.UID][]imap.Flag{}
	if mbox.NumMessages == 0 {
		return out
	}
	var set imap.SeqSet
	set.AddRange(1, 0)
	msgs, err := c.Fetch(set, &imap.FetchOptions{UID: true, Flags: true}).Collect()
	if err != nil {
		tb.Fatalf("imaptest: fetch: %v", err)
	}
	for _, m := range msgs {
		out[m.UID] = m.Flags
	}
	return out
}

// Messages returns the raw messages of folder in UID order.
func (s *Server) Messages(tb testing.TB, folder string) [][]byte {
	tb.Helper()
	c := s.client(tb)
	defer c.Close()
	mbox, err := c.Select(folder, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		tb.Fatalf("imaptest: select: %v", err)
	}
	if mbox.NumMessages == 0 {
		return nil
	}
	var set imap.SeqSet
	set.AddRange(1, 0)
	section := &imap.FetchItemBodySection{Peek: true}
	msgs, err := c.Fetch(set, &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{section}}).Collect()
	if err != nil {
		tb.Fatalf("imaptest: fetch: %v", err)
	}
	var out [][]byte
	for _, m := range msgs {
		out = append(out, m.FindBodySection(section))
	}
	return out
}
