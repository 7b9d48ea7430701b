package mailer_test

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
)

func TestTokensRoundTrip(t *testing.T) {
	tk, err := mailer.NewTokens(sendSecret)
	if err != nil {
		t.Fatal(err)
	}
	for _, rid := range []int64{mailer.TestRecipientID, 1, 127, 128, 1 << 40} {
		for _, kind := range []mailer.TokenKind{mailer.TokenUnsubscribe, mailer.TokenOpen} {
			var token string
			if kind == mailer.TokenUnsubscribe {
				token = tk.Unsubscribe(rid)
			} else {
				token = tk.Open(rid)
			}
			got, err := tk.Verify(kind, token)
			if err != nil || got.RecipientID != rid || got.Kind != kind {
				t.Errorf("%c %d: %+v %v", kind, rid, got, err)
			}
			if len(token) > 40 || strings.ContainsAny(token, "+/=") {
				t.Errorf("token %q is not short URL-safe text", token)
			}
		}
		c := tk.Click(rid, 99, "")
		if got, err := tk.VerifyClick(c, "ignored for plain links"); err != nil || got.RecipientID != rid || got.LinkID != 99 || got.Personalized {
			t.Errorf("click %d: %+v %v", rid, got, err)
		}
	}
}

func TestTokensRefuseForgery(t *testing.T) {
	tk, _ := mailer.NewTokens(sendSecret)
	other, _ := mailer.NewTokens(sendSecret + "-other")
	unsub := tk.Unsubscribe(42)
	personal := tk.Click(42, 7, "https://example.com/?e=a%40b.test")
	raw, _ := base64.RawURLEncoding.DecodeString(unsub)
	flipped := append([]byte(nil), raw...)
	flipped[3] ^= 1 // another recipient id, same signature
	cases := []struct {
		name string
		err  error
	}{
		{"kind swapped", errOf(tk.Verify(mailer.TokenOpen, unsub))},
		{"other secret", errOf(other.Verify(mailer.TokenUnsubscribe, unsub))},
		{"recipient changed", errOf(tk.Verify(mailer.TokenUnsubscribe, base64.RawURLEncoding.EncodeToString(flipped)))},
		{"truncated", errOf(tk.Verify(mailer.TokenUnsubscribe, unsub[:len(unsub)-2]))},
		{"garbage", errOf(tk.Verify(mailer.TokenUnsubscribe, "not a token!"))},
		{"empty", errOf(tk.Verify(mailer.TokenUnsubscribe, ""))},
		{"click as unsubscribe", errOf(tk.Verify(mailer.TokenUnsubscribe, personal))},
		{"click via Verify", errOf(tk.Verify(mailer.TokenClick, personal))},
		{"personal link, other address", errOf(tk.VerifyClick(personal, "https://evil.example/"))},
		{"personal link, no address", errOf(tk.VerifyClick(personal, ""))},
	}
	for _, c := range cases {
		if !errors.Is(c.err, mailer.ErrInvalidToken) {
			t.Errorf("%s: %v, want ErrInvalidToken", c.name, c.err)
		}
	}
	if got, err := tk.VerifyClick(personal, "https://example.com/?e=a%40b.test"); err != nil || !got.Personalized || got.LinkID != 7 {
		t.Errorf("personal link: %+v %v", got, err)
	}
	if _, err := mailer.NewTokens("too short"); err == nil {
		t.Error("a short secret must be refused")
	}
}

func errOf(_ mailer.Token, err error) error { return err }

func TestLinkBuilder(t *testing.T) {
	tk, _ := mailer.NewTokens(sendSecret)
	lb := mailer.LinkBuilder{BaseURL: "https://rb.test/", Tokens: tk}
	if u := lb.UnsubscribeURL(5); !strings.HasPrefix(u, "https://rb.test/unsubscribe/") {
		t.Errorf("unsubscribe URL %q", u)
	}
	if u := lb.OpenURL(5); !strings.HasPrefix(u, "https://rb.test/o/") {
		t.Errorf("open URL %q", u)
	}
	c := lb.ClickURL(5, 3, "https://x.test/a b?c=d&e")
	u, err := url.Parse(c)
	if err != nil || u.Host != "rb.test" || !strings.HasPrefix(u.Path, "/c/") {
		t.Fatalf("click URL %q", c)
	}
	if tok, err := tk.VerifyClick(strings.TrimPrefix(u.Path, "/c/"), u.Query().Get(mailer.ClickURLParam)); err != nil || tok.LinkID != 3 {
		t.Errorf("click URL does not verify: %+v %v", tok, err)
	}
}
