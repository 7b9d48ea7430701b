package store

import (
	"context"
	"errors"
)

// LinkUnsubscribe is what an unsubscribe link in a mail shows and does for its
// recipient: the address and whether it is unsubscribed already.
type LinkUnsubscribe struct {
	Email   string
	Already bool
}

// UnsubscribeLinkState reads the state behind an unsubscribe link. The recipient
// comes from a signed token, so it is looked up by id alone; everything after
// that acts within the recipient's account. An unsubscribed contact's address is
// always on the blocked list, so the list answers for contacts and for single
// emails to addresses that are no contact alike.
func (db *DB) UnsubscribeLinkState(ctx context.Context, recipientID int64) (LinkUnsubscribe, error) {
	rec, err := db.Recipient(ctx, recipientID)
	if err != nil {
		return LinkUnsubscribe{}, err
	}
	blocked, err := db.IsBlocked(ctx, rec.AccountID, rec.Email)
	if err != nil {
		return LinkUnsubscribe{}, err
	}
	return LinkUnsubscribe{Email: rec.Email, Already: blocked}, nil
}

// UnsubscribeByLink unsubscribes the recipient of a mail: its contact (event
// contact.unsubscribed with the campaign) or, for an address that is no contact,
// the address itself goes on the blocked list. source is UnsubLink for the page's
// button and UnsubOneClick for an RFC 8058 one-click request.
func (db *DB) UnsubscribeByLink(ctx context.Context, recipientID int64, source string) (LinkUnsubscribe, error) {
	state, err := db.UnsubscribeLinkState(ctx, recipientID)
	if err != nil || state.Already {
		return state, err
	}
	rec, err := db.Recipient(ctx, recipientID)
	if err != nil {
		return LinkUnsubscribe{}, err
	}
	actor := Actor{Type: ActorPublic}
	u := Unsubscribe{Source: source, CampaignID: rec.CampaignID}
	if rec.ContactID != 0 {
		_, err = db.UnsubscribeContact(ctx, rec.AccountID, actor, rec.ContactID, u)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return state, err
		}
		// The contact was deleted since the mail went out: block the address.
	}
	_, err = db.BlockAddresses(ctx, rec.AccountID, actor, []string{rec.Email}, u)
	return state, err
}
