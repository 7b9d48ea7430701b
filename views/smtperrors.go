package views

import (
	"regexp"
	"strconv"
	"strings"
)

// smtpReply reads a reply's code and enhanced status code ("550 5.7.1 …",
// "535-5.7.8 …"); a network error has neither.
var smtpReply = regexp.MustCompile(`^\s*([245]\d\d)(?:[ -]+([245]\.\d{1,3}\.\d{1,3}))?`)

// SMTPErrorText says in German what an SMTP reply or a connection error (as
// the mailer records it: the server's reply, or the network error) means for
// the user: a wrong password, relaying denied, an unknown mailbox, a refused
// or timed-out connection, an unknown host, a TLS failure. The original stays
// for the detail (SMTPError shows both); "" for no error.
func SMTPErrorText(t Text, raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	e := t.SMTPErrors
	low := strings.ToLower(raw)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	code, enhanced := 0, ""
	if m := smtpReply.FindStringSubmatch(raw); m != nil {
		code, _ = strconv.Atoi(m[1])
		enhanced = m[2]
	}
	if code == 0 {
		// Network and TLS errors, as Go writes them.
		switch {
		case has("x509", "certificate"):
			return e.Certificate
		case has("tls", "handshake", "first record does not look like"):
			return e.TLS
		case has("connection refused"):
			return e.Refused
		case has("no such host", "server misbehaving", "lookup "):
			return e.DNS
		case has("timeout", "timed out", "deadline exceeded"):
			return e.Timeout
		case has("network is unreachable", "no route to host", "host is down"):
			return e.Unreachable
		case has("eof", "connection reset", "broken pipe"):
			return e.Closed
		case has("authentication", "auth "):
			return e.Auth
		}
		return e.Failed
	}
	switch {
	case code == 535 || code == 534 || code == 530 || enhanced == "5.7.8" || has("authentication failed", "authentication credentials", "invalid credentials", "username and password"):
		return e.Auth
	case has("relay", "relaying"):
		return e.Relay
	case enhanced == "5.2.2" || code == 552 && has("mailbox full", "quota", "over quota") || has("mailbox full", "over quota", "quota exceeded"):
		return e.MailboxFull
	case enhanced == "5.3.4" || code == 552 || has("message size", "too large", "too big"):
		return e.TooBig
	case enhanced == "5.1.1" || enhanced == "5.1.10" || has("user unknown", "unknown user", "no such user", "does not exist", "mailbox unavailable", "recipient address rejected", "mailbox not found", "invalid recipient"):
		return e.Mailbox
	case enhanced == "5.1.7" || enhanced == "5.1.8" || enhanced == "5.7.60" || has("sender address rejected", "sender rejected", "not owned by user", "sender verify failed", "from address"):
		return e.Sender
	case strings.HasPrefix(enhanced, "5.7.") || has("spam", "blocked", "blacklist", "blocklist", "policy", "reputation", "spamhaus"):
		return e.Policy
	case code >= 400 && code < 500:
		return e.Temporary
	}
	return e.Rejected
}
