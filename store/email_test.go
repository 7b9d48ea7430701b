package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// German messages of the address check (store/email.go).
const (
	msgEmail          = "Bitte eine gültige E-Mail-Adresse angeben."
	msgEmailInvisible = "Die E-Mail-Adresse enthält unsichtbare Zeichen oder Steuerzeichen."
	msgEmailLiteral   = "Eine IP-Adresse statt einer Domain (wie a@[127.0.0.1]) ist nicht erlaubt."
	msgEmailDomain    = "Die Domain der E-Mail-Adresse ist ungültig."
)

func TestParseEmailStoredForm(t *testing.T) {
	for in, want := range map[string]string{
		"a@example.org":                    "a@example.org",
		"  First.Last+Tag@Sub.Example.DE ": "first.last+tag@sub.example.de",
		"müller@exämple.de":                "müller@xn--exmple-cua.de",
		"müller@xn--exmple-cua.de":         "müller@xn--exmple-cua.de",
		"MÜLLER@EXÄMPLE.DE":                "müller@xn--exmple-cua.de",
		"müller@XN--EXMPLE-CUA.DE":         "müller@xn--exmple-cua.de",
		"ａ@example.org":                    "a@example.org", // full-width: NFKC
		"ａ＠ｅｘａｍｐｌｅ．ｏｒｇ":                    "a@example.org",
		"a@ß.de":        "a@xn--zca.de",
		"a@💩.la":        "a@xn--ls8h.la",
		"a@xn--ls8h.la": "a@xn--ls8h.la",
		"用户@例子.广告":      "用户@xn--fsqu00a.xn--4rr70v",
	} {
		got, err := store.ParseEmail(in)
		if err != nil || got != want {
			t.Errorf("ParseEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseEmailRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"a\u200b@example.org":     msgEmailInvisible, // zero-width space
		"a\u200d@example.org":     msgEmailInvisible, // zero-width joiner
		"a@exam\u00adple.org":     msgEmailInvisible, // soft hyphen (idna would drop it silently)
		"a@ex\u200bample.org":     msgEmailInvisible,
		"a\u202e@example.org":     msgEmailInvisible, // bidi override
		"a\u2066@example.org":     msgEmailInvisible, // bidi isolate
		"a\u200f@example.org":     msgEmailInvisible, // right-to-left mark
		"\ufeffa@example.org":     msgEmailInvisible, // BOM
		"a\ufe0f@example.org":     msgEmailInvisible, // variation selector
		"a\u3164@example.org":     msgEmailInvisible, // Hangul filler
		"a\u00a0b@example.org":    msgEmailInvisible, // no-break space
		"a\x01@example.org":       msgEmailInvisible,
		"a@[127.0.0.1]":           msgEmailLiteral,
		"a@[IPv6:::1]":            msgEmailLiteral,
		"a@127.0.0.1":             msgEmailLiteral,
		"a@-example.org":          msgEmailDomain,
		"a@example-.org":          msgEmailDomain,
		"a@xn--.org":              msgEmailDomain,
		"a@xn--a.org":             msgEmailDomain,
		"a@example..org":          msgEmailDomain,
		"a@example.org.":          msgEmailDomain,
		"a@ex_ample.org":          msgEmailDomain,
		"a@localhost":             msgEmailDomain,
		"a@example.123":           msgEmailDomain,
		"a@" + long(64) + ".de":   msgEmailDomain,
		"":                        msgEmail,
		"kein-at":                 msgEmail,
		"@example.org":            msgEmail,
		"a@":                      msgEmail,
		"Name <a@example.org>":    msgEmail,
		"\"a b\"@example.org":     msgEmail,
		"a..b@example.org":        msgEmail,
		long(65) + "@example.org": msgEmail,
		"a@b@example.org":         msgEmail,
		"a\xff@example.org":       msgEmail,
	} {
		got, err := store.ParseEmail(in)
		var ee *store.EmailError
		if !errors.As(err, &ee) || ee.Message != want {
			t.Errorf("ParseEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func long(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}

// TestOneContactPerMailbox: the forms of one address are one contact, the
// blocked list and the lookup by address agree with them, and refused
// addresses are 422 on their field with the reason in German.
func TestOneContactPerMailbox(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")

	for _, forms := range [][]string{
		{"müller@exämple.de", "müller@xn--exmple-cua.de", "Müller@EXÄMPLE.de"},
		{"a@example.org", "ａ@example.org", "A@ｅｘａｍｐｌｅ.org"},
	} {
		first := upsert(t, db, acct, store.ContactInput{Email: forms[0]})
		for _, f := range forms[1:] {
			res := upsert(t, db, acct, store.ContactInput{Email: f})
			if res.Created || res.Contact.ID != first.Contact.ID {
				t.Errorf("%q made contact %d, want %q's %d", f, res.Contact.ID, forms[0], first.Contact.ID)
			}
			if c, err := db.ContactByEmail(ctx, acct, f); err != nil || c.ID != first.Contact.ID {
				t.Errorf("ContactByEmail(%q) = %d, %v", f, c.ID, err)
			}
		}
	}
	if u := usageOf(t, db, acct); u.Contacts != 2 {
		t.Errorf("%d contacts, want 2", u.Contacts)
	}

	if _, err := db.BlockAddresses(ctx, acct, apiActor, []string{"Zoë@Bücher.example"}, store.Unsubscribe{Source: store.UnsubManual}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"zoë@xn--bcher-kva.example", "ZOË@BÜCHER.EXAMPLE"} {
		if b, err := db.IsBlocked(ctx, acct, f); err != nil || !b {
			t.Errorf("IsBlocked(%q) = %v, %v", f, b, err)
		}
	}

	for in, want := range map[string]string{
		"a\u200b@example.org": msgEmailInvisible,
		"a\u202e@example.org": msgEmailInvisible,
		"a@[127.0.0.1]":       msgEmailLiteral,
		"a@-example.org":      msgEmailDomain,
		"a@xn--.org":          msgEmailDomain,
	} {
		_, err := db.UpsertContact(ctx, acct, apiActor, store.ContactInput{Email: in})
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Fields["email"] != want {
			t.Errorf("upsert %q: %v, want %q on email", in, err, want)
		}
		_, err = db.BlockAddresses(ctx, acct, apiActor, []string{in}, store.Unsubscribe{Source: store.UnsubManual})
		if !errors.As(err, &ve) || ve.Fields["emails"] == "" {
			t.Errorf("block %q: %v, want a message on emails", in, err)
		}
		email := store.EmailInput{To: []string{in}, Subject: "Hallo", Text: "Hallo"}
		if err := email.Normalize(time.Now()); !errors.As(err, &ve) || ve.Fields["to"] == "" {
			t.Errorf("send to %q: %v, want a message on to", in, err)
		}
		if _, err := store.NormalizeTestRecipients([]string{in}); !errors.As(err, &ve) || ve.Fields["to"] == "" {
			t.Errorf("test mail to %q: %v, want a message on to", in, err)
		}
		if _, err := db.CreateUser(ctx, acct, store.NewUser{Email: in, Name: "X", Role: "member", Password: "geheim-geheim"}); !errors.As(err, &ve) || ve.Fields["email"] != want {
			t.Errorf("user %q: %v, want %q on email", in, err, want)
		}
	}
	if u := usageOf(t, db, acct); u.Contacts != 2 {
		t.Errorf("%d contacts after refused ones, want 2", u.Contacts)
	}
}

// TestEmailFormMigration: addresses stored before the one normalisation are
// rewritten to their new form, so the old contact is found and updated by
// either form; a second contact whose new form is taken keeps its address.
func TestEmailFormMigration(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	// As the old normalisation stored them: trimmed and lower-cased.
	exec(`INSERT INTO contacts (account_id, email) VALUES ($1, 'müller@exämple.de'), ($1, 'ｂ@example.org'),
		($1, 'x@bücher.example'), ($1, 'x@xn--bcher-kva.example'), ($1, $2)`, acct, "a\u200b@exämple.de")
	exec(`INSERT INTO blocked_addresses (account_id, email, source) VALUES ($1, 'zoë@bücher.example', 'manual'),
		($1, 'y@bücher.example', 'manual'), ($1, 'y@xn--bcher-kva.example', 'manual')`, acct)
	old, err := db.ContactByEmail(ctx, acct, "müller@exämple.de")
	if err == nil {
		t.Fatalf("found before the migration: %+v", old)
	}

	exec(`DELETE FROM goose_db_version WHERE version_id = 20`)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	var emails []string
	if err := db.SelectContext(ctx, &emails, `SELECT email FROM contacts WHERE account_id = $1 ORDER BY email`, acct); err != nil {
		t.Fatal(err)
	}
	want := []string{"a\u200b@exämple.de", "b@example.org", "müller@xn--exmple-cua.de", "x@bücher.example", "x@xn--bcher-kva.example"}
	if len(emails) != len(want) {
		t.Fatalf("contacts %q, want %q", emails, want)
	}
	for i := range want {
		if emails[i] != want[i] {
			t.Fatalf("contacts %q, want %q", emails, want)
		}
	}
	c, err := db.ContactByEmail(ctx, acct, "müller@exämple.de")
	if err != nil {
		t.Fatal(err)
	}
	res := upsert(t, db, acct, store.ContactInput{Email: "MÜLLER@xn--exmple-cua.de", FirstName: ptr("Hans")})
	if res.Created || res.Contact.ID != c.ID {
		t.Errorf("upsert after the migration made %d, want %d", res.Contact.ID, c.ID)
	}
	var blocked []string
	if err := db.SelectContext(ctx, &blocked, `SELECT email FROM blocked_addresses WHERE account_id = $1 ORDER BY email`, acct); err != nil {
		t.Fatal(err)
	}
	if len(blocked) != 2 || blocked[0] != "y@xn--bcher-kva.example" || blocked[1] != "zoë@xn--bcher-kva.example" {
		t.Errorf("blocked %q", blocked)
	}
}
