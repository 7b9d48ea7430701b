package public_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// recipient queues email as a recipient of a new newsletter campaign, the way the
// send pipeline records it, and returns the recipient and campaign ids.
func (s *site) recipient(t *testing.T, email string, contactID int64) (int64, int64) {
	t.Helper()
	ctx := context.Background()
	var campaignID, recipientID int64
	if err := s.db.GetContext(ctx, &campaignID, `INSERT INTO campaigns (account_id, kind, type) VALUES ($1, 'newsletter', 'newsletter') RETURNING id`, s.acct); err != nil {
		t.Fatal(err)
	}
	var contact any
	if contactID != 0 {
		contact = contactID
	}
	if err := s.db.GetContext(ctx, &recipientID, `INSERT INTO campaign_recipients (account_id, campaign_id, contact_id, email, status)
		VALUES ($1, $2, $3, $4, 'sent') RETURNING id`, s.acct, campaignID, contact, email); err != nil {
		t.Fatal(err)
	}
	return recipientID, campaignID
}

func TestUnsubscribeLink(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	res, err := s.db.UpsertContact(ctx, s.acct, store.Actor{Type: store.ActorKey, ID: 1}, store.ContactInput{Email: "leser@example.com"})
	if err != nil || res.Contact.Status != store.StatusSubscribed {
		t.Fatalf("contact: %+v %v", res, err)
	}
	recipientID, campaignID := s.recipient(t, "leser@example.com", res.Contact.ID)
	path := "/unsubscribe/" + s.tokens.Unsubscribe(recipientID)

	// GET asks and changes nothing: mail scanners open links.
	ask := s.get(t, path)
	if ask.status != 200 || ask.doc.Find(`[data-testid="unsubscribe-page"]`).AttrOr("data-outcome", "") != "ask" ||
		ask.doc.Find(`[data-testid="unsubscribe-form"]`).AttrOr("action", "") != path || ask.header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("GET: %d %s", ask.status, ask.doc.Text())
	}
	if n := s.count(t, `SELECT count(*) FROM blocked_addresses WHERE account_id = $1`, s.acct); n != 0 {
		t.Fatalf("GET blocked %d addresses", n)
	}

	// RFC 8058 one-click, as a mail provider sends it.
	if st, _ := s.postForm(t, path, "List-Unsubscribe=One-Click"); st != 200 {
		t.Fatalf("one-click POST: %d", st)
	}
	c, err := s.db.Contact(ctx, s.acct, res.Contact.ID)
	if err != nil || c.Status != store.StatusUnsubscribed {
		t.Fatalf("after one-click: %+v %v", c, err)
	}
	if blocked, _ := s.db.IsBlocked(ctx, s.acct, "leser@example.com"); !blocked {
		t.Error("address not blocked")
	}
	var payload []byte
	if err := s.db.GetContext(ctx, &payload, `SELECT payload FROM events WHERE account_id = $1 AND name = 'contact.unsubscribed'`, s.acct); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Email      string `json:"email"`
		Source     string `json:"source"`
		CampaignID int64  `json:"campaign_id"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil || ev.Email != "leser@example.com" || ev.Source != store.UnsubOneClick || ev.CampaignID != campaignID {
		t.Errorf("contact.unsubscribed payload %s", payload)
	}
	// Again: already unsubscribed, no second event.
	if again := s.get(t, path); again.doc.Find(`[data-testid="unsubscribe-page"]`).AttrOr("data-outcome", "") != "already" {
		t.Errorf("second visit: %s", again.doc.Text())
	}
	if st, _ := s.postForm(t, path, ""); st != 200 {
		t.Errorf("second POST: %d", st)
	}
	if n := s.count(t, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'contact.unsubscribed'`, s.acct); n != 1 {
		t.Errorf("%d contact.unsubscribed events, want 1", n)
	}

	// A single email to an address that is no contact: the address is blocked.
	stranger, _ := s.recipient(t, "fremd@example.com", 0)
	if st, _ := s.postForm(t, "/unsubscribe/"+s.tokens.Unsubscribe(stranger), ""); st != 200 {
		t.Fatalf("stranger POST: %d", st)
	}
	if blocked, _ := s.db.IsBlocked(ctx, s.acct, "fremd@example.com"); !blocked {
		t.Error("stranger's address not blocked")
	}

	// A test mail's link unsubscribes nobody; a forged token is 404.
	if test := s.get(t, "/unsubscribe/"+s.tokens.Unsubscribe(0)); test.status != 200 ||
		test.doc.Find(`[data-testid="unsubscribe-page"]`).AttrOr("data-outcome", "") != "test" {
		t.Errorf("test link: %d", test.status)
	}
	forged := path[:len(path)-2] + "xx"
	if p := s.get(t, forged); p.status != 404 {
		t.Errorf("forged token: %d", p.status)
	}
	if st, _ := s.postForm(t, forged, "List-Unsubscribe=One-Click"); st != 404 {
		t.Errorf("forged token POST: %d", st)
	}
}
