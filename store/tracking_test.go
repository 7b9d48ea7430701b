package store_test

import (
	"net/netip"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

func TestIsAutomated(t *testing.T) {
	person := "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"
	home := netip.MustParseAddr("203.0.113.9")
	apple := netip.MustParseAddr("17.58.0.1")
	cases := []struct {
		ua   string
		ip   netip.Addr
		open bool
		want bool
	}{
		{person, home, true, false},
		{person, home, false, false},
		{person, apple, true, true},   // Mail Privacy Protection loads every pixel
		{person, apple, false, false}, // but a click through Apple's network is a person
		{"", home, false, true},
		{"Mozilla/5.0 (compatible; bingbot/2.0)", home, false, true},
		{"Barracuda Sentinel (EE)", home, true, true},
		{"python-requests/2.31", home, false, true},
		{"Mozilla/5.0 ... Microsoft Outlook SafeLinks", home, false, true},
	}
	for _, c := range cases {
		if got := store.IsAutomated(c.ua, c.ip, c.open); got != c.want {
			t.Errorf("IsAutomated(%q, %s, open=%v) = %v", c.ua, c.ip, c.open, got)
		}
	}
}
