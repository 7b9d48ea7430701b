package mailer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
)

func configFor(srv *smtptest.Server, enc mailer.Encryption, user, pass string) mailer.ServerConfig {
	return mailer.ServerConfig{
		Host: srv.Host, Port: srv.Port, Username: user, Password: pass, Encryption: enc,
		TLSConfig: srv.ClientTLSConfig(), HELO: "rundbrief.test", Timeout: 10 * time.Second,
	}
}

func smallMessage(i int, to string) *mailer.Message {
	return &mailer.Message{
		From:    mailer.Address{Name: "Rundbrief Test", Email: "news@rundbrief.test"},
		To:      mailer.Address{Email: to},
		Subject: fmt.Sprintf("Nachricht %d", i),
		HTML:    fmt.Sprintf("<p>Hallo Nummer %d</p>", i),
	}
}

func TestSendReusesOneConnection(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
	defer s.Close()
	ctx := context.Background()
	ids := map[string]bool{}
	for i := range 100 {
		m := smallMessage(i, fmt.Sprintf("user%d@example.org", i))
		if err := s.Send(ctx, m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		ids[m.MessageID] = true
	}
	if got := srv.Connections(); got != 1 {
		t.Fatalf("100 messages used %d connections, want 1", got)
	}
	msgs := srv.Messages()
	if len(msgs) != 100 || len(ids) != 100 {
		t.Fatalf("server got %d messages with %d distinct ids, want 100", len(msgs), len(ids))
	}
	for i, m := range msgs {
		if m.From != "news@rundbrief.test" || len(m.To) != 1 || m.To[0] != fmt.Sprintf("user%d@example.org", i) {
			t.Fatalf("message %d: envelope %s → %v", i, m.From, m.To)
		}
		p := parse(t, m.Data)
		if got := decodeHeader(t, p.header.Get("Subject")); got != fmt.Sprintf("Nachricht %d", i) {
			t.Fatalf("message %d: subject %q", i, got)
		}
	}
}

func TestSendReconnectsAfterServerDrop(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
	defer s.Close()
	ctx := context.Background()
	if err := s.Send(ctx, smallMessage(1, "a@example.org")); err != nil {
		t.Fatal(err)
	}
	srv.DropConnections()
	for i := 2; i <= 3; i++ {
		if err := s.Send(ctx, smallMessage(i, "a@example.org")); err != nil {
			t.Fatalf("send after the server dropped the connection: %v", err)
		}
	}
	if srv.Count() != 3 || srv.Connections() != 2 || s.Dials() != 2 {
		t.Fatalf("messages %d, connections %d, dials %d; want 3, 2, 2", srv.Count(), srv.Connections(), s.Dials())
	}
}

func TestSendClassifiesRejections(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{Reject: map[string]int{"gone@example.org": 550, "busy@example.org": 451}})
	s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
	defer s.Close()
	ctx := context.Background()
	cases := []struct {
		to        string
		permanent bool
		code      int
		enhanced  string
	}{
		{"gone@example.org", true, 550, "5.1.1"},
		{"busy@example.org", false, 451, "4.2.0"},
	}
	for _, c := range cases {
		err := s.Send(ctx, smallMessage(0, c.to))
		var se *mailer.SendError
		if !errors.As(err, &se) {
			t.Fatalf("%s: error %v, want *SendError", c.to, err)
		}
		if se.Permanent != c.permanent || se.Code != c.code || se.Stage != mailer.StageRcpt || se.Enhanced != c.enhanced || se.Bounce() != c.permanent {
			t.Errorf("%s: %+v, want permanent=%t code=%d stage=rcpt enhanced=%s", c.to, se, c.permanent, c.code, c.enhanced)
		}
		if !strings.Contains(se.Reason, fmt.Sprint(c.code)) {
			t.Errorf("%s: reason %q lacks the server's reply", c.to, se.Reason)
		}
	}
	// A rejected recipient does not cost the connection.
	if err := s.Send(ctx, smallMessage(1, "ok@example.org")); err != nil {
		t.Fatal(err)
	}
	if srv.Connections() != 1 || srv.Count() != 1 {
		t.Fatalf("connections %d, messages %d; want 1, 1", srv.Connections(), srv.Count())
	}
}

func TestSendTLSAndAuth(t *testing.T) {
	cases := []struct {
		name  string
		opts  smtptest.Options
		enc   mailer.Encryption
		isTLS bool
	}{
		{"starttls plain", smtptest.Options{TLS: smtptest.STARTTLS, Mechanisms: []string{"PLAIN"}}, mailer.EncryptionSTARTTLS, true},
		{"starttls login", smtptest.Options{TLS: smtptest.STARTTLS, Mechanisms: []string{"LOGIN"}}, mailer.EncryptionSTARTTLS, true},
		{"implicit tls", smtptest.Options{TLS: smtptest.Implicit}, mailer.EncryptionTLS, true},
		{"opportunistic takes starttls", smtptest.Options{TLS: smtptest.STARTTLS}, mailer.EncryptionOpportunistic, true},
		{"none, auth in plain text on purpose", smtptest.Options{TLS: smtptest.NoTLS}, mailer.EncryptionNone, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Username, c.opts.Password = "mailer@rundbrief.test", "s3cret pässword"
			srv := smtptest.Start(t, c.opts)
			s := mailer.NewSMTPSender(configFor(srv, c.enc, c.opts.Username, c.opts.Password))
			defer s.Close()
			for i := range 3 {
				if err := s.Send(context.Background(), smallMessage(i, "x@example.org")); err != nil {
					t.Fatal(err)
				}
			}
			msgs := srv.Messages()
			if len(msgs) != 3 || msgs[0].User != c.opts.Username || msgs[0].TLS != c.isTLS || srv.Connections() != 1 {
				t.Fatalf("%d messages, user %q, tls %t, connections %d", len(msgs), msgs[0].User, msgs[0].TLS, srv.Connections())
			}
		})
	}
}

// Connection-level failures are never Permanent: they are about the server, not the
// recipient.
func TestDialFailures(t *testing.T) {
	plain := smtptest.Start(t, smtptest.Options{})
	startTLS := smtptest.Start(t, smtptest.Options{TLS: smtptest.STARTTLS, Username: "u", Password: "right"})
	closedPort := freePort(t)

	untrusted := configFor(startTLS, mailer.EncryptionSTARTTLS, "u", "right")
	untrusted.TLSConfig = nil // system roots do not know the test certificate
	cases := []struct {
		name  string
		cfg   mailer.ServerConfig
		stage mailer.Stage
		code  string
		says  string
	}{
		{"connection refused", mailer.ServerConfig{Host: "127.0.0.1", Port: closedPort, Encryption: mailer.EncryptionNone},
			mailer.StageConnect, mailer.TestConnectFailed, "abgelehnt"},
		{"no starttls offered", configFor(plain, mailer.EncryptionSTARTTLS, "", ""), mailer.StageTLS, mailer.TestTLSFailed, "kein STARTTLS"},
		{"tls against plain server", configFor(plain, mailer.EncryptionTLS, "", ""), mailer.StageTLS, mailer.TestTLSFailed, "nicht mit TLS"},
		{"untrusted certificate", untrusted, mailer.StageTLS, mailer.TestTLSFailed, "nicht vertrauenswürdig"},
		{"wrong password", configFor(startTLS, mailer.EncryptionSTARTTLS, "u", "wrong"), mailer.StageAuth, mailer.TestAuthFailed, "Passwort ist falsch"},
		{"auth before tls not offered", configFor(startTLS, mailer.EncryptionNone, "u", "right"), mailer.StageAuth, mailer.TestAuthFailed, "keine Anmeldung"},
		// The test server listens on loopback: with PublicOnly the dialled
		// address is refused, whatever the name resolved to when it was saved.
		{"not a public address", publicOnly(configFor(plain, mailer.EncryptionNone, "", "")), mailer.StageConnect, mailer.TestConnectFailed, "keine öffentliche Adresse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mailer.Check(context.Background(), c.cfg)
			var se *mailer.SendError
			if !errors.As(err, &se) || se.Stage != c.stage || se.Permanent {
				t.Fatalf("Check = %v, want a transient *SendError at %s", err, c.stage)
			}
			res := mailer.Diagnose(c.cfg, err)
			if res.OK || res.Code != c.code || !strings.Contains(res.Message, c.says) || res.Detail == "" {
				t.Fatalf("Diagnose = %+v, want code %s and a message with %q", res, c.code, c.says)
			}
			// Sending reports the same failure.
			s := mailer.NewSMTPSender(c.cfg)
			defer s.Close()
			if err := s.Send(context.Background(), smallMessage(0, "x@example.org")); !errors.As(err, &se) || se.Stage != c.stage {
				t.Fatalf("Send = %v, want a failure at %s", err, c.stage)
			}
		})
	}
	ok := mailer.Diagnose(configFor(startTLS, mailer.EncryptionSTARTTLS, "u", "right"),
		mailer.Check(context.Background(), configFor(startTLS, mailer.EncryptionSTARTTLS, "u", "right")))
	if !ok.OK || ok.Code != mailer.TestOK || ok.Message == "" {
		t.Fatalf("working server: %+v", ok)
	}
}

func publicOnly(cfg mailer.ServerConfig) mailer.ServerConfig {
	cfg.PublicOnly = true
	return cfg
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

func TestSendHonoursContext(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Send(ctx, smallMessage(0, "x@example.org")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled context = %v", err)
	}
	if srv.Count() != 0 {
		t.Fatal("a message went out despite the cancelled context")
	}
}

func TestSendRejectsInvalidMessage(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
	defer s.Close()
	m := smallMessage(0, "x@example.org\r\nRCPT TO:<evil@example.org>")
	if err := s.Send(context.Background(), m); !errors.Is(err, mailer.ErrInvalidMessage) {
		t.Fatalf("Send = %v, want ErrInvalidMessage", err)
	}
	if srv.Connections() != 0 {
		t.Fatal("an invalid message opened a connection")
	}
}

// The limiter spaces messages: n messages at r per second take at least (n-1)/r.
func TestSendRateLimit(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	cfg := configFor(srv, mailer.EncryptionNone, "", "")
	cfg.RatePerSecond = 20
	s := mailer.NewSMTPSender(cfg)
	defer s.Close()
	start := time.Now()
	for i := range 5 {
		if err := s.Send(context.Background(), smallMessage(i, "x@example.org")); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < 4*time.Second/20 {
		t.Fatalf("5 messages at 20/s took %v, less than the 200 ms the limit needs", elapsed)
	}
}

func TestPoolReusesConnections(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	cfg := configFor(srv, mailer.EncryptionNone, "", "")
	pool := mailer.NewPool(mailer.PoolOptions{IdleTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	for i := range 5 { // one worker, one send after another: one connection
		s := pool.Get(cfg)
		if err := s.Send(ctx, smallMessage(i, "x@example.org")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Send(ctx, smallMessage(i, "x@example.org")); !errors.Is(err, mailer.ErrSenderClosed) {
			t.Fatalf("Send after Close = %v, want ErrSenderClosed", err)
		}
	}
	if srv.Connections() != 1 || pool.Idle() != 1 {
		t.Fatalf("connections %d, idle %d; want 1, 1", srv.Connections(), pool.Idle())
	}
	// Two workers at once need two connections; both go back to the pool.
	a, b := pool.Get(cfg), pool.Get(cfg)
	var wg sync.WaitGroup
	for _, s := range []mailer.Sender{a, b} {
		wg.Go(func() {
			if err := s.Send(ctx, smallMessage(0, "y@example.org")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	_, _ = a.Close(), b.Close()
	if srv.Connections() != 2 || pool.Idle() != 2 {
		t.Fatalf("connections %d, idle %d; want 2, 2", srv.Connections(), pool.Idle())
	}
	// A different password is a different configuration: no reuse.
	other := cfg
	other.Username, other.Password = "", "x"
	c := pool.Get(other)
	if err := c.Send(ctx, smallMessage(0, "z@example.org")); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if srv.Connections() != 3 {
		t.Fatalf("connections %d, want 3", srv.Connections())
	}
	// Run closes idle connections after IdleTimeout and everything when stopped.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pool.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for pool.Idle() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pool.Idle() != 0 {
		t.Fatalf("%d idle connections left", pool.Idle())
	}
}

func TestServerConfigHidesPassword(t *testing.T) {
	cfg := mailer.ServerConfig{Host: "smtp.example.com", Port: 587, Username: "u", Password: "Sup3r-Geheim", Encryption: mailer.EncryptionSTARTTLS}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("connect", "server", cfg)
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%v %+v", cfg, cfg), buf.String()} {
		if strings.Contains(out, "Sup3r-Geheim") {
			t.Fatalf("password in %q", out)
		}
	}
}

func TestParseRelayURL(t *testing.T) {
	def := mailer.Address{Name: "Rundbrief", Email: "noreply@rundbrief.example"}
	cases := []struct {
		raw     string
		want    mailer.ServerConfig
		from    mailer.Address
		wantErr bool
	}{
		{raw: "smtp://relay.example.com", want: mailer.ServerConfig{Host: "relay.example.com", Port: 587, Encryption: mailer.EncryptionOpportunistic}, from: def},
		{raw: "smtps://news%40example.com:p%40ss%3Aw@relay.example.com:2465",
			want: mailer.ServerConfig{Host: "relay.example.com", Port: 2465, Username: "news@example.com", Password: "p@ss:w", Encryption: mailer.EncryptionTLS},
			from: mailer.Address{Name: "Rundbrief", Email: "news@example.com"}},
		{raw: "smtp://user:pw@localhost:1025?encryption=none&from=dev@example.com&from_name=Dev&rate_per_second=5",
			want: mailer.ServerConfig{Host: "localhost", Port: 1025, Username: "user", Password: "pw", Encryption: mailer.EncryptionNone, RatePerSecond: 5},
			from: mailer.Address{Name: "Dev", Email: "dev@example.com"}},
		{raw: "http://relay.example.com", wantErr: true},
		{raw: "smtp://", wantErr: true},
		{raw: "smtp://relay.example.com:99999", wantErr: true},
		{raw: "smtps://relay.example.com?encryption=none", wantErr: true},
		{raw: "smtp://relay.example.com?from=not-an-address", wantErr: true},
		{raw: "smtp://relay.example.com?rate_per_second=-1", wantErr: true},
	}
	for _, c := range cases {
		r, err := mailer.ParseRelayURL(c.raw, def)
		if c.wantErr {
			if err == nil {
				t.Errorf("%s: accepted", c.raw)
			}
			continue
		}
		if err != nil || r.Server != c.want || r.From != c.from {
			t.Errorf("%s: got %+v from %+v (%v), want %+v from %+v", c.raw, r.Server, r.From, err, c.want, c.from)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: error leaks the password", c.raw)
		}
	}
}

func TestHELONameAndDefaultFrom(t *testing.T) {
	cases := []struct{ base, helo, from string }{
		{"https://news.example.com", "news.example.com", "noreply@news.example.com"},
		{"http://127.0.0.1:8080", "[127.0.0.1]", "noreply@localhost"},
		{"http://[::1]:8080/", "[IPv6:::1]", "noreply@localhost"},
		{"http://localhost:8080", "localhost", "noreply@localhost"},
	}
	for _, c := range cases {
		if got := mailer.HELOName(c.base); got != c.helo {
			t.Errorf("HELOName(%q) = %q, want %q", c.base, got, c.helo)
		}
		if got := mailer.DefaultFrom(c.base).Email; got != c.from {
			t.Errorf("DefaultFrom(%q) = %q, want %q", c.base, got, c.from)
		}
	}
}

// BenchmarkSendOneConnection sends 10,000 small messages over one connection to the
// test SMTP server per iteration: go test -bench SendOneConnection -benchtime 1x ./mailer/
func BenchmarkSendOneConnection(b *testing.B) {
	const n = 10000
	srv := smtptest.Start(b, smtptest.Options{Discard: true})
	s := mailer.NewSMTPSender(configFor(srv, mailer.EncryptionNone, "", ""))
	defer s.Close()
	ctx := context.Background()
	msgs := make([]*mailer.Message, n)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for i := range msgs {
			msgs[i] = smallMessage(i, "reader@example.org")
		}
		b.StartTimer()
		for _, m := range msgs {
			if err := s.Send(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	if srv.Connections() != 1 || srv.Count() != n*b.N {
		b.Fatalf("connections %d, messages %d", srv.Connections(), srv.Count())
	}
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(srv.Connections()), "conns")
}
