package secret_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store/secret"
)

const testSecret = "0123456789abcdefghijklmnopqrstuvwxyz-test"

func newBox(t *testing.T, s string) *secret.Box {
	t.Helper()
	b, err := secret.NewBox(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	b := newBox(t, testSecret)
	for _, plain := range [][]byte{[]byte("hunter2 ÄÖÜ ß"), {}, bytes.Repeat([]byte{0, 1, 2, 255}, 1000)} {
		sealed, err := b.Seal("smtp_servers.password:1", plain)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, "v1.") {
			t.Fatalf("sealed value %q lacks the version prefix", sealed)
		}
		if len(plain) > 4 && strings.Contains(sealed, string(plain)) {
			t.Fatal("plaintext visible in the sealed value")
		}
		got, err := b.Open("smtp_servers.password:1", sealed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("round trip: got %q, want %q", got, plain)
		}
	}
}

func TestSealIsRandomised(t *testing.T) {
	b := newBox(t, testSecret)
	x, _ := b.Seal("p", []byte("same"))
	y, _ := b.Seal("p", []byte("same"))
	if x == y {
		t.Fatal("two seals of the same plaintext are equal: nonce not random")
	}
}

func TestOpenRejects(t *testing.T) {
	b := newBox(t, testSecret)
	sealed, err := b.Seal("smtp_servers.password:1", []byte("geheim"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1."))
	flip := func(i int) string {
		c := bytes.Clone(raw)
		c[i] ^= 1
		return "v1." + base64.RawURLEncoding.EncodeToString(c)
	}
	other := newBox(t, testSecret+"-other")
	cases := []struct {
		name    string
		box     *secret.Box
		purpose string
		value   string
	}{
		{"tampered nonce", b, "smtp_servers.password:1", flip(0)},
		{"tampered ciphertext", b, "smtp_servers.password:1", flip(13)},
		{"tampered tag", b, "smtp_servers.password:1", flip(len(raw) - 1)},
		{"truncated", b, "smtp_servers.password:1", sealed[:len(sealed)-4]},
		{"other purpose (account)", b, "smtp_servers.password:2", sealed},
		{"other secret", other, "smtp_servers.password:1", sealed},
		{"unknown version", b, "smtp_servers.password:1", "v2." + strings.TrimPrefix(sealed, "v1.")},
		{"plain text", b, "smtp_servers.password:1", "geheim"},
		{"empty", b, "smtp_servers.password:1", ""},
		{"bad base64", b, "smtp_servers.password:1", "v1.!!!"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.box.Open(c.purpose, c.value)
			if !errors.Is(err, secret.ErrOpen) {
				t.Fatalf("Open = %q, %v; want ErrOpen", got, err)
			}
		})
	}
}

func TestNewBoxNeedsLongSecret(t *testing.T) {
	if _, err := secret.NewBox("short"); err == nil {
		t.Fatal("NewBox accepted a 5-character secret")
	}
}
