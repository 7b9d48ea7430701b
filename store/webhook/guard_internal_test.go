package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

type staticResolver []netip.Addr

func (s staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return s, nil
}

// TestDialerChecksTheAddressItConnectsTo proves the last line of defence: the
// dialer's control function sees the literal address of the connect and refuses
// a non-public one, however the caller got there.
func TestDialerChecksTheAddressItConnectsTo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ctx := context.Background()

	g := NewGuard(false, staticResolver{netip.MustParseAddr("127.0.0.1")})
	var blocked *BlockedAddressError
	// Straight through the net.Dialer, past DialContext's own check.
	if _, err := g.dialer.DialContext(ctx, "tcp", "127.0.0.1:"+port); !errors.As(err, &blocked) {
		t.Errorf("dialer connected to 127.0.0.1: %v", err)
	}
	// A public-looking name that resolves to loopback.
	if _, err := g.DialContext(ctx, "tcp", "hooks.example.com:"+port); !errors.As(err, &blocked) {
		t.Errorf("name resolving to loopback: %v", err)
	}
	// The whole client, as deliveries use it.
	if _, err := g.Client(DeliveryTimeout).Get("http://hooks.example.com:" + port + "/"); !errors.As(err, &blocked) {
		t.Errorf("client reached loopback: %v", err)
	}
	// Allowed for development.
	dev := NewGuard(true, staticResolver{netip.MustParseAddr("127.0.0.1")})
	resp, err := dev.Client(DeliveryTimeout).Get("http://hooks.example.com:" + port + "/")
	if err != nil {
		t.Fatalf("allow private: %v", err)
	}
	_ = resp.Body.Close()
}
