package portal_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rundbrief/rundbrief/store/dbtest"
)

// syncBuffer is a log destination that the server's goroutines write while
// the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the log lines so far and forgets them.
func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return strings.Split(strings.TrimSpace(s), "\n")
}

// TestPortalLogsOperatorHints: a webhook or SMTP server refused for a
// non-public address shows the German message on the form, and the log names
// the setting that allows it in development, at INFO, never at ERROR; the page
// does not name it.
func TestPortalLogsOperatorHints(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	s := newServerWith(t, dbtest.URL(t), nil, base, serverOptions{SMTPDenyPrivate: true, WebhookDenyPrivate: true,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	acct := newAccount(t, s.db, "business")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)

	for _, f := range []struct {
		name, path, errorID, setting string
		form                         url.Values
	}{
		{name: "webhook", path: "/webhooks/new", errorID: "error-url", setting: "RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE",
			form: url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {"*"}}},
		{name: "SMTP server", path: "/smtp-servers/new", errorID: "error-host", setting: "RUNDBRIEF_SMTP_ALLOW_PRIVATE",
			form: smtpForm("host", "10.0.0.8", "port", "25")},
	} {
		logs.lines()
		r := c.post(f.path, f.form)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if msg := text(r.find(f.errorID)); !strings.Contains(msg, "nicht öffentlich") {
			t.Errorf("%s: error %q", f.name, msg)
		}
		if strings.Contains(string(r.Body), "RUNDBRIEF_") {
			t.Errorf("%s: the page names a server setting", f.name)
		}
		var found bool
		for _, l := range logs.lines() {
			if strings.Contains(l, "level=ERROR") {
				t.Errorf("%s: logged at ERROR: %s", f.name, l)
			}
			if strings.Contains(l, `msg="request refused"`) {
				found = true
				if !strings.Contains(l, "level=INFO") || !strings.Contains(l, f.setting) || !strings.Contains(l, "path="+f.path) {
					t.Errorf("%s: log line %s, want INFO naming %s", f.name, l, f.setting)
				}
			}
		}
		if !found {
			t.Errorf("%s: no log line names %s", f.name, f.setting)
		}
	}
}
