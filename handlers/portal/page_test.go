package portal_test

import (
	"context"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestHugePageNeverAnswers500 (issue 27): a page number whose offset would
// overflow shows a page of the list on every paged portal list, never a 500.
func TestHugePageNeverAnswers500(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	if _, err := s.db.UpsertContact(context.Background(), acct.ID, store.Actor{Type: store.ActorSystem}, store.ContactInput{Email: "a@example.org"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	for _, path := range []string{
		"/contacts", "/lists", "/newsletters", "/forms", "/ab-tests", "/smtp-servers", "/webhooks",
		"/logs/api", "/logs/activity", "/dev/outbox", "/contacts/export",
	} {
		for _, page := range []string{"9223372036854775807", "-9223372036854775808", "1000001", "99999999999999999999"} {
			if r := c.get(path + "?page=" + page); r.StatusCode >= 500 {
				t.Errorf("%s?page=%s → %d", path, page, r.StatusCode)
			}
		}
	}
}

// TestHostileFilterValuesNeverAnswer500 (issue 27): NUL bytes, invalid UTF-8 and
// out-of-range numbers in the portal's list filters and paths show the page or
// its error, never a 500.
func TestHostileFilterValuesNeverAnswer500(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.URL(t), nil, base)
	acct := newAccount(t, s.db, "")
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	for _, path := range []string{"/contacts", "/lists", "/newsletters", "/forms", "/ab-tests", "/smtp-servers", "/webhooks", "/logs/api", "/logs/activity", "/dev/outbox", "/contacts/export", "/contacts/count"} {
		for _, q := range []string{"q=%00", "q=%FF", "tag=%00", "path=%00", "method=%00", "status=%00", "object_type=%00", "action=%00", "path=%FF", "path=a%C3", "list_id=99999999999999999999", "status=a%00", "key_id=9999999999999"} {
			if r := c.get(path + "?" + q); r.StatusCode >= 500 {
				t.Errorf("%s?%s → %d", path, q, r.StatusCode)
			}
		}
	}
	for _, p := range []string{"/contacts/1%00", "/lists/%00", "/newsletters/99999999999999999999", "/dev/outbox/%FF"} {
		if r := c.get(p); r.StatusCode >= 500 {
			t.Errorf("%s → %d", p, r.StatusCode)
		}
	}
}
