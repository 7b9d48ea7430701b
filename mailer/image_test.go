package mailer

import (
	"strings"
	"testing"
)

func TestImageURLSignsAccountAndAttachment(t *testing.T) {
	tk, err := NewTokens(strings.Repeat("s", 40))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewTokens(strings.Repeat("t", 40))
	mac := tk.ImageMAC(7, 42)
	if !tk.VerifyImage(7, 42, mac) {
		t.Fatal("own mac refused")
	}
	altered := "A" + mac[1:]
	if mac[0] == 'A' {
		altered = "B" + mac[1:]
	}
	for name, ok := range map[string]bool{
		"other attachment": tk.VerifyImage(7, 43, mac),
		"other account":    tk.VerifyImage(8, 42, mac),
		"other secret":     other.VerifyImage(7, 42, mac),
		"altered":          tk.VerifyImage(7, 42, altered),
		"empty":            tk.VerifyImage(7, 42, ""),
	} {
		if ok {
			t.Errorf("%s accepted", name)
		}
	}
	u := LinkBuilder{BaseURL: "https://mail.example/", Tokens: tk}.ImageURL(7, 42, "Sommer Logo.png")
	if want := "https://mail.example/i/7/42/" + mac + "/Sommer%20Logo.png"; u != want {
		t.Errorf("url %q, want %q", u, want)
	}
}
