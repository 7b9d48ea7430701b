package mailer

import (
	"errors"

	"github.com/rundbrief/rundbrief/store"
)

// Untracked renders one campaign without tracking, for the mails and views
// that are not a send: test mails and previews. It is the rendering half of
// those features; the services that own them (store/campaign) choose the
// recipients, the route and the daily limit.
type Untracked struct {
	cc    *compiledCampaign
	links LinkBuilder
	st    renderState
}

// CompileTestMail compiles c for test mails: the subject starts with "[TEST] ".
func CompileTestMail(c store.Campaign, assets *Assets, links LinkBuilder) (*Untracked, error) {
	return compileUntracked(c, links, composeOptions{SubjectPrefix: "[TEST] ", Assets: assets})
}

// CompilePreview compiles c for previews.
func CompilePreview(c store.Campaign, assets *Assets, links LinkBuilder) (*Untracked, error) {
	return compileUntracked(c, links, composeOptions{Assets: assets})
}

func compileUntracked(c store.Campaign, links LinkBuilder, opts composeOptions) (*Untracked, error) {
	cc, err := compileCampaign(c, opts)
	if err != nil {
		return nil, err
	}
	return &Untracked{cc: cc, links: links}, nil
}

// Message renders the mail for values from the route's sender. Its bodies
// live in the Untracked's buffers: send it before the next call.
func (u *Untracked) Message(values Recipient, route Route) (*Message, error) {
	return u.cc.message(&u.st, u.links, recipientData{recipientID: TestRecipientID, values: values}, route)
}

// Render renders subject, preheader, HTML and text for values.
func (u *Untracked) Render(values Recipient) (Rendered, error) {
	return u.cc.render(&u.st, u.links, recipientData{recipientID: TestRecipientID, values: values})
}

// SendErrorText is a send failure for the user: the server's reply when
// there is one.
func SendErrorText(err error) string {
	var se *SendError
	if errors.As(err, &se) && se.Reason != "" {
		return se.Reason
	}
	return err.Error()
}
