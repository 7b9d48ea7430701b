// Package inbox is the home of the connected IMAP inbox: its Service is the
// one entry the API and the portal call to connect a mailbox, sync it, change
// messages (with \Seen written back), reply, draft replies with the AI and run
// the rules; its Worker syncs every connected account every five minutes,
// claimed once across processes. Rows and statements live in store (inbox.go).
package inbox

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/jmoiron/sqlx"
	"github.com/microcosm-cc/bluemonday"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/secret"
)

// Guard keeps IMAP connections off non-public addresses: the accounts' SMTP
// servers' rule (smtpserver.Service), checked on saving and on every dial.
type Guard interface {
	CheckHost(ctx context.Context, host string) string
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Config configures a Service.
type Config struct {
	Box   *secret.Box
	Guard Guard
	// Opener sends replies (the account's SMTP route); nil: replies fail.
	Opener mailer.Opener
	// AI drafts replies; nil: drafts are unavailable.
	AI *ai.Service
	// TLSConfig is the base TLS configuration (tests inject RootCAs).
	TLSConfig *tls.Config
	// Timeout bounds connecting and each step of the connection test: 20 s.
	Timeout time.Duration
	// Lease is how long a sync holds its claim without renewing: 2 minutes.
	Lease time.Duration
	// Batch is how many messages one transaction stores: 200.
	Batch int
	Log   *slog.Logger
}

// Service is the inbox.
type Service struct {
	db     *store.DB
	cfg    Config
	owner  string
	policy *bluemonday.Policy
	wake   chan struct{}
}

var (
	errNoBox    = errors.New("inbox: no secret box configured")
	errNoGuard  = errors.New("inbox: no address guard configured")
	errNoOpener = errors.New("inbox: no mail opener configured")
)

// New returns the service.
func New(db *store.DB, cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 200
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	return &Service{db: db, cfg: cfg, owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8]),
		policy: bluemonday.UGCPolicy(), wake: make(chan struct{}, 1)}
}

// ---- settings ----

// SaveSettings tests the connection with the new settings (the stored
// password when none is given) and stores them only when it works: otherwise
// a ValidationError naming the failed step (Verbindung, TLS, Anmeldung, Ordner).
func (s *Service) SaveSettings(ctx context.Context, accountID int64, in store.InboxSettingsInput) (store.InboxSettings, error) {
	if s.cfg.Box == nil {
		return store.InboxSettings{}, errNoBox
	}
	if s.cfg.Guard == nil {
		return store.InboxSettings{}, errNoGuard
	}
	if err := in.Validate(); err != nil {
		return store.InboxSettings{}, err
	}
	password := ""
	if in.Password != nil {
		password = *in.Password
	} else {
		p, err := s.db.InboxPassword(ctx, s.cfg.Box, accountID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.InboxSettings{}, err
		}
		password = p
	}
	if err := s.test(ctx, connConfig{Host: in.Host, Port: in.Port, Username: in.Username, Password: password,
		Encryption: in.Encryption, Folder: in.Folder}); err != nil {
		return store.InboxSettings{}, err
	}
	out, err := s.db.SaveInboxSettings(ctx, s.cfg.Box, accountID, in)
	if err == nil {
		s.Wake()
	}
	return out, err
}

// test runs the connection test; a failed step is a ValidationError.
func (s *Service) test(ctx context.Context, cfg connConfig) error {
	ses, err := s.open(ctx, cfg)
	if err != nil {
		var se *StepError
		if errors.As(err, &se) {
			return store.WithHint(se.Validation(), se.Error())
		}
		return err
	}
	ses.close()
	return nil
}

// TestSettings tests the stored connection (the portal's button); nil when it works.
func (s *Service) TestSettings(ctx context.Context, accountID int64) error {
	cfg, _, err := s.connection(ctx, accountID)
	if err != nil {
		return err
	}
	return s.test(ctx, cfg)
}

func (s *Service) connection(ctx context.Context, accountID int64) (connConfig, store.InboxSettings, error) {
	if s.cfg.Box == nil {
		return connConfig{}, store.InboxSettings{}, errNoBox
	}
	if s.cfg.Guard == nil {
		return connConfig{}, store.InboxSettings{}, errNoGuard
	}
	st, err := s.db.InboxSettings(ctx, accountID)
	if err != nil {
		return connConfig{}, store.InboxSettings{}, err
	}
	pw, err := s.db.InboxPassword(ctx, s.cfg.Box, accountID)
	if err != nil {
		return connConfig{}, store.InboxSettings{}, err
	}
	return connConfig{Host: st.Host, Port: st.Port, Username: st.Username, Password: pw, Encryption: st.Encryption, Folder: st.Folder}, st, nil
}

// ---- sync ----

// RequestSync makes the account's sync due now and wakes this process's
// worker (POST /inbox/sync); whichever process claims it syncs.
func (s *Service) RequestSync(ctx context.Context, accountID int64) error {
	if err := s.db.RequestInboxSync(ctx, accountID); err != nil {
		return err
	}
	s.Wake()
	return nil
}

// Wake makes the worker look for due syncs now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SyncResult is what one sync did.
type SyncResult struct {
	Fetched int  // messages read from the server
	New     int  // messages stored (the rest were known)
	Skipped bool // another process holds the account's sync
}

// Sync claims the account's sync (unless another process holds it) and runs
// it now: new messages by UID since the last sync, read with BODY.PEEK so that
// nothing is marked seen, stored in batches with their inbox.received events;
// then the read flags waiting for write-back and the new messages' rules.
func (s *Service) Sync(ctx context.Context, accountID int64) (SyncResult, error) {
	ok, err := s.db.ClaimInbox(ctx, accountID, s.owner, s.cfg.Lease)
	if err != nil {
		return SyncResult{}, err
	}
	if !ok {
		return SyncResult{Skipped: true}, nil
	}
	return s.syncClaimed(ctx, accountID)
}

func (s *Service) syncClaimed(ctx context.Context, accountID int64) (SyncResult, error) {
	res, err := s.syncMailbox(ctx, accountID)
	msg := ""
	if err != nil {
		msg = err.Error()
		var se *StepError
		if errors.As(err, &se) {
			msg = se.Message
		}
	}
	if rerr := s.db.ReleaseInbox(context.WithoutCancel(ctx), accountID, s.owner, store.InboxSyncInterval, msg); rerr != nil && err == nil {
		err = rerr
	}
	if err == nil {
		err = s.ProcessPending(ctx, accountID)
	}
	return res, err
}

func (s *Service) syncMailbox(ctx context.Context, accountID int64) (SyncResult, error) {
	var res SyncResult
	cfg, st, err := s.connection(ctx, accountID)
	if err != nil {
		return res, err
	}
	ses, err := s.open(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer ses.close()
	validity := int64(ses.mbox.UIDValidity)
	lastUID := st.LastUID
	if validity != st.UIDValidity {
		if err := s.db.ResetInboxValidity(ctx, accountID, s.owner, validity); err != nil {
			return res, err
		}
		lastUID = 0
	}
	if err := s.writeBackSeen(ctx, ses, accountID, cfg.Folder, validity); err != nil {
		s.cfg.Log.Warn("inbox seen write-back", "account_id", accountID, "err", err)
	}
	if ses.mbox.NumMessages == 0 || (ses.mbox.UIDNext != 0 && int64(ses.mbox.UIDNext) <= lastUID+1) {
		return res, nil
	}
	var set imap.UIDSet
	set.AddRange(imap.UID(lastUID+1), 0)
	cmd := ses.c.Fetch(set, &imap.FetchOptions{UID: true, Flags: true, InternalDate: true,
		BodySection: []*imap.FetchItemBodySection{{Peek: true}}})
	batch := make([]store.NewInboxMessage, 0, s.cfg.Batch)
	maxUID := lastUID
	flush := func() error {
		ids, err := s.db.StoreInboxMessages(ctx, accountID, s.owner, cfg.Folder, validity, maxUID, s.cfg.Lease, batch)
		if err != nil {
			return err
		}
		res.New += len(ids)
		batch = batch[:0]
		return nil
	}
	for {
		msg := cmd.Next()
		if msg == nil {
			break
		}
		var (
			m        store.NewInboxMessage
			uid      int64
			internal time.Time
			seen     bool
			gotBody  bool
		)
		for {
			item := msg.Next()
			if item == nil {
				break
			}
			switch it := item.(type) {
			case imapclient.FetchItemDataUID:
				uid = int64(it.UID)
			case imapclient.FetchItemDataFlags:
				for _, f := range it.Flags {
					if f == imap.FlagSeen {
						seen = true
					}
				}
			case imapclient.FetchItemDataInternalDate:
				internal = it.Time
			case imapclient.FetchItemDataBodySection:
				if it.Literal != nil {
					m = parseMessage(it.Literal, s.policy)
					gotBody = true
				}
			}
		}
		if uid <= lastUID || !gotBody {
			continue // UID FETCH n:* answers the last message even when it is older
		}
		m.UID, m.Seen = uid, seen
		m.ReceivedAt = receivedAt(internal, m.ReceivedAt)
		batch = append(batch, m)
		res.Fetched++
		maxUID = max(maxUID, uid)
		if len(batch) >= s.cfg.Batch {
			if err := flush(); err != nil {
				_ = cmd.Close()
				return res, err
			}
		}
	}
	if err := cmd.Close(); err != nil {
		return res, fmt.Errorf("inbox: fetch: %w", err)
	}
	if len(batch) > 0 || maxUID > lastUID {
		if err := flush(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// writeBackSeen writes the read flags changed in Rundbrief to the server.
func (s *Service) writeBackSeen(ctx context.Context, ses *session, accountID int64, folder string, validity int64) error {
	for {
		pending, err := s.db.UnsyncedSeen(ctx, accountID, 500)
		if err != nil || len(pending) == 0 {
			return err
		}
		var add, del imap.UIDSet
		for _, p := range pending {
			if p.Folder != folder || p.UIDValidity != validity {
				continue // the message's place is gone; nothing to write
			}
			if p.Read {
				add.AddNum(imap.UID(p.UID))
			} else {
				del.AddNum(imap.UID(p.UID))
			}
		}
		for _, op := range []struct {
			set imap.UIDSet
			op  imap.StoreFlagsOp
		}{{add, imap.StoreFlagsAdd}, {del, imap.StoreFlagsDel}} {
			if len(op.set) == 0 {
				continue
			}
			if err := ses.c.Store(op.set, &imap.StoreFlags{Op: op.op, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close(); err != nil {
				return fmt.Errorf("inbox: store \\Seen: %w", err)
			}
		}
		for _, p := range pending {
			if err := s.db.MarkSeenSynced(ctx, accountID, p.ID, p.Read); err != nil {
				return err
			}
		}
		if len(pending) < 500 {
			return nil
		}
	}
}

// WriteBackSeen connects and writes the waiting read flags now (after a
// PATCH); the next sync retries what fails here.
func (s *Service) WriteBackSeen(ctx context.Context, accountID int64) error {
	cfg, _, err := s.connection(ctx, accountID)
	if err != nil {
		return err
	}
	ses, err := s.open(ctx, cfg)
	if err != nil {
		return err
	}
	defer ses.close()
	return s.writeBackSeen(ctx, ses, accountID, cfg.Folder, int64(ses.mbox.UIDValidity))
}

// ---- messages ----

// Patch changes a message (read, archived, labels) and writes a changed read
// flag back to the server as \Seen; when the server cannot be reached the
// change stays and the next sync writes it.
func (s *Service) Patch(ctx context.Context, accountID, id int64, p store.InboxPatch) (store.InboxMessage, error) {
	if err := p.Validate(); err != nil {
		return store.InboxMessage{}, err
	}
	m, err := s.db.PatchInboxMessage(ctx, accountID, id, p)
	if err != nil {
		return store.InboxMessage{}, err
	}
	if !m.SeenSynced {
		if err := s.WriteBackSeen(ctx, accountID); err != nil {
			s.cfg.Log.Warn("inbox seen write-back", "account_id", accountID, "err", err)
		} else {
			m.SeenSynced = true
		}
	}
	return m, nil
}

// ---- replies ----

// ReplyInput is the body of POST /inbox/messages/{id}/reply.
type ReplyInput struct {
	Text string
	HTML string
}

func (in *ReplyInput) validate() error {
	errs := store.Errs{}
	if strings.TrimSpace(in.Text) == "" && strings.TrimSpace(in.HTML) == "" {
		errs.Add("text", "Bitte den Text der Antwort angeben (text oder html).")
	}
	if len(in.Text) > 200_000 {
		errs.Add("text", "Die Antwort ist zu lang (höchstens 200.000 Zeichen).")
	}
	if len(in.HTML) > 500_000 {
		errs.Add("html", "Die Antwort ist zu lang (höchstens 500.000 Zeichen).")
	}
	return errs.Err()
}

// Reply answers a message through the account's SMTP route with In-Reply-To,
// References and the signature, records it (replied_at, inbox.replied with
// source) and appends it to the server's Sent folder when there is one.
func (s *Service) Reply(ctx context.Context, accountID, id int64, in ReplyInput) (store.InboxReply, error) {
	if err := in.validate(); err != nil {
		return store.InboxReply{}, err
	}
	m, err := s.db.InboxMessage(ctx, accountID, id)
	if err != nil {
		return store.InboxReply{}, err
	}
	return s.reply(ctx, m, in, store.ReplySourceUser, 0)
}

func replySubject(subject string) string {
	l := strings.ToLower(strings.TrimSpace(subject))
	if strings.HasPrefix(l, "re:") || strings.HasPrefix(l, "aw:") {
		return subject
	}
	return "Re: " + subject
}

func (s *Service) reply(ctx context.Context, m store.InboxMessage, in ReplyInput, source string, draftID int64) (store.InboxReply, error) {
	if s.cfg.Opener == nil {
		return store.InboxReply{}, errNoOpener
	}
	if m.FromEmail == "" || !store.ValidEmail(m.FromEmail) {
		return store.InboxReply{}, store.Invalid("to", "Die Nachricht hat keine gültige Absenderadresse, an die geantwortet werden könnte.")
	}
	st, err := s.db.InboxSettings(ctx, m.AccountID)
	if err != nil {
		return store.InboxReply{}, err
	}
	var serverID int64
	if st.SMTPServerID != nil {
		serverID = *st.SMTPServerID
	}
	sender, route, err := s.cfg.Opener.Open(ctx, m.AccountID, serverID)
	if err != nil {
		return store.InboxReply{}, err
	}
	defer sender.Close()
	from := route.From
	if st.FromEmail != "" {
		from.Email = st.FromEmail
	}
	if st.FromName != "" {
		from.Name = st.FromName
	}
	if from.Email == "" {
		return store.InboxReply{}, store.Invalid("from_email", "Für Antworten fehlt eine Absenderadresse: bitte in der Postfach-Verbindung angeben.")
	}
	msg := &mailer.Message{From: from, To: mailer.Address{Name: m.FromName, Email: m.FromEmail}, Subject: replySubject(m.Subject),
		Headers: map[string]string{}}
	text, htmlBody := in.Text, in.HTML
	if sig := strings.TrimSpace(st.Signature); sig != "" {
		if text != "" {
			text += "\n\n-- \n" + sig
		}
		if htmlBody != "" {
			htmlBody += "<p>-- <br>" + strings.ReplaceAll(html.EscapeString(sig), "\n", "<br>") + "</p>"
		}
	}
	msg.Text, msg.HTML = text, htmlBody
	if m.MessageID.Valid {
		msg.Headers["In-Reply-To"] = "<" + m.MessageID.String + ">"
		refs := make([]string, 0, len(m.References)+1)
		for _, r := range m.References {
			refs = append(refs, "<"+r+">")
		}
		refs = append(refs, "<"+m.MessageID.String+">")
		msg.Headers["References"] = strings.Join(refs, " ")
	}
	if source == store.ReplySourceRule {
		msg.Headers["Auto-Submitted"] = "auto-replied" // RFC 3834: other machines do not answer it
	}
	if err := sender.Send(ctx, msg); err != nil {
		var se *mailer.SendError
		if errors.As(err, &se) {
			return store.InboxReply{}, &store.UnavailableError{Service: "smtp", Err: err,
				Message: "Die Antwort konnte nicht gesendet werden: der SMTP-Server hat sie abgelehnt oder war nicht erreichbar."}
		}
		if errors.Is(err, mailer.ErrInvalidMessage) {
			return store.InboxReply{}, store.Invalid("text", "Die Antwort lässt sich nicht als E-Mail senden.")
		}
		return store.InboxReply{}, err
	}
	r, err := s.db.RecordInboxReply(context.WithoutCancel(ctx), store.InboxReply{AccountID: m.AccountID, MessageID: m.ID, ToEmail: m.FromEmail,
		Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML, Source: source, MailID: msg.MessageID}, draftID)
	if err != nil {
		return store.InboxReply{}, err
	}
	if err := s.appendSent(ctx, m.AccountID, msg); err != nil {
		s.cfg.Log.Warn("inbox append to sent folder", "account_id", m.AccountID, "err", err)
	}
	return r, nil
}

// appendSent stores the sent reply in the server's Sent folder, if it has one.
func (s *Service) appendSent(ctx context.Context, accountID int64, msg *mailer.Message) error {
	b, err := msg.Bytes()
	if err != nil {
		return err
	}
	cfg, _, err := s.connection(ctx, accountID)
	if err != nil {
		return err
	}
	ses, err := s.open(ctx, cfg)
	if err != nil {
		return err
	}
	defer ses.close()
	folder := sentFolder(ses.c)
	if folder == "" {
		return nil
	}
	w := ses.c.Append(folder, int64(len(b)), &imap.AppendOptions{Flags: []imap.Flag{imap.FlagSeen}, Time: time.Now()})
	if _, err := w.Write(b); err != nil {
		_ = w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	_, err = w.Wait()
	return err
}

// ---- drafts ----

// DraftInput is the body of POST /inbox/messages/{id}/draft.
type DraftInput struct {
	Instruction string
	Model       string
	RequestID   string
}

const draftSystem = `Du schreibst Antwortentwürfe auf E-Mails im Namen des Kontoinhabers. Schreibe höflich, klar und auf Deutsch (außer die E-Mail ist in einer anderen Sprache: dann in dieser). Gib nur den Text der Antwort aus: ohne Betreffzeile, ohne Erklärungen, ohne Signatur (sie wird angehängt). Erfinde keine Zusagen, Preise oder Termine, die nicht im Verlauf stehen.`

// Draft asks the AI for a reply draft (charged to the AI credit; the draft
// is stored in the debit's transaction).
func (s *Service) Draft(ctx context.Context, accountID, id int64, in DraftInput) (store.InboxDraft, error) {
	if len(in.Instruction) > 2000 {
		return store.InboxDraft{}, store.Invalid("instruction", "Die Anweisung darf höchstens 2.000 Zeichen lang sein.")
	}
	m, err := s.db.InboxMessage(ctx, accountID, id)
	if err != nil {
		return store.InboxDraft{}, err
	}
	if s.cfg.AI == nil {
		return store.InboxDraft{}, &store.UnavailableError{Service: "ai", Message: "Die KI-Textgenerierung ist auf diesem Server nicht eingerichtet."}
	}
	prompt, err := s.draftPrompt(ctx, m, in.Instruction)
	if err != nil {
		return store.InboxDraft{}, err
	}
	var draft store.InboxDraft
	_, err = s.cfg.AI.Complete(ctx, accountID, ai.Call{Action: "inbox_draft", Model: in.Model, System: draftSystem, Prompt: prompt,
		MaxTokens: 1500, RequestID: in.RequestID,
		Respond: func(ctx context.Context, tx *sqlx.Tx, c ai.Completion) error {
			d, err := store.InsertInboxDraft(ctx, tx, accountID, m.ID, c.Text, c.Cost, c.Model)
			draft = d
			return err
		}})
	if err != nil {
		return store.InboxDraft{}, err
	}
	return draft, nil
}

// draftPrompt is the German prompt: the thread (oldest first), the sender's
// contact data, the signature and the instruction.
func (s *Service) draftPrompt(ctx context.Context, m store.InboxMessage, instruction string) (string, error) {
	thread, err := s.db.InboxThread(ctx, m.AccountID, m)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("Verlauf (älteste Nachricht zuerst):\n")
	for _, t := range thread {
		fmt.Fprintf(&b, "\n--- Von: %s <%s>, %s\nBetreff: %s\n\n%s\n", t.FromName, t.FromEmail,
			t.ReceivedAt.In(store.Berlin).Format("02.01.2006 15:04"), t.Subject, clip(t.Text, 6000))
	}
	if m.ContactID != nil {
		if c, err := s.db.InboxContact(ctx, m.AccountID, *m.ContactID); err == nil {
			fmt.Fprintf(&b, "\nDer Absender ist ein Kontakt: Vorname %q, Nachname %q, E-Mail %s, Status %s.\n", c.FirstName, c.LastName, c.Email, c.Status)
		}
	} else {
		b.WriteString("\nDer Absender ist noch kein Kontakt.\n")
	}
	if st, err := s.db.InboxSettings(ctx, m.AccountID); err == nil && strings.TrimSpace(st.Signature) != "" {
		fmt.Fprintf(&b, "\nSignatur des Kontoinhabers (wird automatisch angehängt, nicht wiederholen):\n%s\n", st.Signature)
	}
	fmt.Fprintf(&b, "\nSchreibe eine Antwort auf die Nachricht mit dem Betreff %q.", m.Subject)
	if strings.TrimSpace(instruction) != "" {
		fmt.Fprintf(&b, "\nAnweisung: %s", instruction)
	}
	return b.String(), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cleanText(s[:n], n) + " …"
}

// Approve sends a pending draft (optionally with edited text) as a reply with
// source ai. The draft is taken first, so that two approvals send once; a
// failed send gives it back.
func (s *Service) Approve(ctx context.Context, accountID, draftID int64, text *string) (store.InboxDraft, store.InboxReply, error) {
	if text != nil && strings.TrimSpace(*text) == "" {
		return store.InboxDraft{}, store.InboxReply{}, store.Invalid("text", "Der Text darf nicht leer sein.")
	}
	d, err := s.db.DecideInboxDraft(ctx, accountID, draftID, store.DraftPending, store.DraftApproved, text)
	if err != nil {
		return store.InboxDraft{}, store.InboxReply{}, err
	}
	m, err := s.db.InboxMessage(ctx, accountID, d.MessageID)
	if err == nil {
		var r store.InboxReply
		r, err = s.reply(ctx, m, ReplyInput{Text: d.Text}, store.ReplySourceAI, d.ID)
		if err == nil {
			d.ReplyID = &r.ID
			return d, r, nil
		}
	}
	if _, rerr := s.db.DecideInboxDraft(context.WithoutCancel(ctx), accountID, draftID, store.DraftApproved, store.DraftPending, nil); rerr != nil {
		s.cfg.Log.Error("inbox draft give back", "account_id", accountID, "draft_id", draftID, "err", rerr)
	}
	return store.InboxDraft{}, store.InboxReply{}, err
}

// Discard discards a pending draft.
func (s *Service) Discard(ctx context.Context, accountID, draftID int64) error {
	_, err := s.db.DecideInboxDraft(ctx, accountID, draftID, store.DraftPending, store.DraftDiscarded, nil)
	return err
}

// ---- rules ----

// noReplyLocal matches sender addresses that no automatic reply may go to.
var noReplyLocal = []string{"noreply", "no-reply", "no_reply", "donotreply", "do-not-reply", "mailer-daemon", "postmaster", "bounce", "bounces", "listserv", "majordomo", "daemon"}

// MayAutoReply reports whether a rule may answer m: never a machine's or a
// list's mail, never noreply-like or system addresses, never to ourselves.
func MayAutoReply(m store.InboxMessage, own string) bool {
	if m.Automated || m.FromEmail == "" {
		return false
	}
	local, _, _ := strings.Cut(strings.ToLower(m.FromEmail), "@")
	for _, p := range noReplyLocal {
		if local == p || strings.HasPrefix(local, p+"-") || strings.HasPrefix(local, p+"+") || strings.HasPrefix(local, p+".") || strings.Contains(local, "noreply") || strings.Contains(local, "no-reply") {
			return false
		}
	}
	return own == "" || !strings.EqualFold(m.FromEmail, own)
}

// ProcessPending runs the rules (and the auto draft) on new messages of the
// account (0: any account). Each message is claimed once across processes.
// An account without rules and without auto_draft has nothing to run: its
// messages leave the pending set in one statement.
func (s *Service) ProcessPending(ctx context.Context, accountID int64) error {
	type accountRules struct {
		rules    []store.InboxRule
		settings store.InboxSettings
	}
	cache := map[int64]*accountRules{}
	for {
		batch, err := s.db.ClaimInboxPending(ctx, accountID, 200)
		if err != nil || len(batch) == 0 {
			return err
		}
		var done []int64
		for _, p := range batch {
			ar := cache[p.AccountID]
			if ar == nil {
				ar = &accountRules{}
				if ar.rules, err = s.db.InboxRules(ctx, p.AccountID); err != nil {
					return err
				}
				if ar.settings, err = s.db.InboxSettings(ctx, p.AccountID); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				cache[p.AccountID] = ar
			}
			if len(ar.rules) > 0 || ar.settings.AutoDraft {
				if err := s.applyRules(ctx, p.AccountID, p.MessageID, ar.rules, ar.settings); err != nil {
					s.cfg.Log.Warn("inbox rules", "account_id", p.AccountID, "message_id", p.MessageID, "err", err)
					if p.Attempts < 3 {
						continue // the lease runs out and another round tries again
					}
				}
			}
			done = append(done, p.MessageID)
		}
		if err := s.db.DoneInboxPending(ctx, done); err != nil {
			return err
		}
	}
}

func (s *Service) applyRules(ctx context.Context, accountID, messageID int64, rules []store.InboxRule, st store.InboxSettings) error {
	m, err := s.db.InboxMessage(ctx, accountID, messageID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	answered, drafted := false, false
	var patch store.InboxPatch
	for _, r := range rules {
		if !r.Matches(m) {
			continue
		}
		switch r.Action {
		case store.RuleLabel:
			if err := s.db.AddInboxLabel(ctx, accountID, m.ID, r.Value); err != nil {
				return err
			}
		case store.RuleArchive:
			t := true
			patch.Archived = &t
		case store.RuleMarkRead:
			t := true
			patch.Read = &t
		case store.RuleReply:
			if answered || !MayAutoReply(m, st.FromEmail) {
				continue
			}
			ok, err := s.db.ClaimAutoReply(ctx, accountID, m.FromEmail)
			if err != nil {
				return err
			}
			if !ok {
				continue // one automatic reply per sender and day
			}
			if _, err := s.reply(ctx, m, ReplyInput{Text: r.Text}, store.ReplySourceRule, 0); err != nil {
				_ = s.db.ReleaseAutoReply(context.WithoutCancel(ctx), accountID, m.FromEmail)
				return err
			}
			answered = true
		case store.RuleAIDraft:
			if !drafted {
				if _, err := s.Draft(ctx, accountID, m.ID, DraftInput{RequestID: "rule"}); err != nil {
					s.cfg.Log.Warn("inbox rule draft", "account_id", accountID, "message_id", m.ID, "err", err)
				} else {
					drafted = true
				}
			}
		}
	}
	if patch.Read != nil || patch.Archived != nil {
		if _, err := s.Patch(ctx, accountID, m.ID, patch); err != nil {
			return err
		}
	}
	if st.AutoDraft && !answered && !drafted {
		if _, err := s.Draft(ctx, accountID, m.ID, DraftInput{RequestID: "auto_draft"}); err != nil {
			s.cfg.Log.Warn("inbox auto draft", "account_id", accountID, "message_id", m.ID, "err", err)
		}
	}
	return nil
}
