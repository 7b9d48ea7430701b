package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store/botguard"
)

// Limits of the public sign-up (api-v1.md "Limits": 10 sign-ups per minute per
// IP, 200 per day per list) and of its bot checks.
const (
	SignUpsPerIPMinute = 10
	SignUpsPerListDay  = 200
	// StampMaxAge is how long a rendered form's stamp stays valid.
	StampMaxAge = 24 * time.Hour
	// ChallengeMaxNumber sets the proof of work: a browser needs on average
	// 25,000 SHA-256 hashes, well under a second.
	ChallengeMaxNumber = 50_000
	// ChallengeTTL is how long a proof-of-work challenge can be solved and used.
	ChallengeTTL = time.Hour
)

// Field names of a sign-up's bot checks: as a form posts them and as a
// *ValidationError names them.
const (
	FieldHoneypot = "website" // hidden from humans: filled only by bots
	FieldStamp    = "_rb_ts"  // botguard stamp of when the form was rendered
	FieldProof    = "altcha"  // base64 proof-of-work solution
)

// SignUpInput is what a visitor posts to a form. Optional fields the form does
// not show are ignored, and an empty one never clears what a contact has.
type SignUpInput struct {
	Email     string
	FirstName string
	LastName  string
	Phone     string
	Zip       string
	City      string
	Honeypot  string // FieldHoneypot
	Stamp     string // FieldStamp
	Proof     string // FieldProof
	IP        string // the visitor's address, for the per-IP limit
}

// SignUpResult is the outcome of a sign-up.
type SignUpResult struct {
	Form PublicForm
	// Status is StatusPending (a confirmation mail is queued) or StatusSubscribed.
	Status string
	// Discarded means a bot filled the honeypot: nothing was stored, and the
	// caller answers exactly as for a real sign-up.
	Discarded bool
	ContactID int64 // 0 when discarded
}

// Message is the German text a visitor sees after signing up.
func (r SignUpResult) Message() string { return SignUpMessage(r.Form.Form, r.Status) }

// SignUpMessage is the form's own success message, or the default one for the
// outcome status.
func SignUpMessage(f Form, status string) string {
	switch {
	case f.SuccessMessage != "":
		return f.SuccessMessage
	case status == StatusPending:
		return "Fast geschafft! Wir haben Ihnen eine E-Mail geschickt. Bitte bestätigen Sie Ihre Anmeldung mit dem Link darin."
	default:
		return "Vielen Dank für Ihre Anmeldung!"
	}
}

// German messages of the bot checks.
const (
	msgStampTooFast  = "Das Formular wurde zu schnell abgeschickt. Bitte warten Sie einen Moment und senden Sie es erneut."
	msgStampExpired  = "Das Formular ist abgelaufen. Bitte laden Sie die Seite neu und senden Sie es erneut."
	msgStampInvalid  = "Das Formular konnte nicht geprüft werden. Bitte laden Sie die Seite neu und senden Sie es erneut."
	msgProofMissing  = "Die Sicherheitsprüfung ist noch nicht abgeschlossen. Bitte warten Sie einen Moment und senden Sie das Formular erneut."
	msgProofInvalid  = "Die Sicherheitsprüfung ist fehlgeschlagen. Bitte laden Sie die Seite neu und senden Sie das Formular erneut."
	msgProofExpired  = "Die Sicherheitsprüfung ist abgelaufen. Bitte laden Sie die Seite neu und senden Sie das Formular erneut."
	msgProofReplayed = "Diese Sicherheitsprüfung wurde schon verwendet. Bitte laden Sie die Seite neu und senden Sie das Formular erneut."
)

const insertUsedChallenge = `INSERT INTO used_challenges (challenge, account_id, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (challenge) DO NOTHING RETURNING true`

const selectSignUpTarget = `SELECT
  EXISTS (SELECT 1 FROM blocked_addresses b WHERE b.account_id = $1 AND b.email = $2) AS blocked,
  coalesce(c.first_name, '') AS first_name, coalesce(c.last_name, '') AS last_name, coalesce(c.phone, '') AS phone,
  coalesce(c.zip, '') AS zip, coalesce(c.city, '') AS city
FROM (SELECT 1) AS one LEFT JOIN contacts c ON c.account_id = $1 AND c.email = $2`

// SignUp signs a visitor up through the form with the public token, in this
// order:
//  1. the form is looked up by its token (FormByToken, the one lookup across
//     accounts; everything after it filters on the form's account);
//  2. a filled honeypot ends here with Discarded: nothing is stored;
//  3. the bot checks and the fields are validated together (one
//     *ValidationError): the stamp FieldStamp (at least MinFillSeconds old, at
//     most StampMaxAge; skipped when MinFillSeconds is 0), the proof of work
//     FieldProof when the form asks for it, the address and the fields;
//  4. a solved challenge is recorded for single use (a replay is a
//     *ValidationError on FieldProof);
//  5. the rate limits: SignUpsPerIPMinute per visitor address (an IPv6 address
//     counts by its /64) and account, then SignUpsPerListDay per target list and
//     Europe/Berlin day (per form when it has no list); *RateLimitError beyond;
//  6. UpsertContact as Actor{Type: ActorPublic} with Source "form", SignUp, the
//     form's lists and tags, and double opt-in as the form says, so that a new
//     contact is pending until confirmed, and a blocked address gets a
//     confirmation whose use lifts the block (issue 3). A blocked address asks
//     for a confirmation even on a single opt-in form: without one its sign-up
//     could never take effect. The sign-up only fills a known contact's empty
//     fields: a public form must not overwrite what the account knows;
//  7. the form's submission counter, in the same transaction as the contact.
func (db *DB) SignUp(ctx context.Context, g *botguard.Guard, token string, in SignUpInput, now time.Time) (SignUpResult, error) {
	f, err := db.FormByToken(ctx, token)
	if err != nil {
		return SignUpResult{}, err
	}
	if strings.TrimSpace(in.Honeypot) != "" {
		status := StatusSubscribed
		if f.ConfirmsByMail() {
			status = StatusPending
		}
		return SignUpResult{Form: f, Status: status, Discarded: true}, nil
	}

	errs := Errs{}
	if f.MinFillSeconds > 0 {
		switch err := g.CheckStamp(f.Token, strings.TrimSpace(in.Stamp), time.Duration(f.MinFillSeconds)*time.Second, StampMaxAge); {
		case errors.Is(err, botguard.ErrTooFast):
			errs.Add(FieldStamp, msgStampTooFast)
		case errors.Is(err, botguard.ErrExpired):
			errs.Add(FieldStamp, msgStampExpired)
		case err != nil:
			errs.Add(FieldStamp, msgStampInvalid)
		}
	}
	ci := ContactInput{Email: in.Email}
	for _, x := range []struct {
		field string
		dst   **string
		v     string
	}{
		{FormFieldFirstName, &ci.FirstName, in.FirstName}, {FormFieldLastName, &ci.LastName, in.LastName},
		{FormFieldPhone, &ci.Phone, in.Phone}, {FormFieldZip, &ci.Zip, in.Zip}, {FormFieldCity, &ci.City, in.City},
	} {
		if v := strings.TrimSpace(x.v); v != "" && f.HasField(x.field) {
			*x.dst = &v
		}
	}
	var ve *ValidationError
	if err := ci.Normalize(); errors.As(err, &ve) {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	} else if err != nil {
		return SignUpResult{}, err
	}
	var challenge string
	var expires time.Time
	if f.ProofOfWork {
		var err error
		challenge, expires, err = g.Verify(in.Proof)
		switch {
		case strings.TrimSpace(in.Proof) == "":
			errs.Add(FieldProof, msgProofMissing)
		case errors.Is(err, botguard.ErrExpired):
			errs.Add(FieldProof, msgProofExpired)
		case err != nil:
			errs.Add(FieldProof, msgProofInvalid)
		}
	}
	if err := errs.Err(); err != nil {
		return SignUpResult{}, err
	}

	if f.ProofOfWork {
		var fresh bool
		err := db.GetContext(ctx, &fresh, insertUsedChallenge, challenge, f.AccountID, expires)
		if errors.Is(err, sql.ErrNoRows) {
			return SignUpResult{}, Invalid(FieldProof, msgProofReplayed)
		}
		if err != nil {
			return SignUpResult{}, fmt.Errorf("store: sign-up challenge: %w", err)
		}
	}

	if err := db.signUpLimits(ctx, f, in.IP, now); err != nil {
		return SignUpResult{}, err
	}

	var target struct {
		Blocked   bool   `db:"blocked"`
		FirstName string `db:"first_name"`
		LastName  string `db:"last_name"`
		Phone     string `db:"phone"`
		Zip       string `db:"zip"`
		City      string `db:"city"`
	}
	if err := db.GetContext(ctx, &target, selectSignUpTarget, f.AccountID, ci.Email); err != nil {
		return SignUpResult{}, fmt.Errorf("store: sign-up: %w", err)
	}
	for _, x := range []struct {
		dst **string
		cur string
	}{{&ci.FirstName, target.FirstName}, {&ci.LastName, target.LastName}, {&ci.Phone, target.Phone}, {&ci.Zip, target.Zip}, {&ci.City, target.City}} {
		if x.cur != "" {
			*x.dst = nil
		}
	}
	source := SourceForm
	ci.Source = &source
	ci.SignUp = true
	ci.ListIDs = []int64(f.ListIDs)
	ci.Tags = []string(f.Tags)
	ci.DoubleOptIn = f.DoubleOptIn || target.Blocked
	// The form's submission counter commits with the contact (contactOp.formID).
	op := &contactOp{in: ci, formID: f.ID}
	op.inputErr = op.in.Normalize()
	res, err := db.single(ctx, f.AccountID, Actor{Type: ActorPublic}, op)
	if err != nil {
		return SignUpResult{}, err
	}
	status := StatusPending
	if res.Contact.Status == StatusSubscribed {
		status = StatusSubscribed
	}
	return SignUpResult{Form: f, Status: status, ContactID: res.Contact.ID}, nil
}

// signUpLimits counts the sign-up against the visitor's per-minute budget and
// each target list's daily budget.
func (db *DB) signUpLimits(ctx context.Context, f PublicForm, ip string, now time.Time) error {
	res, err := db.Hit(ctx, f.AccountID, SignUpIPBucket(f.AccountID, ip), SignUpsPerIPMinute, now)
	if err != nil {
		return err
	}
	if !res.Allowed {
		return &RateLimitError{Limit: "ip", RetryAfter: res.RetryAfter(now)}
	}
	buckets := make([]string, 0, len(f.ListIDs))
	for _, id := range f.ListIDs {
		buckets = append(buckets, SignUpListBucket(id))
	}
	if len(buckets) == 0 {
		buckets = append(buckets, "signup:form:"+strconv.FormatInt(f.ID, 10))
	}
	for _, b := range buckets {
		res, err := db.HitDay(ctx, f.AccountID, b, SignUpsPerListDay, now)
		if err != nil {
			return err
		}
		if !res.Allowed {
			return &RateLimitError{Limit: "list", RetryAfter: res.RetryAfter(now)}
		}
	}
	return nil
}

// SignUpIPBucket is the per-minute rate bucket of a visitor address within an
// account. The account is part of the name because rate_counters is keyed by
// (bucket, window_start): without it, one address would share a budget across
// all accounts. An IPv6 address counts by its /64, which one host usually owns
// whole.
func SignUpIPBucket(accountID int64, ip string) string {
	key := strings.TrimSpace(ip)
	if a, err := netip.ParseAddr(key); err == nil {
		a = a.Unmap()
		if a.Is6() {
			p, _ := a.Prefix(64) // never fails for an IPv6 address and 64 bits
			key = p.String()
		} else {
			key = a.String()
		}
	}
	if key == "" {
		key = "unknown"
	}
	return "signup:ip:" + strconv.FormatInt(accountID, 10) + ":" + key
}

// SignUpListBucket is the daily rate bucket of sign-ups to a list (HitDay adds
// DayBucketPrefix).
func SignUpListBucket(listID int64) string { return "signup:list:" + strconv.FormatInt(listID, 10) }
