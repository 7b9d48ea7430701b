package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// This file is the appointment book's data (issue 22): the settings row of an
// account, the appointments, and the rules that must hold inside one
// transaction: a booking and its contact, its event and its mails commit
// together, and the exclusion constraint appointments_no_overlap makes two
// bookings of one time impossible (ErrSlotTaken). The slot computation, the
// mails and the bot checks are the service's (store/appointment).

// Appointment statuses and sources.
const (
	AppointmentBooked    = "booked"
	AppointmentCancelled = "cancelled"

	AppointmentSourceAPI         = "api"
	AppointmentSourcePortal      = "portal"
	AppointmentSourceBookingPage = "booking_page"
)

// ObjectAppointment is the activity log's object type of appointments.
const ObjectAppointment = "appointment"

// Kinds of the system mails of appointments.
const (
	SystemMailAppointmentConfirmation = "appointment_confirmation"
	SystemMailAppointmentCancellation = "appointment_cancellation"
	SystemMailAppointmentRescheduled  = "appointment_rescheduled"
	SystemMailAppointmentReminder     = "appointment_reminder"
	SystemMailAppointmentOwner        = "appointment_owner"
)

// BookingPathPrefix is the public path of booking pages: /book/{token}.
const BookingPathPrefix = "/book/"

// CancelPathPrefix is the public path of a booker's cancellation link.
const CancelPathPrefix = "/book/cancel/"

// Bounds of the appointment settings.
const (
	DefaultDurationMinutes = 30
	DefaultMaxDaysAhead    = 30
	DefaultReminderHours   = 24
	maxDurationMinutes     = 24 * 60
	maxBufferMinutes       = 24 * 60
	maxNoticeHours         = 24 * 365
	maxDaysAhead           = 365
	maxReminderHours       = 24 * 14
	maxBlockedRanges       = 200
	maxRangesPerDay        = 12
	maxApptTitleLen        = 200
	maxApptDescriptionLen  = 5000
	maxApptNameLen         = 200
	maxApptPhoneLen        = 100
	maxApptNoteLen         = 2000
	cancelTokenLen         = 32
)

// ErrSlotTaken is the conflict of a start that is not a free slot, or whose
// time another booking took first.
var ErrSlotTaken = &ConflictError{Reason: "slot_taken", Message: "Dieser Termin ist nicht (mehr) frei. Bitte wählen Sie eine andere Zeit."}

// Weekdays are the keys of WeeklyHours, Monday first.
var Weekdays = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// WeekdayKey is the WeeklyHours key of d.
func WeekdayKey(d time.Weekday) string { return Weekdays[(int(d)+6)%7] }

// WeeklyHours are the bookable wall-clock ranges per weekday in Europe/Berlin:
// {"mon": [["09:00","12:00"],["13:00","17:00"]], …}. "24:00" may end a range.
type WeeklyHours map[string][][2]string

// Scan reads the jsonb column.
func (w *WeeklyHours) Scan(src any) error { return scanJSONColumn(src, w) }

// Value writes the jsonb column.
func (w WeeklyHours) Value() (driver.Value, error) { return valueJSON(w) }

// BlockedRange is a span of days without bookings (holiday, vacation), both
// days included, as YYYY-MM-DD in Europe/Berlin.
type BlockedRange struct {
	From string `json:"from"`
	To   string `json:"to"`
	Note string `json:"note"`
}

// BlockedRanges are an account's blocked date ranges.
type BlockedRanges []BlockedRange

// Scan reads the jsonb column.
func (b *BlockedRanges) Scan(src any) error { return scanJSONColumn(src, b) }

// Value writes the jsonb column.
func (b BlockedRanges) Value() (driver.Value, error) { return valueJSON(b) }

func scanJSONColumn(src any, dst any) error {
	var raw []byte
	switch v := src.(type) {
	case []byte:
		raw = v
	case string:
		raw = []byte(v)
	case nil:
		return nil
	default:
		return fmt.Errorf("store: cannot scan %T as json", src)
	}
	return json.Unmarshal(raw, dst)
}

func valueJSON(v any) (driver.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// AppointmentSettings are an account's appointment book settings.
type AppointmentSettings struct {
	AccountID       int64         `db:"account_id"`
	Enabled         bool          `db:"enabled"`
	Title           string        `db:"title"`
	Description     string        `db:"description"`
	DurationMinutes int           `db:"duration_minutes"`
	BufferMinutes   int           `db:"buffer_minutes"`
	MinNoticeHours  int           `db:"min_notice_hours"`
	MaxDaysAhead    int           `db:"max_days_ahead"`
	ReminderHours   int           `db:"reminder_hours"`
	WeeklyHours     WeeklyHours   `db:"weekly_hours"`
	BlockedDates    BlockedRanges `db:"blocked_dates"`
	ListID          *int64        `db:"list_id"`
	MinFillSeconds  int           `db:"min_fill_seconds"`
	PrivacyText     string        `db:"privacy_text"`
	Token           string        `db:"token"`
	CreatedAt       time.Time     `db:"created_at"`
	UpdatedAt       time.Time     `db:"updated_at"`
}

// Duration is the length of one appointment.
func (s AppointmentSettings) Duration() time.Duration {
	return time.Duration(s.DurationMinutes) * time.Minute
}

// DefaultPrivacyText is the consent text of the booking page until the account
// writes its own.
const DefaultPrivacyText = "Ich bin einverstanden, dass meine Angaben zur Vereinbarung und Durchführung des Termins gespeichert und verarbeitet werden. Ich kann diese Einwilligung jederzeit per E-Mail widerrufen."

// PrivacyOrDefault is the consent text the booking page shows.
func (s AppointmentSettings) PrivacyOrDefault() string {
	if strings.TrimSpace(s.PrivacyText) == "" {
		return DefaultPrivacyText
	}
	return s.PrivacyText
}

// AppointmentSettingsPatch is a change of the settings: nil fields stay.
type AppointmentSettingsPatch struct {
	Enabled         *bool
	Title           *string
	Description     *string
	DurationMinutes *int
	BufferMinutes   *int
	MinNoticeHours  *int
	MaxDaysAhead    *int
	ReminderHours   *int
	WeeklyHours     *WeeklyHours
	BlockedDates    *BlockedRanges
	// ListID: a pointer to 0 clears the list.
	ListID         *int64
	MinFillSeconds *int
	PrivacyText    *string
}

// Apply copies the set fields onto s.
func (p AppointmentSettingsPatch) Apply(s *AppointmentSettings) {
	applyPtr(&s.Enabled, p.Enabled)
	applyPtr(&s.Title, p.Title)
	applyPtr(&s.Description, p.Description)
	applyPtr(&s.DurationMinutes, p.DurationMinutes)
	applyPtr(&s.BufferMinutes, p.BufferMinutes)
	applyPtr(&s.MinNoticeHours, p.MinNoticeHours)
	applyPtr(&s.MaxDaysAhead, p.MaxDaysAhead)
	applyPtr(&s.ReminderHours, p.ReminderHours)
	applyPtr(&s.WeeklyHours, p.WeeklyHours)
	applyPtr(&s.BlockedDates, p.BlockedDates)
	applyPtr(&s.MinFillSeconds, p.MinFillSeconds)
	applyPtr(&s.PrivacyText, p.PrivacyText)
	if p.ListID != nil {
		if *p.ListID == 0 {
			s.ListID = nil
		} else {
			id := *p.ListID
			s.ListID = &id
		}
	}
}

// Validate normalises s and reports every invalid field in German.
func (s *AppointmentSettings) Validate() error {
	errs := Errs{}
	normText(errs, "title", &s.Title, maxApptTitleLen)
	normText(errs, "description", &s.Description, maxApptDescriptionLen)
	normText(errs, "privacy_text", &s.PrivacyText, maxApptDescriptionLen)
	intIn := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			errs.Add(field, fmt.Sprintf("Bitte eine ganze Zahl von %d bis %d angeben.", lo, hi))
		}
	}
	intIn("duration_minutes", s.DurationMinutes, 5, maxDurationMinutes)
	intIn("buffer_minutes", s.BufferMinutes, 0, maxBufferMinutes)
	intIn("min_notice_hours", s.MinNoticeHours, 0, maxNoticeHours)
	intIn("max_days_ahead", s.MaxDaysAhead, 1, maxDaysAhead)
	intIn("reminder_hours", s.ReminderHours, 0, maxReminderHours)
	intIn("min_fill_seconds", s.MinFillSeconds, 0, maxMinFillSeconds)
	if s.WeeklyHours == nil {
		s.WeeklyHours = WeeklyHours{}
	}
	for day, ranges := range s.WeeklyHours {
		field := "weekly_hours." + day
		if !validWeekday(day) {
			errs.Add("weekly_hours", fmt.Sprintf("Unbekannter Wochentag %q: erlaubt sind mon, tue, wed, thu, fri, sat, sun.", day))
			continue
		}
		if len(ranges) > maxRangesPerDay {
			errs.Add(field, fmt.Sprintf("Höchstens %d Zeiträume pro Tag.", maxRangesPerDay))
			continue
		}
		prevEnd := -1
		sorted := sortRanges(ranges)
		for _, r := range sorted {
			a, okA := ClockMinutes(r[0])
			b, okB := ClockMinutes(r[1])
			switch {
			case !okA || !okB || a == 1440:
				errs.Add(field, "Zeiten bitte als HH:MM angeben, z. B. [\"09:00\",\"17:00\"].")
			case b <= a:
				errs.Add(field, fmt.Sprintf("Der Zeitraum %s–%s endet nicht nach seinem Beginn.", r[0], r[1]))
			case a < prevEnd:
				errs.Add(field, "Die Zeiträume eines Tages dürfen sich nicht überschneiden.")
			}
			prevEnd = max(prevEnd, b)
		}
		s.WeeklyHours[day] = sorted
	}
	if len(s.BlockedDates) > maxBlockedRanges {
		errs.Add("blocked_dates", fmt.Sprintf("Höchstens %d gesperrte Zeiträume.", maxBlockedRanges))
	}
	if s.BlockedDates == nil {
		s.BlockedDates = BlockedRanges{}
	}
	for i := range s.BlockedDates {
		b := &s.BlockedDates[i]
		b.From, b.To = strings.TrimSpace(b.From), strings.TrimSpace(b.To)
		if b.To == "" {
			b.To = b.From
		}
		from, err1 := time.Parse(time.DateOnly, b.From)
		to, err2 := time.Parse(time.DateOnly, b.To)
		switch {
		case err1 != nil || err2 != nil:
			errs.Add("blocked_dates", "Daten bitte als JJJJ-MM-TT angeben, z. B. {\"from\":\"2026-12-24\",\"to\":\"2026-12-26\"}.")
		case to.Before(from):
			errs.Add("blocked_dates", fmt.Sprintf("Der gesperrte Zeitraum %s bis %s endet vor seinem Beginn.", b.From, b.To))
		}
		normText(errs, "blocked_dates", &b.Note, maxApptTitleLen)
	}
	return errs.Err()
}

func validWeekday(d string) bool {
	for _, w := range Weekdays {
		if w == d {
			return true
		}
	}
	return false
}

// sortRanges orders a day's ranges by their start (invalid ones keep their place
// at the end, for the message).
func sortRanges(in [][2]string) [][2]string {
	out := append([][2]string{}, in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0; j-- {
			a, _ := ClockMinutes(out[j-1][0])
			b, _ := ClockMinutes(out[j][0])
			if b >= a {
				break
			}
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// DefaultWeeklyHours is Monday to Friday, 09:00 to 17:00.
func DefaultWeeklyHours() WeeklyHours {
	w := WeeklyHours{}
	for _, d := range Weekdays[:5] {
		w[d] = [][2]string{{"09:00", "17:00"}}
	}
	return w
}

const appointmentSettingsColumns = `account_id, enabled, title, description, duration_minutes, buffer_minutes, min_notice_hours,
max_days_ahead, reminder_hours, weekly_hours, blocked_dates, list_id, min_fill_seconds, privacy_text, token, created_at, updated_at`

const insertAppointmentSettings = `INSERT INTO appointment_settings (account_id, token, weekly_hours, title)
SELECT $1, $2, $3, 'Termin mit ' || a.name FROM accounts a WHERE a.id = $1
ON CONFLICT (account_id) DO NOTHING`

const selectAppointmentSettings = `SELECT ` + appointmentSettingsColumns + ` FROM appointment_settings WHERE account_id = $1`

// AppointmentSettings returns the account's settings, creating them with
// defaults (and the booking page's token) on first use.
func (db *DB) AppointmentSettings(ctx context.Context, accountID int64) (AppointmentSettings, error) {
	var s AppointmentSettings
	err := db.GetContext(ctx, &s, selectAppointmentSettings, accountID)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("store: appointment settings: %w", err)
	}
	if _, err := db.ExecContext(ctx, insertAppointmentSettings, accountID, RandomString(24), DefaultWeeklyHours()); err != nil {
		return s, fmt.Errorf("store: appointment settings: %w", err)
	}
	if err := db.GetContext(ctx, &s, selectAppointmentSettings, accountID); err != nil {
		return s, notFound("appointment settings", err)
	}
	return s, nil
}

// BookingPage is what a booking page knows: the settings of the token's
// account and the account's name.
type BookingPage struct {
	AppointmentSettings
	AccountName string `db:"account_name"`
	// PrivacyURL is the account's privacy policy (account settings), linked
	// beside the consent; empty: none given.
	PrivacyURL string `db:"privacy_url"`
}

const selectBookingPage = `SELECT s.account_id, s.enabled, s.title, s.description, s.duration_minutes, s.buffer_minutes,
s.min_notice_hours, s.max_days_ahead, s.reminder_hours, s.weekly_hours, s.blocked_dates, s.list_id, s.min_fill_seconds,
s.privacy_text, s.token, s.created_at, s.updated_at, a.name AS account_name,
coalesce((SELECT x.privacy_url FROM account_settings x WHERE x.account_id = s.account_id), '') AS privacy_url
FROM appointment_settings s JOIN accounts a ON a.id = s.account_id JOIN plans p ON p.name = a.plan
WHERE s.token = $1 AND a.blocked_at IS NULL AND 'appointments' = ANY (p.features)`

// BookingPageByToken returns the booking page of token (the one lookup across
// accounts); ErrNotFound for an unknown token, a blocked account or a plan
// without the feature appointments.
func (db *DB) BookingPageByToken(ctx context.Context, token string) (BookingPage, error) {
	var p BookingPage
	if token == "" || len(token) > 64 || !ValidText(token) {
		return p, ErrNotFound
	}
	if err := db.GetContext(ctx, &p, selectBookingPage, token); err != nil {
		return p, notFound("booking page", err)
	}
	return p, nil
}

const lockAppointmentSettings = `SELECT ` + appointmentSettingsColumns + ` FROM appointment_settings WHERE account_id = $1 FOR UPDATE`

const listOfAccount = `SELECT EXISTS (SELECT 1 FROM lists WHERE account_id = $1 AND id = $2)`

const updateAppointmentSettings = `UPDATE appointment_settings SET enabled = $2, title = $3, description = $4,
duration_minutes = $5, buffer_minutes = $6, min_notice_hours = $7, max_days_ahead = $8, reminder_hours = $9,
weekly_hours = $10, blocked_dates = $11, list_id = $12, min_fill_seconds = $13, privacy_text = $14, updated_at = now()
WHERE account_id = $1 RETURNING ` + appointmentSettingsColumns

// SaveAppointmentSettings applies p to the account's settings, validated in the
// transaction that writes them (the list must be the account's).
func (db *DB) SaveAppointmentSettings(ctx context.Context, accountID int64, actor Actor, p AppointmentSettingsPatch) (AppointmentSettings, error) {
	if _, err := db.AppointmentSettings(ctx, accountID); err != nil {
		return AppointmentSettings{}, err
	}
	var out AppointmentSettings
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var s AppointmentSettings
		if err := tx.GetContext(ctx, &s, lockAppointmentSettings, accountID); err != nil {
			return notFound("appointment settings", err)
		}
		p.Apply(&s)
		err := s.Validate()
		var ve *ValidationError
		if err != nil && !errors.As(err, &ve) {
			return err
		}
		if ve == nil {
			ve = &ValidationError{Fields: Errs{}}
		}
		if s.ListID != nil {
			var ok bool
			if err := tx.GetContext(ctx, &ok, listOfAccount, accountID, *s.ListID); err != nil {
				return fmt.Errorf("store: appointment settings: %w", err)
			}
			if !ok {
				Errs(ve.Fields).Add("list_id", "Diese Liste gibt es nicht.")
			}
		}
		if err := Errs(ve.Fields).Err(); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &out, updateAppointmentSettings, accountID, s.Enabled, s.Title, s.Description,
			s.DurationMinutes, s.BufferMinutes, s.MinNoticeHours, s.MaxDaysAhead, s.ReminderHours, s.WeeklyHours,
			s.BlockedDates, s.ListID, s.MinFillSeconds, s.PrivacyText); err != nil {
			return fmt.Errorf("store: appointment settings: %w", err)
		}
		return LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "appointments.settings_updated", ObjectType: ObjectAppointment})
	})
	return out, err
}

// Appointment is a booking of the appointment book.
type Appointment struct {
	ID         int64      `db:"id"`
	AccountID  int64      `db:"account_id"`
	Start      time.Time  `db:"start_at"`
	End        time.Time  `db:"end_at"`
	Name       string     `db:"name"`
	Email      string     `db:"email"`
	Phone      string     `db:"phone"`
	Note       string     `db:"note"`
	Status     string     `db:"status"`
	Source     string     `db:"source"`
	ContactID  *int64     `db:"contact_id"`
	UID        string     `db:"uid"`
	Sequence   int        `db:"sequence"`
	Reminded   *time.Time `db:"reminder_sent_at"`
	Cancelled  *time.Time `db:"cancelled_at"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
	CancelPath string     `db:"-"` // the booker's cancellation link, known only when it was made
}

// AppointmentInput is a new booking.
type AppointmentInput struct {
	Start  time.Time
	End    time.Time // the service sets it from duration_minutes
	Name   string
	Email  string
	Phone  string
	Note   string
	Source string
	// ListID is the list the booker joins (the settings' list_id); 0: none.
	ListID int64
	// Now is when the booking is made (created_at, which the reminders
	// compare with the start); zero: the database's clock.
	Now time.Time
}

// Normalize checks and normalises the booker's fields.
func (in *AppointmentInput) Normalize() error {
	errs := Errs{}
	normText(errs, "name", &in.Name, maxApptNameLen)
	if in.Name == "" {
		errs.Add("name", "Bitte geben Sie Ihren Namen an.")
	}
	in.Email = strings.TrimSpace(in.Email)
	if in.Email == "" {
		errs.Add("email", "Bitte geben Sie Ihre E-Mail-Adresse an.")
	} else {
		normEmail(errs, "email", &in.Email)
	}
	normText(errs, "phone", &in.Phone, maxApptPhoneLen)
	normText(errs, "note", &in.Note, maxApptNoteLen)
	if in.Start.IsZero() || !ValidTime(in.Start) {
		errs.Add("start", "Bitte den Beginn als Zeitpunkt nach ISO 8601 angeben, z. B. 2026-12-01T09:00:00+01:00.")
	}
	return errs.Err()
}

// QueuedMail is a system mail to queue with a change of an appointment.
type QueuedMail struct {
	Kind      string
	To        string // empty with Owner
	Owner     bool   // to the account's owner
	ContactID *int64
	Subject   string
	Text      string
	HTML      string
	// Calendar is an iCalendar object sent as a text/calendar part.
	Calendar string
	// AccountRoute sends through the account's own SMTP server (else the relay).
	AccountRoute bool
}

// MailsFunc builds the mails of a change from the appointment as written.
type MailsFunc func(a Appointment) ([]QueuedMail, error)

const appointmentColumns = `id, account_id, start_at, end_at, name, email, phone, note, status, source, contact_id, uid,
sequence, reminder_sent_at, cancelled_at, created_at, updated_at`

const insertAppointment = `INSERT INTO appointments (account_id, start_at, end_at, name, email, phone, note, source, uid, cancel_token_hash,
created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, coalesce($11, now()), coalesce($11, now())) RETURNING ` + appointmentColumns

// lockAppointmentTimes orders the writes of an account's appointment times.
// PostgreSQL checks the exclusion constraint (appointments_no_overlap) of two
// concurrent overlapping bookings by having each wait for the other, which is a
// deadlock: twenty visitors booking one slot at once ended, after three
// attempts each, in deadlock errors instead of one booking and nineteen
// refusals. Under the lock a booking meets only committed rows, and the
// constraint refuses the overlaps at once.
const lockAppointmentTimes = `SELECT pg_advisory_xact_lock(hashtextextended('appointment_times', $1))`

const selectBookerContact = `SELECT id, first_name, last_name, phone FROM contacts WHERE account_id = $1 AND email = $2`

const setAppointmentContact = `UPDATE appointments SET contact_id = $3 WHERE account_id = $1 AND id = $2`

const insertAppointmentMail = `INSERT INTO system_mails (account_id, contact_id, kind, to_email, subject, body_text, body_html, calendar, account_route)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

const insertAppointmentOwnerMail = `INSERT INTO system_mails (account_id, kind, to_email, subject, body_text, body_html, calendar)
SELECT $1, $2, u.email, $3, $4, $5, $6 FROM users u WHERE u.account_id = $1 AND u.role = 'owner' ORDER BY u.id LIMIT 1`

// isExclusionViolation reports whether err is PostgreSQL's exclusion_violation.
func isExclusionViolation(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "23P01"
}

// AppointmentEventData is the data of appointment.booked.
type AppointmentEventData struct {
	Appointment AppointmentEventRef `json:"appointment"`
}

// AppointmentEventRef is the appointment inside an event.
type AppointmentEventRef struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	Phone     string    `json:"phone"`
	Note      string    `json:"note"`
	Source    string    `json:"source"`
	ContactID *int64    `json:"contact_id"`
	StartsAt  EventTime `json:"starts_at"`
	EndsAt    EventTime `json:"ends_at"`
}

// CreateAppointment books in (already checked against the free slots by the
// service) in one transaction: the appointment (ErrSlotTaken when its time
// overlaps a booked one, also one committed a moment ago by another process),
// the booker as a contact (created with source booking, or only its empty
// fields filled; joining in.ListID), the event appointment.booked, an activity
// and the mails built by mails.
func (db *DB) CreateAppointment(ctx context.Context, accountID int64, actor Actor, in AppointmentInput, mails MailsFunc) (Appointment, error) {
	if err := in.Normalize(); err != nil {
		return Appointment{}, err
	}
	if err := actor.valid(); err != nil {
		return Appointment{}, err
	}
	var out Appointment
	err := db.retryTx(ctx, func(tx *sqlx.Tx) error {
		token := RandomString(cancelTokenLen)
		uid := RandomString(24) + "@rundbrief"
		var a Appointment
		if _, err := tx.ExecContext(ctx, lockAppointmentTimes, accountID); err != nil {
			return fmt.Errorf("store: create appointment: %w", err)
		}
		// The insert first: a taken slot ends the transaction before any contact work.
		if err := tx.GetContext(ctx, &a, insertAppointment, accountID, in.Start, in.End, in.Name, in.Email, in.Phone,
			in.Note, in.Source, uid, hashToken(token), nullTime(in.Now)); err != nil {
			if isExclusionViolation(err) {
				return ErrSlotTaken
			}
			return fmt.Errorf("store: create appointment: %w", err)
		}
		a.CancelPath = CancelPathPrefix + token
		contactID, err := upsertBooker(ctx, tx, accountID, actor, in)
		if err != nil {
			return err
		}
		if contactID != 0 {
			a.ContactID = &contactID
			if _, err := tx.ExecContext(ctx, setAppointmentContact, accountID, a.ID, contactID); err != nil {
				return fmt.Errorf("store: create appointment: %w", err)
			}
		}
		if _, err := Emit(ctx, tx, accountID, EventAppointmentBooked, AppointmentEventData{Appointment: AppointmentEventRef{
			ID: a.ID, Name: a.Name, Email: a.Email, Phone: a.Phone, Note: a.Note, Source: a.Source, ContactID: a.ContactID,
			StartsAt: EventTime(a.Start), EndsAt: EventTime(a.End),
		}}); err != nil {
			return err
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "appointment.booked", ObjectType: ObjectAppointment,
			ObjectID: a.ID, Details: map[string]any{"email": a.Email, "start": a.Start.In(Berlin).Format(time.RFC3339), "source": a.Source}}); err != nil {
			return err
		}
		if err := queueAppointmentMails(ctx, tx, accountID, a, mails); err != nil {
			return err
		}
		out = a
		return nil
	})
	return out, err
}

// upsertBooker makes the booker a contact through the one contact write path:
// a new contact has source booking; a known one only gets its empty name and
// phone filled (a public page must not overwrite what the account knows). It
// returns the contact's id, 0 when the address could not become a contact
// (e.g. over the plan's contact limit: the booking still counts).
func upsertBooker(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, in AppointmentInput) (int64, error) {
	var cur struct {
		ID        int64  `db:"id"`
		FirstName string `db:"first_name"`
		LastName  string `db:"last_name"`
		Phone     string `db:"phone"`
	}
	err := tx.GetContext(ctx, &cur, selectBookerContact, accountID, in.Email)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: booker contact: %w", err)
	}
	first, last := SplitName(in.Name)
	ci := ContactInput{Email: in.Email}
	if cur.ID == 0 {
		src := SourceBooking
		ci.Source = &src
	}
	if cur.FirstName == "" && cur.LastName == "" {
		ci.FirstName, ci.LastName = &first, &last
	}
	if cur.Phone == "" && in.Phone != "" {
		ci.Phone = &in.Phone
	}
	if in.ListID != 0 {
		ci.ListIDs = []int64{in.ListID}
	}
	op := &contactOp{in: ci}
	if op.inputErr = op.in.Normalize(); op.inputErr != nil {
		return 0, op.inputErr
	}
	// A savepoint: a refused contact (limit) must not abort the booking's transaction.
	if _, err := tx.ExecContext(ctx, "SAVEPOINT booker"); err != nil {
		return 0, fmt.Errorf("store: booker contact: %w", err)
	}
	if err := applyOps(ctx, tx, accountID, actor, []*contactOp{op}, false); err != nil {
		var limit *LimitError
		if !errors.As(err, &limit) {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT booker"); err != nil {
			return 0, fmt.Errorf("store: booker contact: %w", err)
		}
		return 0, nil
	}
	res, err := op.result()
	if err != nil {
		var limit *LimitError
		if errors.As(err, &limit) {
			return 0, nil
		}
		return 0, err
	}
	return res.Contact.ID, nil
}

// SplitName splits a booker's name into first and last name at the last space.
func SplitName(name string) (first, last string) {
	name = strings.Join(strings.Fields(name), " ")
	if i := strings.LastIndexByte(name, ' '); i > 0 {
		return name[:i], name[i+1:]
	}
	return name, ""
}

func queueAppointmentMails(ctx context.Context, tx *sqlx.Tx, accountID int64, a Appointment, mails MailsFunc) error {
	if mails == nil {
		return nil
	}
	list, err := mails(a)
	if err != nil {
		return err
	}
	for _, m := range list {
		if m.Owner {
			_, err = tx.ExecContext(ctx, insertAppointmentOwnerMail, accountID, m.Kind, m.Subject, m.Text, m.HTML, m.Calendar)
		} else {
			_, err = tx.ExecContext(ctx, insertAppointmentMail, accountID, m.ContactID, m.Kind, m.To, m.Subject, m.Text, m.HTML,
				m.Calendar, m.AccountRoute)
		}
		if err != nil {
			return fmt.Errorf("store: appointment mail: %w", err)
		}
	}
	return nil
}

// AppointmentFilter narrows a listing: appointments starting in [From, To)
// (zero: open) with the status ("" for both).
type AppointmentFilter struct {
	From, To time.Time
	Status   string
}

const selectAppointments = `SELECT ` + appointmentColumns + ` FROM appointments
WHERE account_id = $1 AND ($2::timestamptz IS NULL OR start_at >= $2) AND ($3::timestamptz IS NULL OR start_at < $3)
  AND ($4 = '' OR status = $4)
ORDER BY start_at, id LIMIT $5 OFFSET $6`

const countAppointments = `SELECT count(*) FROM appointments
WHERE account_id = $1 AND ($2::timestamptz IS NULL OR start_at >= $2) AND ($3::timestamptz IS NULL OR start_at < $3)
  AND ($4 = '' OR status = $4)`

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Appointments lists the account's appointments by start.
func (db *DB) Appointments(ctx context.Context, accountID int64, f AppointmentFilter, p Page) ([]Appointment, int, error) {
	var total int
	if err := db.GetContext(ctx, &total, countAppointments, accountID, nullTime(f.From), nullTime(f.To), f.Status); err != nil {
		return nil, 0, fmt.Errorf("store: appointments: %w", err)
	}
	out := []Appointment{}
	if err := db.SelectContext(ctx, &out, selectAppointments, accountID, nullTime(f.From), nullTime(f.To), f.Status,
		p.PerPage, p.Offset()); err != nil {
		return nil, 0, fmt.Errorf("store: appointments: %w", err)
	}
	return out, total, nil
}

const selectAppointment = `SELECT ` + appointmentColumns + ` FROM appointments WHERE account_id = $1 AND id = $2`

// Appointment returns one appointment of the account.
func (db *DB) Appointment(ctx context.Context, accountID, id int64) (Appointment, error) {
	var a Appointment
	if err := db.GetContext(ctx, &a, selectAppointment, accountID, id); err != nil {
		return a, notFound("appointment", err)
	}
	return a, nil
}

// TimeRange is a booked span [Start, End).
type TimeRange struct {
	Start time.Time `db:"start_at"`
	End   time.Time `db:"end_at"`
}

const selectBookedRanges = `SELECT start_at, end_at FROM appointments
WHERE account_id = $1 AND status = 'booked' AND end_at > $2 AND start_at < $3 AND id <> $4
ORDER BY start_at`

// BookedRanges returns the booked spans that overlap [from, to), ordered by
// start, leaving out the appointment except (0: none), for the slot computation.
func (db *DB) BookedRanges(ctx context.Context, accountID int64, from, to time.Time, except int64) ([]TimeRange, error) {
	out := []TimeRange{}
	if err := db.SelectContext(ctx, &out, selectBookedRanges, accountID, from, to, except); err != nil {
		return nil, fmt.Errorf("store: booked ranges: %w", err)
	}
	return out, nil
}

// AppointmentChange is a change of an appointment: nil fields stay. A new
// Start (with End) reschedules; Status cancelled cancels.
type AppointmentChange struct {
	Start  *time.Time
	End    *time.Time
	Name   *string
	Phone  *string
	Note   *string
	Status *string
	// Now is when the change happens (cancelled_at).
	Now time.Time
}

const lockAppointment = `SELECT ` + appointmentColumns + ` FROM appointments WHERE account_id = $1 AND id = $2 FOR UPDATE`

const updateAppointment = `UPDATE appointments SET start_at = $3, end_at = $4, name = $5, phone = $6, note = $7, status = $8,
sequence = $9, reminder_sent_at = $10, cancelled_at = $11, updated_at = now()
WHERE account_id = $1 AND id = $2 RETURNING ` + appointmentColumns

// UpdateAppointment applies c in one transaction with its mails (built from
// the appointment as written, with the kind of change: "rescheduled",
// "cancelled" or "" for other edits). A reschedule onto a booked time is
// ErrSlotTaken; cancelling frees the slot; a cancelled appointment cannot be
// changed again (409 reason appointment_cancelled).
func (db *DB) UpdateAppointment(ctx context.Context, accountID int64, actor Actor, id int64, c AppointmentChange, mails func(a Appointment, change string) ([]QueuedMail, error)) (Appointment, error) {
	errs := Errs{}
	normText(errs, "name", c.Name, maxApptNameLen)
	if c.Name != nil && *c.Name == "" {
		errs.Add("name", "Der Name darf nicht leer sein.")
	}
	normText(errs, "phone", c.Phone, maxApptPhoneLen)
	normText(errs, "note", c.Note, maxApptNoteLen)
	if c.Status != nil && *c.Status != AppointmentBooked && *c.Status != AppointmentCancelled {
		errs.Add("status", "Erlaubt sind booked und cancelled.")
	}
	if err := errs.Err(); err != nil {
		return Appointment{}, err
	}
	var out Appointment
	err := db.retryTx(ctx, func(tx *sqlx.Tx) error {
		// Every change, not only a new time: an update that is not HOT adds
		// index entries, which the constraint checks like an insert's.
		if _, err := tx.ExecContext(ctx, lockAppointmentTimes, accountID); err != nil {
			return fmt.Errorf("store: update appointment: %w", err)
		}
		var a Appointment
		if err := tx.GetContext(ctx, &a, lockAppointment, accountID, id); err != nil {
			return notFound("appointment", err)
		}
		change := ""
		if a.Status == AppointmentCancelled {
			if c.Status != nil && *c.Status == AppointmentCancelled && c.Start == nil {
				out = a // cancelling twice changes nothing
				return nil
			}
			return &ConflictError{Reason: "appointment_cancelled", Message: "Dieser Termin ist abgesagt und kann nicht mehr geändert werden."}
		}
		applyPtr(&a.Name, c.Name)
		applyPtr(&a.Phone, c.Phone)
		applyPtr(&a.Note, c.Note)
		if c.Start != nil && (!c.Start.Equal(a.Start) || !c.End.Equal(a.End)) {
			a.Start, a.End = *c.Start, *c.End
			a.Sequence++
			a.Reminded = nil
			change = "rescheduled"
		}
		if c.Status != nil && *c.Status == AppointmentCancelled {
			a.Status = AppointmentCancelled
			now := c.Now
			if now.IsZero() {
				now = time.Now()
			}
			a.Cancelled = &now
			a.Sequence++
			change = "cancelled"
		}
		if err := tx.GetContext(ctx, &out, updateAppointment, accountID, id, a.Start, a.End, a.Name, a.Phone, a.Note,
			a.Status, a.Sequence, a.Reminded, a.Cancelled); err != nil {
			if isExclusionViolation(err) {
				return ErrSlotTaken
			}
			return fmt.Errorf("store: update appointment: %w", err)
		}
		action := "appointment.updated"
		if change != "" {
			action = "appointment." + change
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: action, ObjectType: ObjectAppointment, ObjectID: id,
			Details: map[string]any{"email": out.Email, "start": out.Start.In(Berlin).Format(time.RFC3339)}}); err != nil {
			return err
		}
		if mails == nil || change == "" {
			return nil
		}
		return queueAppointmentMails(ctx, tx, accountID, out, func(a Appointment) ([]QueuedMail, error) { return mails(a, change) })
	})
	return out, err
}

const deleteAppointment = `DELETE FROM appointments WHERE account_id = $1 AND id = $2 RETURNING ` + appointmentColumns

// DeleteAppointment deletes an appointment; a booked one still ahead gets the
// mails of a cancellation (mails with change "cancelled", sequence raised).
func (db *DB) DeleteAppointment(ctx context.Context, accountID int64, actor Actor, id int64, now time.Time, mails func(a Appointment, change string) ([]QueuedMail, error)) error {
	return db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var a Appointment
		if err := tx.GetContext(ctx, &a, deleteAppointment, accountID, id); err != nil {
			return notFound("appointment", err)
		}
		if err := LogActivity(ctx, tx, accountID, actor, ActivityEntry{Action: "appointment.deleted", ObjectType: ObjectAppointment,
			ObjectID: id, Details: map[string]any{"email": a.Email}}); err != nil {
			return err
		}
		if a.Status != AppointmentBooked || !a.Start.After(now) || mails == nil {
			return nil
		}
		a.Sequence++
		a.Status = AppointmentCancelled
		return queueAppointmentMails(ctx, tx, accountID, a, func(a Appointment) ([]QueuedMail, error) { return mails(a, "cancelled") })
	})
}

const selectAppointmentByCancelToken = `SELECT ` + appointmentColumns + ` FROM appointments WHERE cancel_token_hash = $1`

// AppointmentByCancelToken returns the appointment of a cancellation link.
func (db *DB) AppointmentByCancelToken(ctx context.Context, token string) (Appointment, error) {
	var a Appointment
	if len(token) != cancelTokenLen {
		return a, ErrNotFound
	}
	if err := db.GetContext(ctx, &a, selectAppointmentByCancelToken, hashToken(token)); err != nil {
		return a, notFound("appointment", err)
	}
	return a, nil
}

// ReminderJob is an appointment whose reminder is due, with what the mail needs.
type ReminderJob struct {
	Appointment
	AccountName string `db:"account_name"`
	Title       string `db:"title"`
}

const claimReminders = `SELECT a.id, a.account_id, a.start_at, a.end_at, a.name, a.email, a.phone, a.note, a.status, a.source,
a.contact_id, a.uid, a.sequence, a.reminder_sent_at, a.cancelled_at, a.created_at, a.updated_at,
acc.name AS account_name, s.title
FROM appointments a
JOIN appointment_settings s ON s.account_id = a.account_id
JOIN accounts acc ON acc.id = a.account_id
WHERE a.status = 'booked' AND a.reminder_sent_at IS NULL AND s.reminder_hours > 0
  AND a.start_at > $1 AND a.start_at <= $1 + s.reminder_hours * interval '1 hour'
  AND a.created_at < a.start_at - s.reminder_hours * interval '1 hour'
ORDER BY a.start_at LIMIT $2
FOR UPDATE OF a SKIP LOCKED`

const markReminded = `UPDATE appointments SET reminder_sent_at = $3 WHERE account_id = $1 AND id = $2`

// QueueDueReminders claims up to limit appointments whose reminder is due at
// now (reminder_hours before their start, not booked within that window),
// queues the mail that build makes for each and marks it reminded, all in one
// transaction: FOR UPDATE SKIP LOCKED lets processes share the work, and the
// mark commits with the queued mail, so each reminder is queued once. It
// returns how many it queued.
func (db *DB) QueueDueReminders(ctx context.Context, now time.Time, limit int, build func(ReminderJob) (QueuedMail, error)) (int, error) {
	n := 0
	err := db.WithTx(ctx, func(tx *sqlx.Tx) error {
		var jobs []ReminderJob
		if err := tx.SelectContext(ctx, &jobs, claimReminders, now, limit); err != nil {
			return fmt.Errorf("store: claim reminders: %w", err)
		}
		for _, j := range jobs {
			m, err := build(j)
			if err != nil {
				return err
			}
			if err := queueAppointmentMails(ctx, tx, j.AccountID, j.Appointment, func(Appointment) ([]QueuedMail, error) {
				return []QueuedMail{m}, nil
			}); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, markReminded, j.AccountID, j.ID, now); err != nil {
				return fmt.Errorf("store: mark reminded: %w", err)
			}
		}
		n = len(jobs)
		return nil
	})
	return n, err
}

const selectAppointmentHost = `SELECT a.name, coalesce(u.email, '') AS email FROM accounts a
LEFT JOIN LATERAL (SELECT email FROM users WHERE account_id = a.id AND role = 'owner' ORDER BY id LIMIT 1) u ON true
WHERE a.id = $1`

// AppointmentHost is who the bookers meet: the account's name and its
// owner's address (the invitations' ORGANIZER).
type AppointmentHost struct {
	Name  string `db:"name"`
	Email string `db:"email"`
}

// AppointmentHost returns the account's name and owner address.
func (db *DB) AppointmentHost(ctx context.Context, accountID int64) (AppointmentHost, error) {
	var h AppointmentHost
	if err := db.GetContext(ctx, &h, selectAppointmentHost, accountID); err != nil {
		return h, notFound("appointment host", err)
	}
	return h, nil
}
