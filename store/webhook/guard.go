package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name; *net.Resolver satisfies it.
// Tests inject one that answers what they need (e.g. a public name that resolves
// to 127.0.0.1).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// BlockedAddressError means a webhook target resolved to an address that is not
// publicly routable (loopback, private, link-local, CGNAT, multicast …).
type BlockedAddressError struct {
	Addr netip.Addr
}

func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("webhook: address %s is not public", e.Addr)
}

// BlockedAddress marks the error for packages that must recognise a refused
// address without importing this one (the mailer's link check).
func (e *BlockedAddressError) BlockedAddress() bool { return true }

// PublicAddr reports whether a is a publicly routable unicast address that a
// webhook may be sent to. It refuses the unspecified, loopback, private (RFC
// 1918, fc00::/7), link-local, CGNAT (100.64.0.0/10), multicast, broadcast,
// reserved, documentation and benchmarking ranges, IPv4-mapped and -embedding
// forms of those, and every IPv6 address outside global unicast 2000::/3.
func PublicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" || a.IsUnspecified() || a.IsLoopback() || a.IsPrivate() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return false
	}
	if a.Is4() {
		b := a.As4()
		switch {
		case b[0] == 0: // 0.0.0.0/8 "this network"
		case b[0] == 100 && b[1]&0xc0 == 64: // 100.64.0.0/10 carrier-grade NAT
		case b[0] == 192 && b[1] == 0 && b[2] == 0: // 192.0.0.0/24 IETF protocol assignments
		case b[0] == 192 && b[1] == 0 && b[2] == 2: // 192.0.2.0/24 documentation
		case b[0] == 198 && b[1]&0xfe == 18: // 198.18.0.0/15 benchmarking
		case b[0] == 198 && b[1] == 51 && b[2] == 100: // documentation
		case b[0] == 203 && b[1] == 0 && b[2] == 113: // documentation
		case b[0] >= 240: // 240.0.0.0/4 reserved, 255.255.255.255 broadcast
		default:
			return true
		}
		return false
	}
	b := a.As16()
	switch {
	case b[0]&0xe0 != 0x20: // outside 2000::/3: ULA, link-local, NAT64, IPv4-compatible …
		return false
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8: // 2001:db8::/32 documentation
		return false
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // 2001::/32 Teredo (embeds other addresses)
		return false
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0x02 && b[4] == 0 && b[5] == 0: // 2001:2::/48 benchmarking
		return false
	case b[0] == 0x20 && b[1] == 0x02: // 2002::/16 6to4: as public as the IPv4 address inside
		return PublicAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	return true
}

// Guard keeps webhooks away from non-public addresses: it checks a target URL
// when a webhook is saved, and its dialer checks the address it actually connects
// to, so that a host name that resolves differently later (DNS rebinding) still
// cannot reach inside. With AllowPrivate (RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE, for
// development and tests) it checks nothing.
type Guard struct {
	allowPrivate bool
	resolver     Resolver
	dialer       net.Dialer
}

// NewGuard returns a Guard; resolver nil is the system resolver.
func NewGuard(allowPrivate bool, resolver Resolver) *Guard {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	g := &Guard{allowPrivate: allowPrivate, resolver: resolver}
	g.dialer = net.Dialer{Timeout: DeliveryTimeout, KeepAlive: 30 * time.Second, Control: g.control}
	return g
}

// control runs between socket creation and connect with the literal address
// being connected to: the last word on where a request goes.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: unexpected dial address %q: %w", address, err)
	}
	if !PublicAddr(ap.Addr()) {
		return &BlockedAddressError{Addr: ap.Addr()}
	}
	return nil
}

// lookup returns the addresses of host (a name or an address literal).
func (g *Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// DialContext resolves addr's host with the Guard's resolver and connects to the
// first public address that answers; non-public ones are skipped (and refused
// again by the dialer's control function, whatever resolved them).
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, a := range addrs {
		if !g.allowPrivate && !PublicAddr(a) {
			if firstErr == nil {
				firstErr = &BlockedAddressError{Addr: a}
			}
			continue
		}
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		var blocked *BlockedAddressError
		if firstErr == nil || errors.As(firstErr, &blocked) {
			firstErr = err
		}
	}
	return nil, firstErr
}

// CheckURL reports in German why rawURL (already well-formed, see
// store.WebhookSettings.Validate) may not be a webhook target: its host does not
// resolve, or one of its addresses is not public. "" means it may.
func (g *Guard) CheckURL(ctx context.Context, rawURL string) string {
	msg, _ := g.checkURL(ctx, rawURL)
	return msg
}

// checkURL is CheckURL that also reports whether the refusal is for a
// non-public address, the one that RUNDBRIEF_WEBHOOK_ALLOW_PRIVATE lifts.
func (g *Guard) checkURL(ctx context.Context, rawURL string) (msg string, private bool) {
	if g.allowPrivate {
		return "", false
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "Bitte eine vollständige http(s)-URL angeben.", false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.lookup(ctx, u.Hostname())
	if err != nil {
		return fmt.Sprintf("Der Host %q lässt sich nicht auflösen. Bitte die Adresse prüfen.", u.Hostname()), false
	}
	for _, a := range addrs {
		if !PublicAddr(a) {
			return fmt.Sprintf("Die Adresse %s ist nicht öffentlich erreichbar: localhost, private Netze, Link-Local-, CGNAT- und Multicast-Adressen sind als Ziel nicht erlaubt.", a.Unmap()), true
		}
	}
	return "", false
}

// Client returns the HTTP client deliveries are sent with: its dialer is the
// Guard's, it never uses a proxy, never follows redirects (a 3xx is the answer,
// and a failure) and gives up after timeout.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           512,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// CheckHost reports in German why host (a name or an address literal) may not
// be connected to: one of its addresses is not public. "" means it may, also
// when the name does not resolve (connecting then fails and says so). The
// SMTP servers of accounts use it (RUNDBRIEF_SMTP_ALLOW_PRIVATE turns it
// off), so that neither their connection test nor their mail reaches the
// operator's own network.
func (g *Guard) CheckHost(ctx context.Context, host string) string {
	if g.allowPrivate {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if !PublicAddr(a) {
			return fmt.Sprintf("Die Adresse %s ist nicht öffentlich erreichbar: localhost, private Netze, Link-Local-, CGNAT- und Multicast-Adressen sind als Ziel nicht erlaubt.", a.Unmap())
		}
	}
	return ""
}
