package mailer

import "strings"

// HardBounce reports whether a permanent rejection says that the address
// itself cannot receive mail, so that it goes on the blocked list: an RFC 3463
// status 5.1.x (bad mailbox, bad domain, address moved) or 5.2.1 (mailbox
// disabled), or, when the server gives no enhanced status, a 550, 551 or 553
// to RCPT TO. Other permanent failures concern the message or the moment
// (5.2.2 mailbox full, 5.3.4 too large, 5.7.x policy or spam): the recipient
// is marked failed and email.bounced is emitted, but later mail may still
// arrive, so the address is not blocked.
func HardBounce(se *SendError) bool {
	if se == nil || !se.Bounce() {
		return false
	}
	if se.Enhanced != "" {
		return strings.HasPrefix(se.Enhanced, "5.1.") || se.Enhanced == "5.2.1"
	}
	return se.Stage == StageRcpt && (se.Code == 550 || se.Code == 551 || se.Code == 553)
}
