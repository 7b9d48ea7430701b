package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// This file is the content model every kind of mail shares (newsletters,
// single emails, test mails, and the story emails and sequence days that reuse
// it): MailContent, its one check against the account in the transaction that
// stores a mail (resolveContentTx: template_key, the starting-point copy,
// attachment_ids), and what the mailer needs to render it (MailAssets: the
// layout, the sender's identity, the attachments). The mailer's one render
// path is mailer.compileCampaign over a MailContent and its MailAssets.

// MailContent is the content of any mail: subject, preheader, html (with an
// optional plain-text part) or markdown, a template and attachments.
type MailContent struct {
	Subject       string
	Preheader     string
	HTML          string
	Text          string
	Markdown      string
	TemplateKey   string
	AttachmentIDs []int64
}

// HasBody reports whether the content has a body of its own.
func (mc MailContent) HasBody() bool {
	return strings.TrimSpace(mc.HTML) != "" || strings.TrimSpace(mc.Text) != "" || strings.TrimSpace(mc.Markdown) != ""
}

// Content returns the campaign's content.
func (c Campaign) Content() MailContent {
	return MailContent{Subject: c.Subject, Preheader: c.Preheader, HTML: c.HTML, Text: c.Text, Markdown: c.Markdown,
		TemplateKey: c.TemplateKey, AttachmentIDs: []int64(c.AttachmentIDs)}
}

// setContent writes mc onto the campaign.
func (c *Campaign) setContent(mc MailContent) {
	c.Subject, c.Preheader, c.HTML, c.Text, c.Markdown = mc.Subject, mc.Preheader, mc.HTML, mc.Text, mc.Markdown
	c.TemplateKey, c.AttachmentIDs = mc.TemplateKey, pq.Int64Array(mc.AttachmentIDs)
	if c.AttachmentIDs == nil {
		c.AttachmentIDs = pq.Int64Array{}
	}
}

// normContent checks the parts of a content that need no database.
func normContent(errs Errs, mc *MailContent) {
	if mc.TemplateKey != "" && !ValidTemplateKey(mc.TemplateKey) {
		errs.Add("template_key", "Diese Vorlage gibt es nicht.")
	}
	mc.AttachmentIDs = normIDs(errs, "attachment_ids", mc.AttachmentIDs)
	if len(mc.AttachmentIDs) > MaxMailAttachments {
		errs.Add("attachment_ids", fmt.Sprintf("Höchstens %d Anhänge pro E-Mail.", MaxMailAttachments))
	}
}

// resolveContentTx checks a mail's content against the account in the
// transaction that stores the mail, the same for every kind of mail:
// template_key names a template of the account (422 on template_key), and
// when that template is a starting point (no content slot) and the mail has
// no body of its own, its subject (when the mail has none), preheader (the
// same) and html are copied; attachment_ids are attachments of the account
// (422 on attachment_ids), locked against deletion until the commit.
// HTML of the rich-text editor (IsRichText) is sanitised here, so that no
// kind of mail stores it as the browser posted it.
func resolveContentTx(ctx context.Context, tx sqlx.QueryerContext, accountID int64, mc *MailContent, copyStart bool) error {
	if IsRichText(mc.HTML) {
		mc.HTML = SanitizeRichText(mc.HTML)
	}
	errs := Errs{}
	if mc.TemplateKey != "" {
		t, err := templateByKey(ctx, tx, accountID, mc.TemplateKey)
		switch {
		case errors.Is(err, ErrNotFound):
			errs.Add("template_key", fmt.Sprintf("Die Vorlage „%s“ gibt es nicht.", mc.TemplateKey))
		case err != nil:
			return err
		case copyStart && !t.IsLayout() && !mc.HasBody():
			mc.HTML = t.HTML
			if mc.Subject == "" {
				mc.Subject = t.Subject
			}
			if mc.Preheader == "" {
				mc.Preheader = t.Preheader
			}
		}
	}
	if len(mc.AttachmentIDs) > 0 {
		_, missing, err := attachmentsByID(ctx, tx, accountID, mc.AttachmentIDs, true)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			errs.Add("attachment_ids", unknownIDs("Den Anhang %d gibt es nicht.", "Diese Anhänge gibt es nicht: %s.", missing))
		}
	}
	return errs.Err()
}

// MailAssets is what rendering a mail's content needs besides the content:
// the layout it names (nil without one), the sender's identity, and the
// attachments' metadata (their bytes through WriteAttachment).
type MailAssets struct {
	Layout      *Template
	Sender      AccountSettings
	Attachments []Attachment
}

// MailAssets loads the assets of mc for the account. A template_key that no
// longer names a template, or an attachment that is gone, is a 422 on the
// field, so that a send of such a mail is refused rather than sent without.
func (db *DB) MailAssets(ctx context.Context, accountID int64, mc MailContent) (MailAssets, error) {
	var a MailAssets
	var err error
	if a.Sender, err = accountSettings(ctx, db, accountID); err != nil {
		return MailAssets{}, err
	}
	if mc.TemplateKey != "" {
		t, err := templateByKey(ctx, db, accountID, mc.TemplateKey)
		switch {
		case errors.Is(err, ErrNotFound):
			return MailAssets{}, Invalid("template_key", fmt.Sprintf("Die Vorlage „%s“ gibt es nicht.", mc.TemplateKey))
		case err != nil:
			return MailAssets{}, err
		case t.IsLayout():
			a.Layout = &t
		}
	}
	atts, missing, err := attachmentsByID(ctx, db, accountID, mc.AttachmentIDs, false)
	if err != nil {
		return MailAssets{}, err
	}
	if len(missing) > 0 {
		return MailAssets{}, Invalid("attachment_ids", unknownIDs("Den Anhang %d gibt es nicht.", "Diese Anhänge gibt es nicht: %s.", missing))
	}
	a.Attachments = atts
	return a, nil
}

// SendWarnings are the warnings of a marketing send for the account (codes,
// see AccountSettings.Warnings); transactional mail has none.
func (db *DB) SendWarnings(ctx context.Context, accountID int64, transactional bool) ([]string, error) {
	if transactional {
		return nil, nil
	}
	s, err := db.AccountSettings(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return s.Warnings(), nil
}

// checkStoredContentTx checks a stored mail's content again when its send is
// started or scheduled: its template and attachments may have been deleted
// while it was a draft. The attachments stay locked until the commit, so a
// delete then finds the mail scheduled or sending (409 in_use).
func checkStoredContentTx(ctx context.Context, tx sqlx.QueryerContext, c Campaign) error {
	mc := c.Content()
	return resolveContentTx(ctx, tx, c.AccountID, &mc, false)
}
