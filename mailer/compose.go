package mailer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/rundbrief/rundbrief/store"
)

// This file turns a campaign into messages: its content sources (HTML, text,
// Markdown), the tracked links, the open pixel and the preheader are put into
// the sources once, compiled once (placeholders.go), and each recipient's
// message is then a render of the compiled templates.
//
// Tracking rides on the placeholder engine: a tracked link's href becomes
// {{rb.click.N}} and the pixel's src {{rb.open}}, filled per recipient
// through Values.Custom. Request placeholders can never take these names
// (they allow only a-z, 0-9, _ and -), so nothing can spoof them.

// ErrNoContent means a campaign has no content of its own.
var ErrNoContent = errors.New("mailer: campaign has no content")

const (
	openPlaceholder  = "rb.open"
	clickPlaceholder = "rb.click."
)

// markdownPage wraps rendered Markdown into a minimal mail document.
const (
	markdownPageStart = `<!DOCTYPE html><html lang="de"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"></head>` +
		`<body style="margin:0;padding:24px;background:#ffffff;color:#111827;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:16px;line-height:1.6;">` +
		`<div style="max-width:600px;margin:0 auto;">`
	markdownPageEnd = `</div></body></html>`
)

// ContentSources returns a campaign's HTML and text source: Markdown becomes
// HTML (with the Markdown itself as the text part); HTML keeps its text
// part, if any; text alone has no HTML. ErrNoContent without content.
func ContentSources(c store.Campaign) (htmlSrc, textSrc string, err error) {
	switch {
	case strings.TrimSpace(c.Markdown) != "":
		h, err := MarkdownToHTML(c.Markdown)
		if err != nil {
			return "", "", err
		}
		return markdownPageStart + h + markdownPageEnd, c.Markdown, nil
	case strings.TrimSpace(c.HTML) != "":
		return c.HTML, c.Text, nil
	case strings.TrimSpace(c.Text) != "":
		return "", c.Text, nil
	}
	return "", "", ErrNoContent
}

// CampaignLinks returns the links of a campaign that clicks are tracked on,
// in document order: what campaign_links stores when the send starts.
func CampaignLinks(c store.Campaign) ([]store.LinkInput, error) {
	src, _, err := ContentSources(c)
	if err != nil || src == "" {
		return nil, err
	}
	spots := scanLinks(src)
	out := make([]store.LinkInput, len(spots))
	for i, s := range spots {
		out[i] = s.input()
	}
	return out, nil
}

// hrefSpot is the value of a tracked href in an HTML source.
type hrefSpot struct {
	start, end int    // the value's bytes in the source, without quotes
	quote      byte   // '"', '\'' or 0 (unquoted)
	raw        string // the value as written
}

func (s hrefSpot) personalized() bool { return strings.Contains(s.raw, "{{") }

// input is the link as campaign_links stores it: the address itself for a
// plain link (entities decoded: &amp; in a query is &), the value as written
// for a personalised one.
func (s hrefSpot) input() store.LinkInput {
	if s.personalized() {
		return store.LinkInput{URL: strings.TrimSpace(s.raw), Personalized: true}
	}
	return store.LinkInput{URL: html.UnescapeString(strings.TrimSpace(s.raw))}
}

// scanLinks finds the href values of <a> and <area> tags that are worth
// tracking: they start with http:// or https:// as written (not mailto:,
// anchors, the unsubscribe placeholder or a placeholder standing for a whole
// address), and the tag has no data-notrack attribute. Comments and the
// content of script and style are skipped.
func scanLinks(src string) []hrefSpot {
	var out []hrefSpot
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '<')
		if j < 0 {
			break
		}
		p := i + j
		if strings.HasPrefix(src[p:], "<!--") {
			k := strings.Index(src[p+4:], "-->")
			if k < 0 {
				break
			}
			i = p + 4 + k + 3
			continue
		}
		k := p + 1
		for k < len(src) && isASCIILetter(src[k]) {
			k++
		}
		name := strings.ToLower(src[p+1 : k])
		if name == "" {
			i = p + 1
			continue
		}
		if name == "script" || name == "style" {
			e := indexFold(src[k:], "</"+name)
			if e < 0 {
				break
			}
			i = k + e
			continue
		}
		attrs, end := scanAttrs(src, k)
		i = end
		if name != "a" && name != "area" {
			continue
		}
		var href *hrefSpot
		track := true
		for idx := range attrs {
			switch attrs[idx].name {
			case "href":
				if href == nil {
					href = &attrs[idx].hrefSpot
				}
			case "data-notrack":
				track = false
			}
		}
		if track && href != nil && trackable(href.raw) {
			out = append(out, *href)
		}
	}
	return out
}

type attr struct {
	name string
	hrefSpot
}

// scanAttrs reads the attributes of a tag whose name ends at k and returns
// them with the index after the tag's '>'.
func scanAttrs(src string, k int) ([]attr, int) {
	var attrs []attr
	i := k
	for i < len(src) {
		for i < len(src) && (isHTMLSpace(src[i]) || src[i] == '/') {
			i++
		}
		if i >= len(src) {
			return attrs, i
		}
		if src[i] == '>' {
			return attrs, i + 1
		}
		ns := i
		for i < len(src) && !isHTMLSpace(src[i]) && src[i] != '=' && src[i] != '>' && src[i] != '/' {
			i++
		}
		a := attr{name: strings.ToLower(src[ns:i])}
		for i < len(src) && isHTMLSpace(src[i]) {
			i++
		}
		if i < len(src) && src[i] == '=' {
			i++
			for i < len(src) && isHTMLSpace(src[i]) {
				i++
			}
			if i < len(src) && (src[i] == '"' || src[i] == '\'') {
				q := src[i]
				e := strings.IndexByte(src[i+1:], q)
				if e < 0 {
					return attrs, len(src)
				}
				a.hrefSpot = hrefSpot{start: i + 1, end: i + 1 + e, quote: q, raw: src[i+1 : i+1+e]}
				i = i + 1 + e + 1
			} else {
				vs := i
				for i < len(src) && !isHTMLSpace(src[i]) && src[i] != '>' {
					i++
				}
				a.hrefSpot = hrefSpot{start: vs, end: i, raw: src[vs:i]}
			}
		}
		attrs = append(attrs, a)
	}
	return attrs, i
}

func trackable(raw string) bool {
	v := strings.ToLower(strings.TrimSpace(raw))
	return strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "http://")
}

// indexFold is strings.Index ignoring ASCII case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// insertAfterBodyStart puts snippet right after the <body …> tag, or at the
// start without one.
func insertAfterBodyStart(src, snippet string) string {
	p := indexFold(src, "<body")
	if p >= 0 {
		if e := strings.IndexByte(src[p:], '>'); e >= 0 {
			return src[:p+e+1] + snippet + src[p+e+1:]
		}
	}
	return snippet + src
}

// insertBeforeBodyEnd puts snippet before the last </body>, or at the end.
func insertBeforeBodyEnd(src, snippet string) string {
	lower := strings.ToLower(src)
	if p := strings.LastIndex(lower, "</body"); p >= 0 {
		return src[:p] + snippet + src[p:]
	}
	return src + snippet
}

// preheaderHTML hides the preheader text at the top of the body: mail clients
// show it next to the subject in the inbox.
func preheaderHTML(preheader string) string {
	return `<div style="display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all;">` +
		html.EscapeString(preheader) + `</div>`
}

const openPixelHTML = `<img src="{{` + openPlaceholder + `}}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px;">`

// composeOptions say how a campaign is compiled.
type composeOptions struct {
	// Tracking turns on the open pixel and link rewriting as the campaign's
	// settings ask; off for test mails and previews.
	Tracking bool
	// Links are the campaign's stored links (their ids go into click tokens).
	Links []store.CampaignLink
	// SubjectPrefix is put before the subject ("[TEST] ").
	SubjectPrefix string
	// Assets are the layout, the sender's identity and the encoded
	// attachments (nil: none of them).
	Assets *Assets
}

// Assets are what a mail's content is rendered with besides itself, loaded
// once per send (LoadAssets): the layout its template_key names, the
// sender's identity for {{firma}} and {{impressum}}, and its attachments,
// encoded once.
type Assets struct {
	Layout      *store.Template
	Identity    Identity
	Attachments *AttachmentParts
	// FromName and ReplyTo are the account's defaults for mails that set
	// none.
	FromName, ReplyTo string
}

// assetSource is what LoadAssets reads: the store.
type assetSource interface {
	attachmentReader
	MailAssets(ctx context.Context, accountID int64, mc store.MailContent) (store.MailAssets, error)
}

// LoadAssets loads and encodes the assets of a mail's content for the
// account: the one preparation step of every kind of mail before it is
// compiled.
func LoadAssets(ctx context.Context, src assetSource, accountID int64, mc store.MailContent) (*Assets, error) {
	ma, err := src.MailAssets(ctx, accountID, mc)
	if err != nil {
		return nil, err
	}
	parts, err := EncodeAttachments(ctx, src, accountID, ma.Attachments)
	if err != nil {
		return nil, err
	}
	return &Assets{Layout: ma.Layout, Identity: Identity{Company: ma.Sender.Company, Imprint: ma.Sender.ImprintText()},
		Attachments: parts, FromName: ma.Sender.FromName, ReplyTo: ma.Sender.ReplyTo}, nil
}

// applyLayout puts a mail's HTML into the layout's content slot: the body of a
// whole document, or the HTML as it is.
func applyLayout(layout, content string) string {
	start, end := store.LayoutSlot(layout)
	if start < 0 {
		return content
	}
	return layout[:start] + bodyInner(content) + layout[end:]
}

// bodyInner is what lies between <body …> and the last </body>, or src
// without a body element.
func bodyInner(src string) string {
	p := indexFold(src, "<body")
	if p < 0 {
		return src
	}
	e := strings.IndexByte(src[p:], '>')
	if e < 0 {
		return src
	}
	inner := src[p+e+1:]
	if q := strings.LastIndex(strings.ToLower(inner), "</body"); q >= 0 {
		inner = inner[:q]
	}
	return inner
}

// textAsHTML shows a text-only content in a layout: escaped, line breaks kept.
func textAsHTML(text string) string {
	return `<div style="white-space:pre-wrap;">` + strings.ReplaceAll(html.EscapeString(text), "\n", "<br>\n") + `</div>`
}

// compiledCampaign is a campaign ready to render per recipient.
type compiledCampaign struct {
	c         store.Campaign
	subject   *Template
	preheader *Template
	html      *Template // nil for a text-only campaign
	text      *Template
	links     []compiledLink
	clickKeys []string // "rb.click.N" by link position
	openPixel bool
	headers   map[string]string
	// unsubscribeHeader sets List-Unsubscribe (not for transactional mail).
	unsubscribeHeader bool
	// variantB is the campaign's A/B test variant B (abtests.go), nil without.
	variantB *compiledCampaign
	// identity fills {{firma}} and {{impressum}}; attachments are the
	// send's encoded attachment parts (nil without).
	identity    Identity
	attachments *AttachmentParts
	// assets are what the campaign was compiled with (variant B reuses them).
	assets *Assets
}

// compiledLink is a tracked link: its id, and for a personalised link the
// template that renders its address.
type compiledLink struct {
	id   int64
	tmpl *Template // nil for a plain link
	pre  int       // length of the wrapper before the address in tmpl's output
}

const personalizedLinkPrefix, personalizedLinkSuffix = `<a href="`, `">`

// compileCampaign compiles a campaign once for all its recipients.
func compileCampaign(c store.Campaign, opts composeOptions) (*compiledCampaign, error) {
	htmlSrc, textSrc, err := ContentSources(c)
	if err != nil {
		return nil, err
	}
	assets := opts.Assets
	if assets == nil {
		assets = &Assets{}
	}
	cc := &compiledCampaign{c: c, unsubscribeHeader: !c.Transactional(), identity: assets.Identity,
		attachments: assets.Attachments, assets: assets, headers: map[string]string{"X-Rundbrief-Campaign": strconv.FormatInt(c.ID, 10)}}
	// Marketing mail carries the unsubscribe line and the imprint unless its
	// content (or layout) has their placeholders.
	appendUnsub := CompileOptions{AppendUnsubscribe: !c.Transactional(),
		AppendImprint: !c.Transactional() && assets.Identity.Imprint != ""}
	preheader := c.Preheader
	if preheader == "" && assets.Layout != nil {
		preheader = assets.Layout.Preheader
	}
	cc.subject = Compile(opts.SubjectPrefix+c.Subject, KindText, CompileOptions{})
	cc.preheader = Compile(preheader, KindText, CompileOptions{})
	if htmlSrc == "" && assets.Layout != nil {
		htmlSrc = textAsHTML(textSrc)
	}
	if htmlSrc != "" {
		// Links are tracked in the mail's own content (the positions
		// CampaignLinks stored), the layout's stay as they are.
		if opts.Tracking && c.TrackClicks {
			htmlSrc = cc.rewriteLinks(htmlSrc, opts.Links)
		}
		if assets.Layout != nil {
			htmlSrc = applyLayout(assets.Layout.HTML, htmlSrc)
		}
		if textSrc == "" {
			textSrc = TextFromHTML(htmlSrc)
		}
		if preheader != "" {
			htmlSrc = insertAfterBodyStart(htmlSrc, preheaderHTML(preheader))
		}
		if opts.Tracking && c.TrackOpens {
			htmlSrc = insertBeforeBodyEnd(htmlSrc, openPixelHTML)
			cc.openPixel = true
		}
		cc.html = Compile(htmlSrc, KindHTML, appendUnsub)
		cc.html.BakeSender(assets.Identity)
	}
	cc.text = Compile(textSrc, KindText, appendUnsub)
	cc.text.BakeSender(assets.Identity)
	cc.text.PrepareQP()
	if cc.html != nil {
		cc.html.PrepareQP()
	}
	cc.subject.BakeSender(assets.Identity)
	cc.preheader.BakeSender(assets.Identity)
	return cc, nil
}

// rewriteLinks replaces the tracked hrefs of src by click placeholders. A
// link is tracked only when the stored link at its position is the same link
// (the stored list is made from the same source, so it always is).
func (cc *compiledCampaign) rewriteLinks(src string, stored []store.CampaignLink) string {
	spots := scanLinks(src)
	if len(spots) == 0 || len(stored) == 0 {
		return src
	}
	var b strings.Builder
	b.Grow(len(src) + 16*len(spots))
	last := 0
	for i, s := range spots {
		if i >= len(stored) || stored[i].URL != s.input().URL {
			continue
		}
		key := clickPlaceholder + strconv.Itoa(i)
		for len(cc.clickKeys) < i {
			cc.clickKeys = append(cc.clickKeys, "")
			cc.links = append(cc.links, compiledLink{})
		}
		cl := compiledLink{id: stored[i].ID}
		if s.personalized() {
			cl.tmpl = Compile(personalizedLinkPrefix+strings.TrimSpace(s.raw)+personalizedLinkSuffix, KindHTML, CompileOptions{})
			cl.pre = len(personalizedLinkPrefix)
			if s.quote == '\'' {
				// The value may hold a '"' it could not hold in double quotes.
				cl.tmpl = Compile(`<a href='`+strings.TrimSpace(s.raw)+`'>`, KindHTML, CompileOptions{})
			}
		}
		cc.clickKeys = append(cc.clickKeys, key)
		cc.links = append(cc.links, cl)
		b.WriteString(src[last:s.start])
		b.WriteString("{{" + key + "}}")
		last = s.end
	}
	b.WriteString(src[last:])
	return b.String()
}

// recipientData is who a message goes to: the recipient row (0 for a test
// mail or preview) and the placeholder values.
type recipientData struct {
	recipientID int64
	values      Recipient
}

// renderState holds the buffers of one rendering goroutine, reused for every
// message it renders.
type renderState struct {
	subject, preheader, html, text, link bytes.Buffer
	// htmlQP and textQP are the bodies as a send renders them, already
	// quoted-printable encoded (Template.AppendQPTo); scratch is its buffer
	// for a value.
	htmlQP, textQP, scratch []byte
	vals                    Values
	custom                  map[string]string
}

// setCustom starts the per-recipient Custom map from the request
// placeholders.
func (st *renderState) setCustom(request map[string]string) {
	if st.custom == nil {
		st.custom = make(map[string]string, len(request)+8)
	}
	clear(st.custom)
	for k, v := range request {
		st.custom[k] = v
	}
	st.vals.Custom = st.custom
}

// Rendered is one recipient's message parts.
type Rendered struct {
	Subject, Preheader, HTML, Text string
}

// render fills the templates for one recipient. links builds the token URLs;
// the unsubscribe URL is always set (it fills {{abmelde_link}}).
func (cc *compiledCampaign) render(st *renderState, links LinkBuilder, r recipientData) (Rendered, error) {
	if err := cc.fill(st, links, r); err != nil {
		return Rendered{}, err
	}
	return Rendered{Subject: st.subject.String(), Preheader: st.preheader.String(), HTML: st.html.String(),
		Text: st.text.String()}, nil
}

// fill renders one recipient's subject, preheader, HTML and text into st's
// buffers (HTML empty for a text-only campaign).
func (cc *compiledCampaign) fill(st *renderState, links LinkBuilder, r recipientData) error {
	if err := cc.fillHead(st, links, r); err != nil {
		return err
	}
	st.html.Reset()
	if cc.html != nil {
		if err := cc.html.Render(&st.html, &st.vals); err != nil {
			return err
		}
	}
	return renderInto(&st.text, cc.text, &st.vals)
}

// fillQP is fill for a send: the HTML and text go into st.htmlQP and
// st.textQP, encoded as the message carries them.
func (cc *compiledCampaign) fillQP(st *renderState, links LinkBuilder, r recipientData) error {
	if err := cc.fillHead(st, links, r); err != nil {
		return err
	}
	var err error
	st.htmlQP = st.htmlQP[:0]
	if cc.html != nil {
		if st.htmlQP, st.scratch, err = cc.html.AppendQPTo(st.htmlQP, st.scratch, &st.vals); err != nil {
			return err
		}
	}
	st.textQP, st.scratch, err = cc.text.AppendQPTo(st.textQP[:0], st.scratch, &st.vals)
	return err
}

// fillHead sets st's values for one recipient and renders the subject and
// preheader.
func (cc *compiledCampaign) fillHead(st *renderState, links LinkBuilder, r recipientData) error {
	st.setCustom(cc.c.Placeholders)
	st.vals.Recipient = r.values
	st.vals.Sender = cc.identity
	st.vals.Recipient.UnsubscribeURL = links.UnsubscribeURL(r.recipientID)
	if cc.openPixel {
		st.custom[openPlaceholder] = links.OpenURL(r.recipientID)
	}
	for i, key := range cc.clickKeys {
		if key == "" {
			continue
		}
		l := cc.links[i]
		personal := ""
		if l.tmpl != nil {
			st.link.Reset()
			if err := l.tmpl.Render(&st.link, &st.vals); err != nil {
				return err
			}
			b := st.link.Bytes()
			personal = html.UnescapeString(string(b[l.pre : len(b)-len(personalizedLinkSuffix)]))
		}
		st.custom[key] = links.ClickURL(r.recipientID, l.id, personal)
	}
	if err := renderInto(&st.subject, cc.subject, &st.vals); err != nil {
		return err
	}
	return renderInto(&st.preheader, cc.preheader, &st.vals)
}

func renderInto(buf *bytes.Buffer, t *Template, v *Values) error {
	buf.Reset()
	return t.Render(buf, v)
}

// message renders the message for one recipient, from the route's sender.
func (cc *compiledCampaign) message(st *renderState, links LinkBuilder, r recipientData, route Route) (*Message, error) {
	if err := cc.fillQP(st, links, r); err != nil {
		return nil, err
	}
	encoded := len(st.textQP) > 0
	if !encoded {
		// An empty text part is derived from the HTML, which takes the
		// HTML as rendered.
		if err := cc.fill(st, links, r); err != nil {
			return nil, err
		}
	}
	from := route.From
	replyTo := cc.c.ReplyTo
	switch {
	case cc.c.FromName != "":
		from.Name = cc.c.FromName
	case cc.assets.FromName != "":
		from.Name = cc.assets.FromName
	}
	if replyTo == "" {
		replyTo = cc.assets.ReplyTo
	}
	m := &Message{
		From:        from,
		To:          Address{Name: strings.TrimSpace(r.values.FirstName + " " + r.values.LastName), Email: r.values.Email},
		ReplyTo:     replyTo,
		Subject:     st.subject.String(),
		Headers:     cc.headers,
		attachments: cc.attachments,
	}
	// The bodies stay in st's buffers: the sender renders the message
	// before st renders the next one, so a copy would be garbage at once.
	if encoded {
		m.htmlQP, m.textQP = st.htmlQP, st.textQP
	} else {
		m.htmlBody, m.textBody = st.html.Bytes(), st.text.Bytes()
	}
	if cc.unsubscribeHeader {
		m.UnsubscribeURL = st.vals.Recipient.UnsubscribeURL
	}
	return m, nil
}

// SampleRecipient personalises test mails and previews when no contact fits.
func SampleRecipient() Recipient {
	return Recipient{FirstName: "Max", LastName: "Mustermann", Email: "max.mustermann@example.com",
		Address: "Musterstraße 1", Zip: "10115", City: "Berlin", Phone: "+49 30 1234567"}
}

// RecipientOf is the placeholder data of a contact.
func RecipientOf(c store.Contact) Recipient {
	return Recipient{FirstName: c.FirstName, LastName: c.LastName, Email: c.Email, Address: c.Address, Zip: c.Zip,
		City: c.City, Phone: c.Phone, Note: c.Note, CustomFields: c.CustomFields.Strings()}
}

// queuedRecipientData is the placeholder data of a claimed recipient.
func queuedRecipientData(q *store.QueuedRecipient) (recipientData, error) {
	cf, err := q.CustomFieldStrings()
	if err != nil {
		return recipientData{}, fmt.Errorf("mailer: custom fields of recipient %d: %w", q.ID, err)
	}
	return recipientData{recipientID: q.ID, values: Recipient{FirstName: q.FirstName, LastName: q.LastName, Email: q.Email,
		Address: q.Address, Zip: q.Zip, City: q.City, Phone: q.Phone, Note: q.Note, CustomFields: cf}}, nil
}
