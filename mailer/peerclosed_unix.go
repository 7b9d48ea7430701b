//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mailer

import "syscall"

// closedByPeer reports whether the server closed the connection, or sent
// something unasked (a 421 before closing, a TLS close_notify), while it was
// idle: a peek at the socket that does not wait. A transaction written into
// such a connection fails after the content went out, when nobody can tell
// whether the server took it; checking first lets Send reconnect instead.
func (c *conn) closedByPeer() bool {
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// n > 0: data nobody asked for; n == 0: end of stream; EAGAIN: idle and open.
		closed = n > 0 || n == 0 && err == nil || err != nil && err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
		return true
	})
	return closed || err != nil
}
