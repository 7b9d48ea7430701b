// Package appointment is the appointment book (issue 22): free slots computed
// from the weekly hours in Europe/Berlin, bookings through the API, the portal
// and the public booking page (with its bot checks and rate limits), the
// mails with iCalendar invitations, and the reminder worker. The rules that
// must hold inside one transaction (no double booking, the booker as a
// contact, the event appointment.booked) are in store/appointments.go.
package appointment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/botguard"
)

// Feature is the plan feature of the appointment book.
const Feature = "appointments"

// Limits of the public booking page: like sign-up forms, per visitor address
// per minute and per account per day, in budgets of their own.
const (
	BookingsPerIPMinute   = 10
	BookingsPerAccountDay = 200
)

// Config configures a Service.
type Config struct {
	// Guard checks the booking page's stamp (RUNDBRIEF_SECRET).
	Guard *botguard.Guard
	// BaseURL is RUNDBRIEF_BASE_URL, for booking and cancellation links.
	BaseURL string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Service is the appointment book: every change goes through it.
type Service struct {
	db      *store.DB
	guard   *botguard.Guard
	baseURL string
	now     func() time.Time
	log     *slog.Logger
}

// New returns the appointment service.
func New(db *store.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, guard: cfg.Guard, baseURL: strings.TrimRight(cfg.BaseURL, "/"), now: cfg.Now, log: cfg.Log}
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.now() }

// BookingURL is the public booking page of a settings token.
func (s *Service) BookingURL(token string) string { return s.baseURL + store.BookingPathPrefix + token }

// Settings returns the account's settings (created with defaults on first use).
func (s *Service) Settings(ctx context.Context, accountID int64) (store.AppointmentSettings, error) {
	return s.db.AppointmentSettings(ctx, accountID)
}

// SaveSettings changes the settings.
func (s *Service) SaveSettings(ctx context.Context, accountID int64, actor store.Actor, p store.AppointmentSettingsPatch) (store.AppointmentSettings, error) {
	return s.db.SaveAppointmentSettings(ctx, accountID, actor, p)
}

// Slots returns the free slots of the account from from to to (both included,
// at most MaxSlotDays days).
func (s *Service) Slots(ctx context.Context, accountID int64, from, to Date) ([]Slot, error) {
	set, err := s.db.AppointmentSettings(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return s.slotsOf(ctx, set, from, to, 0)
}

// CheckRange validates a slot query's days.
func CheckRange(from, to Date) error {
	switch {
	case to.Before(from):
		return store.Invalid("to", "Das Ende liegt vor dem Beginn.")
	case from.Days(to) >= MaxSlotDays:
		return store.Invalid("to", fmt.Sprintf("Höchstens %d Tage auf einmal.", MaxSlotDays))
	}
	return nil
}

func (s *Service) slotsOf(ctx context.Context, set store.AppointmentSettings, from, to Date, except int64) ([]Slot, error) {
	if err := CheckRange(from, to); err != nil {
		return nil, err
	}
	buf := time.Duration(set.BufferMinutes) * time.Minute
	booked, err := s.db.BookedRanges(ctx, set.AccountID, from.Start().Add(-buf), to.AddDays(1).Start().Add(buf+set.Duration()), except)
	if err != nil {
		return nil, err
	}
	return ComputeSlots(set, booked, s.now(), from, to), nil
}

// isFree reports whether start begins a free slot of set (except: an
// appointment whose own time counts as free, for a reschedule).
func (s *Service) isFree(ctx context.Context, set store.AppointmentSettings, start time.Time, except int64) (bool, error) {
	d := DateOf(start)
	slots, err := s.slotsOf(ctx, set, d, d, except)
	if err != nil {
		return false, err
	}
	for _, sl := range slots {
		if sl.Start.Equal(start) {
			return true, nil
		}
	}
	return false, nil
}

// Booking is a booking of the API or the portal.
type Booking struct {
	Start time.Time
	Name  string
	Email string
	Phone string
	Note  string
}

// Book books a free slot (source api or portal): 409 slot_taken when start is
// not a free slot or another booking took it first.
func (s *Service) Book(ctx context.Context, accountID int64, actor store.Actor, source string, b Booking) (store.Appointment, error) {
	set, err := s.db.AppointmentSettings(ctx, accountID)
	if err != nil {
		return store.Appointment{}, err
	}
	return s.book(ctx, set, actor, source, b)
}

func (s *Service) book(ctx context.Context, set store.AppointmentSettings, actor store.Actor, source string, b Booking) (store.Appointment, error) {
	in := store.AppointmentInput{Start: b.Start, End: b.Start.Add(set.Duration()), Name: b.Name, Email: b.Email, Phone: b.Phone,
		Note: b.Note, Source: source, Now: s.now()}
	if set.ListID != nil {
		in.ListID = *set.ListID
	}
	if err := in.Normalize(); err != nil {
		return store.Appointment{}, err
	}
	free, err := s.isFree(ctx, set, in.Start, 0)
	if err != nil {
		return store.Appointment{}, err
	}
	if !free {
		return store.Appointment{}, store.ErrSlotTaken
	}
	host, err := s.db.AppointmentHost(ctx, set.AccountID)
	if err != nil {
		return store.Appointment{}, err
	}
	now := s.now()
	return s.db.CreateAppointment(ctx, set.AccountID, actor, in, func(a store.Appointment) ([]store.QueuedMail, error) {
		return []store.QueuedMail{
			s.bookerMail(set, host, a, "booked", now),
			ownerMail(set, host, a, "booked"),
		}, nil
	})
}

// Change is a change of an appointment: nil fields stay. Start reschedules
// (onto a free slot); Status cancelled cancels and frees the slot.
type Change struct {
	Start  *time.Time
	Name   *string
	Phone  *string
	Note   *string
	Status *string
}

// Update changes an appointment; a reschedule or cancellation mails the booker
// a new invitation (same UID, higher SEQUENCE) or the cancellation.
func (s *Service) Update(ctx context.Context, accountID int64, actor store.Actor, id int64, c Change) (store.Appointment, error) {
	set, err := s.db.AppointmentSettings(ctx, accountID)
	if err != nil {
		return store.Appointment{}, err
	}
	ch := store.AppointmentChange{Name: c.Name, Phone: c.Phone, Note: c.Note, Status: c.Status, Now: s.now()}
	if c.Start != nil {
		if !store.ValidTime(*c.Start) {
			return store.Appointment{}, store.Invalid("start", "Bitte den Beginn als Zeitpunkt nach ISO 8601 angeben.")
		}
		cur, err := s.db.Appointment(ctx, accountID, id)
		if err != nil {
			return store.Appointment{}, err
		}
		if !cur.Start.Equal(*c.Start) {
			free, err := s.isFree(ctx, set, *c.Start, id)
			if err != nil {
				return store.Appointment{}, err
			}
			if !free {
				return store.Appointment{}, store.ErrSlotTaken
			}
		}
		end := c.Start.Add(cur.End.Sub(cur.Start))
		ch.Start, ch.End = c.Start, &end
	}
	host, err := s.db.AppointmentHost(ctx, accountID)
	if err != nil {
		return store.Appointment{}, err
	}
	now := s.now()
	return s.db.UpdateAppointment(ctx, accountID, actor, id, ch, func(a store.Appointment, change string) ([]store.QueuedMail, error) {
		return []store.QueuedMail{s.bookerMail(set, host, a, change, now), ownerMail(set, host, a, change)}, nil
	})
}

// Delete deletes an appointment; a booked one still ahead is cancelled by mail.
func (s *Service) Delete(ctx context.Context, accountID int64, actor store.Actor, id int64) error {
	set, err := s.db.AppointmentSettings(ctx, accountID)
	if err != nil {
		return err
	}
	host, err := s.db.AppointmentHost(ctx, accountID)
	if err != nil {
		return err
	}
	now := s.now()
	return s.db.DeleteAppointment(ctx, accountID, actor, id, now, func(a store.Appointment, change string) ([]store.QueuedMail, error) {
		return []store.QueuedMail{s.bookerMail(set, host, a, change, now)}, nil
	})
}

// PublicBooking is what a visitor posts to a booking page.
type PublicBooking struct {
	Booking
	Consent  bool
	Honeypot string // store.FieldHoneypot: filled only by bots
	Stamp    string // store.FieldStamp
	IP       string
}

// PublicResult is the outcome of a public booking.
type PublicResult struct {
	Page        store.BookingPage
	Appointment store.Appointment
	// Discarded means a bot filled the honeypot: nothing was stored, and the
	// page answers as for a real booking.
	Discarded bool
}

// Field of the consent checkbox.
const FieldConsent = "consent"

// BookPublic books through the booking page of token, in this order: the page
// (ErrNotFound for an unknown token or a disabled book); the honeypot; the
// stamp (min_fill_seconds, as sign-up forms), the consent and the fields
// together as one *store.ValidationError; the rate limits
// (BookingsPerIPMinute per visitor address and BookingsPerAccountDay, in
// buckets of their own, *store.RateLimitError beyond); then the booking with
// source booking_page.
func (s *Service) BookPublic(ctx context.Context, token string, in PublicBooking) (PublicResult, error) {
	p, err := s.db.BookingPageByToken(ctx, token)
	if err != nil {
		return PublicResult{}, err
	}
	if !p.Enabled {
		return PublicResult{}, store.ErrNotFound
	}
	res := PublicResult{Page: p}
	if strings.TrimSpace(in.Honeypot) != "" {
		res.Discarded = true
		res.Appointment = store.Appointment{Start: in.Start, End: in.Start.Add(p.Duration()), Name: in.Name, Email: in.Email}
		return res, nil
	}
	errs := store.Errs{}
	if p.MinFillSeconds > 0 && s.guard != nil {
		switch err := s.guard.CheckStamp("book:"+p.Token, strings.TrimSpace(in.Stamp), time.Duration(p.MinFillSeconds)*time.Second, store.StampMaxAge); {
		case errors.Is(err, botguard.ErrTooFast):
			errs.Add(store.FieldStamp, "Das Formular wurde zu schnell abgeschickt. Bitte warten Sie einen Moment und senden Sie es erneut.")
		case errors.Is(err, botguard.ErrExpired):
			errs.Add(store.FieldStamp, "Das Formular ist abgelaufen. Bitte laden Sie die Seite neu und senden Sie es erneut.")
		case err != nil:
			errs.Add(store.FieldStamp, "Das Formular konnte nicht geprüft werden. Bitte laden Sie die Seite neu und senden Sie es erneut.")
		}
	}
	if !in.Consent {
		errs.Add(FieldConsent, "Bitte stimmen Sie der Verarbeitung Ihrer Angaben zu.")
	}
	check := store.AppointmentInput{Start: in.Start, Name: in.Name, Email: in.Email, Phone: in.Phone, Note: in.Note}
	var ve *store.ValidationError
	if err := check.Normalize(); errors.As(err, &ve) {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	}
	if err := errs.Err(); err != nil {
		return res, err
	}
	if err := s.bookingLimits(ctx, p.AccountID, in.IP); err != nil {
		return res, err
	}
	a, err := s.book(ctx, p.AppointmentSettings, store.Actor{Type: store.ActorPublic}, store.AppointmentSourceBookingPage, in.Booking)
	if err != nil {
		return res, err
	}
	res.Appointment = a
	return res, nil
}

// Stamp is a fresh stamp for the booking page of token.
func (s *Service) Stamp(token string) string {
	if s.guard == nil {
		return ""
	}
	return s.guard.Stamp("book:" + token)
}

// bookingLimits counts a public booking against its own budgets.
func (s *Service) bookingLimits(ctx context.Context, accountID int64, ip string) error {
	now := s.now()
	res, err := s.db.Hit(ctx, accountID, BookingIPBucket(accountID, ip), BookingsPerIPMinute, now)
	if err != nil {
		return err
	}
	if !res.Allowed {
		return &store.RateLimitError{Limit: "ip", RetryAfter: res.RetryAfter(now)}
	}
	res, err = s.db.HitDay(ctx, accountID, "booking:account:"+strconv.FormatInt(accountID, 10), BookingsPerAccountDay, now)
	if err != nil {
		return err
	}
	if !res.Allowed {
		return &store.RateLimitError{Limit: "account", RetryAfter: res.RetryAfter(now)}
	}
	return nil
}

// BookingIPBucket is the per-minute bucket of a visitor address on an
// account's booking page (an IPv6 address counts by its /64), apart from the
// sign-up forms' buckets.
func BookingIPBucket(accountID int64, ip string) string {
	key := strings.TrimSpace(ip)
	if a, err := netip.ParseAddr(key); err == nil {
		a = a.Unmap()
		if a.Is6() {
			p, _ := a.Prefix(64)
			key = p.String()
		} else {
			key = a.String()
		}
	}
	if key == "" {
		key = "unknown"
	}
	return "booking:ip:" + strconv.FormatInt(accountID, 10) + ":" + key
}

// CancelByToken cancels the appointment of a booker's cancellation link. A
// cancelled one stays as it is (already true).
func (s *Service) CancelByToken(ctx context.Context, token string) (store.Appointment, bool, error) {
	a, err := s.db.AppointmentByCancelToken(ctx, token)
	if err != nil {
		return store.Appointment{}, false, err
	}
	if a.Status == store.AppointmentCancelled {
		return a, true, nil
	}
	st := store.AppointmentCancelled
	a, err = s.Update(ctx, a.AccountID, store.Actor{Type: store.ActorPublic}, a.ID, Change{Status: &st})
	return a, false, err
}

// AppointmentByCancelToken looks up the appointment of a cancellation link.
func (s *Service) AppointmentByCancelToken(ctx context.Context, token string) (store.Appointment, error) {
	return s.db.AppointmentByCancelToken(ctx, token)
}

// Sources are the appointment sources, for validation at the edges.
var Sources = []string{store.AppointmentSourceAPI, store.AppointmentSourcePortal, store.AppointmentSourceBookingPage}

// ValidSource reports whether src is an appointment source.
func ValidSource(src string) bool { return slices.Contains(Sources, src) }

// PageSlots returns the free slots of a booking page: from today to its
// horizon (max_days_ahead), at most MaxSlotDays days.
func (s *Service) PageSlots(ctx context.Context, set store.AppointmentSettings) ([]Slot, error) {
	from := DateOf(s.now())
	return s.slotsOf(ctx, set, from, from.AddDays(min(set.MaxDaysAhead, MaxSlotDays-1)), 0)
}

// BookingPage returns the enabled booking page of token (ErrNotFound for an
// unknown token or a disabled book).
func (s *Service) BookingPage(ctx context.Context, token string) (store.BookingPage, error) {
	p, err := s.db.BookingPageByToken(ctx, token)
	if err != nil {
		return p, err
	}
	if !p.Enabled {
		return p, store.ErrNotFound
	}
	return p, nil
}
