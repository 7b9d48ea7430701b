//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package mailer

// closedByPeer cannot peek at the socket here; a connection the server closed
// while idle shows when the next transaction fails.
func (c *conn) closedByPeer() bool { return false }
