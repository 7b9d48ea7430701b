package appointment_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
)

// The environment variables of the booking helper process (see TestMain).
const (
	helperURL   = "APPT_HELPER_DB_URL"
	helperAcct  = "APPT_HELPER_ACCOUNT"
	helperStart = "APPT_HELPER_START"
	helperAt    = "APPT_HELPER_AT"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperURL) != "" {
		os.Exit(bookingHelper())
	}
	dbtest.Main(m)
}

// testNow is the clock of these tests: Tuesday, 1 December 2026, 08:00.
var testNow = time.Date(2026, 12, 1, 8, 0, 0, 0, store.Berlin)

type env struct {
	db   *store.DB
	url  string
	acct int64
	svc  *appointment.Service
	now  *time.Time
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Praxis Sonnenschein", Email: "inhaber@praxis.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	now := testNow
	e := &env{db: db, url: url, acct: res.Account.ID, now: &now}
	clock := func() time.Time { return *e.now }
	e.svc = appointment.New(db, appointment.Config{Guard: botguard.New("appointment-tests-0123456789abcdef", clock), BaseURL: "https://rundbrief.test", Now: clock})
	return e
}

func (e *env) settings(t testing.TB, p store.AppointmentSettingsPatch) store.AppointmentSettings {
	t.Helper()
	s, err := e.svc.SaveSettings(context.Background(), e.acct, store.Actor{Type: store.ActorSystem}, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var slot0900 = time.Date(2026, 12, 2, 9, 0, 0, 0, store.Berlin)

// bookingHelper is the second process of TestConcurrentBookingsOverTwoProcesses:
// it books the same slot from 10 goroutines on its own pool at the agreed
// moment and prints how many succeeded and how many were refused.
func bookingHelper() int {
	ctx := context.Background()
	db, err := store.Open(ctx, os.Getenv(helperURL))
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	defer db.Close()
	acct, _ := strconv.ParseInt(os.Getenv(helperAcct), 10, 64)
	at, _ := time.Parse(time.RFC3339Nano, os.Getenv(helperAt))
	start, _ := time.Parse(time.RFC3339, os.Getenv(helperStart))
	svc := appointment.New(db, appointment.Config{Now: func() time.Time { return testNow }})
	ok, taken, other := bookConcurrently(ctx, svc, acct, start, at, 10, "helper")
	fmt.Printf("ok=%d taken=%d other=%d\n", ok, taken, other)
	return 0
}

// bookConcurrently books start from n goroutines that all begin at at.
func bookConcurrently(ctx context.Context, svc *appointment.Service, acct int64, start, at time.Time, n int, who string) (ok, taken, other int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Until(at))
			_, err := svc.Book(ctx, acct, store.Actor{Type: store.ActorSystem}, store.AppointmentSourceAPI, appointment.Booking{
				Start: start, Name: "Booker " + strconv.Itoa(i), Email: fmt.Sprintf("%s-%d@example.com", who, i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrSlotTaken):
				taken++
			default:
				other++
				fmt.Fprintln(os.Stderr, "book:", err)
			}
		})
	}
	wg.Wait()
	return ok, taken, other
}

// TestConcurrentBookingsOverTwoProcesses books one slot 20 times at once, 10
// times from this process and 10 times from a second process (this test
// binary started again), each with its own connections: exactly one wins,
// the others get slot_taken.
func TestConcurrentBookingsOverTwoProcesses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	at := time.Now().Add(1500 * time.Millisecond)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperURL+"="+e.url, helperAcct+"="+strconv.FormatInt(e.acct, 10),
		helperStart+"="+slot0900.Format(time.RFC3339), helperAt+"="+at.Format(time.RFC3339Nano))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ok, taken, other := bookConcurrently(ctx, e.svc, e.acct, slot0900, at, 10, "main")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out.String())
	}
	var hOK, hTaken, hOther int
	if _, err := fmt.Sscanf(strings.TrimSpace(lastLine(out.String())), "ok=%d taken=%d other=%d", &hOK, &hTaken, &hOther); err != nil {
		t.Fatalf("helper output %q: %v", out.String(), err)
	}
	if ok+hOK != 1 || taken+hTaken != 19 || other+hOther != 0 {
		t.Fatalf("this process: %d ok, %d taken, %d other; helper: %d ok, %d taken, %d other", ok, taken, other, hOK, hTaken, hOther)
	}
	var n int
	if err := e.db.GetContext(ctx, &n, `SELECT count(*) FROM appointments WHERE account_id = $1 AND status = 'booked'`, e.acct); err != nil || n != 1 {
		t.Fatalf("%d booked rows (%v)", n, err)
	}
	if err := e.db.GetContext(ctx, &n, `SELECT count(*) FROM events WHERE account_id = $1 AND name = 'appointment.booked'`, e.acct); err != nil || n != 1 {
		t.Fatalf("%d appointment.booked events (%v)", n, err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestExclusionConstraintRefusesOverlaps writes 20 overlapping bookings at
// once straight into the store over two pools, past the service's free-slot
// check: PostgreSQL's exclusion constraint lets exactly one commit.
func TestExclusionConstraintRefusesOverlaps(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	second := dbtest.Open(t, e.url)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, taken int
	start := make(chan struct{})
	for i := range 20 {
		db := e.db
		if i%2 == 1 {
			db = second
		}
		wg.Go(func() {
			<-start
			// Different starts that all overlap 09:00–09:30.
			st := slot0900.Add(time.Duration(i%3) * 10 * time.Minute)
			_, err := db.CreateAppointment(ctx, e.acct, store.Actor{Type: store.ActorSystem}, store.AppointmentInput{
				Start: st, End: st.Add(30 * time.Minute), Name: "X", Email: fmt.Sprintf("x%d@example.com", i), Source: store.AppointmentSourceAPI}, nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrSlotTaken):
				taken++
			default:
				t.Errorf("booking %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok != 1 || taken != 19 {
		t.Fatalf("%d succeeded, %d refused", ok, taken)
	}
}

// icsProps parses an iCalendar object into its content lines (unfolded),
// name (with parameters) → value, and checks CRLF line ends.
func icsProps(t *testing.T, ics string) map[string][]string {
	t.Helper()
	if strings.Contains(strings.ReplaceAll(ics, "\r\n", ""), "\n") {
		t.Error("iCalendar lines must end with CRLF")
	}
	unfolded := strings.ReplaceAll(ics, "\r\n ", "")
	out := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(unfolded), "\r\n") {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			t.Errorf("content line without a colon: %q", l)
			continue
		}
		out[name] = append(out[name], value)
	}
	for _, l := range strings.Split(ics, "\r\n") {
		if len(l) > 75 {
			t.Errorf("content line longer than 75 octets: %q", l)
		}
	}
	return out
}

// parts returns the leaf MIME parts of a raw message: content type → body
// (decoded from base64 or quoted-printable).
func parts(t *testing.T, raw []byte) (map[string]string, *mail.Message) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(ct string, cte string, body io.Reader)
	walk = func(ct, cte string, body io.Reader) {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(mt, "multipart/") {
			r := multipart.NewReader(body, params["boundary"])
			for {
				p, err := r.NextRawPart()
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				walk(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p)
			}
		}
		b, _ := io.ReadAll(body)
		switch strings.ToLower(cte) {
		case "base64":
			d, err := base64.StdEncoding.DecodeString(strings.NewReplacer("\r", "", "\n", "").Replace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			b = d
		case "quoted-printable":
			d, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(b)))
			if err != nil {
				t.Fatal(err)
			}
			b = d
		}
		key := mt
		if m := params["method"]; m != "" {
			key += ";method=" + m
		}
		out[key] = string(b)
	}
	walk(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	return out, msg
}

// TestBookingMailsCarryInvitations books through the service, sends the
// queued mails through a real SMTP server and reads the invitation back:
// METHOD:REQUEST with the appointment's UID and DTSTART in Europe/Berlin with
// a VTIMEZONE, the cancellation link, the owner's notification; cancelling
// sends METHOD:CANCEL with the same UID and a higher SEQUENCE.
func TestBookingMailsCarryInvitations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.settings(t, store.AppointmentSettingsPatch{Title: ptr("Erstgespräch"), Description: ptr("Bitte bringen Sie Unterlagen mit; Dauer: 30 Minuten.")})
	a, err := e.svc.Book(ctx, e.acct, store.Actor{Type: store.ActorSystem}, store.AppointmentSourcePortal, appointment.Booking{
		Start: slot0900, Name: "Erika Mustermann", Email: "erika@beispiel.de", Phone: "+49 30 123"})
	if err != nil {
		t.Fatal(err)
	}
	srv := smtptest.Start(t, smtptest.Options{})
	box, err := secret.NewBox("appointment-mail-tests-0123456789abcd")
	if err != nil {
		t.Fatal(err)
	}
	relay, err := mailer.ParseRelayURL("smtp://"+srv.Addr()+"?from=termine@rundbrief.test&from_name=Rundbrief", mailer.Address{})
	if err != nil {
		t.Fatal(err)
	}
	// The account's own SMTP server carries the mail to the booker, as the
	// account's other mail; the owner's notification is system mail (relay).
	own := smtptest.Start(t, smtptest.Options{})
	if _, err := e.db.CreateSMTPServer(ctx, box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Praxis", Host: own.Host, Port: own.Port, Encryption: store.EncryptionNone, FromEmail: "termine@praxis.test", FromName: "Praxis"}}); err != nil {
		t.Fatal(err)
	}
	tr := mailer.NewTransports(e.db, box, mailer.TransportOptions{Relay: &relay, HELO: "rundbrief.test"})
	w := mailer.NewSystemMailWorker(e.db, tr, mailer.SystemMailOptions{BaseURL: "https://rundbrief.test"})
	if n, err := w.SendDue(ctx); err != nil || n != 2 {
		t.Fatalf("SendDue: %d %v", n, err)
	}
	ownMsgs, relayMsgs := own.Messages(), srv.Messages()
	if len(ownMsgs) != 1 || ownMsgs[0].To[0] != "erika@beispiel.de" || ownMsgs[0].From != "termine@praxis.test" ||
		len(relayMsgs) != 1 || relayMsgs[0].To[0] != "inhaber@praxis.test" {
		t.Fatalf("the account's server got %+v, the relay %+v", ownMsgs, relayMsgs)
	}
	msgs := []smtptest.Message{ownMsgs[0], relayMsgs[0]}
	booker, hdr := parts(t, msgs[0].Data)
	if got := hdr.Header.Get("Subject"); !strings.Contains(decodeHeader(t, got), "Erstgespräch") {
		t.Errorf("subject %q", got)
	}
	cal, ok := booker["text/calendar;method=REQUEST"]
	if !ok {
		t.Fatalf("no text/calendar; method=REQUEST part: %v", keys(booker))
	}
	if booker["application/ics"] != cal {
		t.Error("the invite.ics attachment differs from the calendar part")
	}
	p := icsProps(t, cal)
	var uid string
	if err := e.db.GetContext(ctx, &uid, `SELECT uid FROM appointments WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"METHOD": "REQUEST", "UID": uid, "SEQUENCE": "0", "DTSTART;TZID=Europe/Berlin": "20261202T090000",
		"DTEND;TZID=Europe/Berlin": "20261202T093000", "TZID": "Europe/Berlin", "STATUS": "CONFIRMED",
		"SUMMARY": "Erstgespräch", "DESCRIPTION": `Bitte bringen Sie Unterlagen mit\; Dauer: 30 Minuten.`,
		"ORGANIZER;CN=\"Praxis Sonnenschein\"": "mailto:inhaber@praxis.test",
	}
	for k, want := range checks {
		if got := p[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if len(p["BEGIN"]) != 5 { // VCALENDAR, VTIMEZONE, DAYLIGHT, STANDARD, VEVENT
		t.Errorf("components: %v", p["BEGIN"])
	}
	text := booker["text/plain"]
	i := strings.Index(text, "https://rundbrief.test/book/cancel/")
	if i < 0 {
		t.Fatalf("no cancellation link in %q", text)
	}
	token := strings.Fields(text[i+len("https://rundbrief.test/book/cancel/"):])[0]
	owner, _ := parts(t, msgs[1].Data)
	if !strings.Contains(owner["text/plain"], "Erika Mustermann") || !strings.Contains(owner["text/plain"], "+49 30 123") {
		t.Errorf("owner mail: %q", owner["text/plain"])
	}

	// The link cancels: METHOD:CANCEL, same UID, higher SEQUENCE.
	got, already, err := e.svc.CancelByToken(ctx, token)
	if err != nil || already || got.Status != store.AppointmentCancelled {
		t.Fatalf("cancel by link: %+v %v %v", got, already, err)
	}
	if _, already, _ := e.svc.CancelByToken(ctx, token); !already {
		t.Error("a second use of the link cancels again")
	}
	if n, err := w.SendDue(ctx); err != nil || n != 2 {
		t.Fatalf("SendDue after cancelling: %d %v", n, err)
	}
	if len(own.Messages()) != 2 {
		t.Fatalf("the cancellation did not go through the account's server: %d", len(own.Messages()))
	}
	cancel, _ := parts(t, own.Messages()[1].Data)
	cal, ok = cancel["text/calendar;method=CANCEL"]
	if !ok {
		t.Fatalf("no text/calendar; method=CANCEL part: %v", keys(cancel))
	}
	p = icsProps(t, cal)
	if p["METHOD"][0] != "CANCEL" || p["UID"][0] != uid || p["SEQUENCE"][0] != "1" || p["STATUS"][0] != "CANCELLED" ||
		p["DTSTART;TZID=Europe/Berlin"][0] != "20261202T090000" {
		t.Errorf("cancellation: %v", p)
	}
}

func keys(m map[string]string) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}

func decodeHeader(t *testing.T, s string) string {
	t.Helper()
	d, err := new(mime.WordDecoder).DecodeHeader(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ptr[T any](v T) *T { return &v }

// TestRemindersAreQueuedOnceWithAnInjectedClock moves the clock past the
// reminder window and runs two workers on two pools at once: each reminder
// is queued exactly once; none is queued before its window, for a booking
// made inside the window, or with reminder_hours 0.
func TestRemindersAreQueuedOnceWithAnInjectedClock(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sys := store.Actor{Type: store.ActorSystem}
	// Booked on 1 December for 3 December 09:00 and 10:00.
	a, err := e.svc.Book(ctx, e.acct, sys, store.AppointmentSourceAPI, appointment.Booking{Start: slot0900.AddDate(0, 0, 1), Name: "A", Email: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.svc.Book(ctx, e.acct, sys, store.AppointmentSourceAPI, appointment.Booking{Start: slot0900.AddDate(0, 0, 1).Add(time.Hour), Name: "B", Email: "b@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	// Booked on 2 December 12:00 for 3 December 11:00: inside the window, no reminder.
	*e.now = time.Date(2026, 12, 2, 12, 0, 0, 0, store.Berlin)
	if _, err := e.svc.Book(ctx, e.acct, sys, store.AppointmentSourceAPI, appointment.Booking{Start: slot0900.AddDate(0, 0, 1).Add(2 * time.Hour), Name: "C", Email: "c@example.com"}); err != nil {
		t.Fatal(err)
	}
	second := dbtest.Open(t, e.url)
	var clock time.Time
	now := func() time.Time { return clock }
	w1 := appointment.NewWorker(e.db, appointment.WorkerOptions{Now: now, Batch: 1})
	w2 := appointment.NewWorker(second, appointment.WorkerOptions{Now: now, Batch: 1})
	reminders := func() map[string]int {
		var rows []struct {
			To string `db:"to_email"`
		}
		if err := e.db.SelectContext(ctx, &rows, `SELECT to_email FROM system_mails WHERE account_id = $1 AND kind = $2`, e.acct, store.SystemMailAppointmentReminder); err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, r := range rows {
			out[r.To]++
		}
		return out
	}
	both := func() int {
		var wg sync.WaitGroup
		var n1, n2 int
		wg.Go(func() {
			var err error
			if n1, err = w1.QueueDue(ctx); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			var err error
			if n2, err = w2.QueueDue(ctx); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		return n1 + n2
	}
	clock = a.Start.Add(-24*time.Hour - time.Minute)
	if n := both(); n != 0 {
		t.Fatalf("%d reminders before the window", n)
	}
	clock = a.Start.Add(-24 * time.Hour)
	if n := both(); n != 1 {
		t.Fatalf("%d reminders at 24 h before the first", n)
	}
	clock = b.Start.Add(-23 * time.Hour)
	if n := both(); n != 1 {
		t.Fatalf("%d reminders for the second", n)
	}
	clock = b.Start.Add(-time.Hour)
	if n := both(); n != 0 {
		t.Fatalf("%d reminders again", n)
	}
	if got := reminders(); len(got) != 2 || got["a@example.com"] != 1 || got["b@example.com"] != 1 {
		t.Fatalf("reminders: %v", got)
	}
	// Off with 0.
	e.settings(t, store.AppointmentSettingsPatch{ReminderHours: ptr(0)})
	*e.now = time.Date(2026, 12, 1, 8, 0, 0, 0, store.Berlin)
	d, err := e.svc.Book(ctx, e.acct, sys, store.AppointmentSourceAPI, appointment.Booking{Start: slot0900.AddDate(0, 0, 2), Name: "D", Email: "d@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	clock = d.Start.Add(-time.Hour)
	if n := both(); n != 0 {
		t.Fatalf("%d reminders with reminder_hours 0", n)
	}
}

// TestPublicBookingChecks covers the booking page's rules: a disabled book is
// not found, the honeypot stores nothing, the stamp and the consent are
// required, and the rate limit per address has its own budget.
func TestPublicBookingChecks(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.settings(t, store.AppointmentSettingsPatch{MinFillSeconds: ptr(2)})
	in := appointment.PublicBooking{Booking: appointment.Booking{Start: slot0900, Name: "Erika", Email: "erika@example.com"}, Consent: true, IP: "203.0.113.7"}
	if _, err := e.svc.BookPublic(ctx, s.Token, in); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("disabled book: %v", err)
	}
	e.settings(t, store.AppointmentSettingsPatch{Enabled: ptr(true)})
	in.Stamp = e.svc.Stamp(s.Token)
	var ve *store.ValidationError
	if _, err := e.svc.BookPublic(ctx, s.Token, in); !errors.As(err, &ve) || ve.Fields[store.FieldStamp] == "" {
		t.Fatalf("too fast: %v", err)
	}
	*e.now = e.now.Add(3 * time.Second)
	noConsent := in
	noConsent.Consent = false
	if _, err := e.svc.BookPublic(ctx, s.Token, noConsent); !errors.As(err, &ve) || ve.Fields[appointment.FieldConsent] == "" {
		t.Fatalf("no consent: %v", err)
	}
	bot := in
	bot.Honeypot = "http://spam.example"
	if res, err := e.svc.BookPublic(ctx, s.Token, bot); err != nil || !res.Discarded {
		t.Fatalf("honeypot: %+v %v", res, err)
	}
	res, err := e.svc.BookPublic(ctx, s.Token, in)
	if err != nil || res.Appointment.Source != store.AppointmentSourceBookingPage || res.Appointment.ContactID == nil {
		t.Fatalf("booking: %+v %v", res, err)
	}
	var n int
	if err := e.db.GetContext(ctx, &n, `SELECT count(*) FROM appointments WHERE account_id = $1`, e.acct); err != nil || n != 1 {
		t.Fatalf("%d appointments (%v)", n, err)
	}
	// The address's budget: 10 per minute (the first booking counted), then 429.
	var limited int
	for i := range 10 {
		next := in
		next.Start = slot0900.Add(time.Duration(i+1) * 30 * time.Minute)
		if _, err := e.svc.BookPublic(ctx, s.Token, next); err != nil {
			var rl *store.RateLimitError
			if !errors.As(err, &rl) {
				t.Fatalf("booking %d: %v", i, err)
			}
			limited++
		}
	}
	if limited != 1 {
		t.Fatalf("%d bookings refused by the rate limit, want 1", limited)
	}
	// Sign-ups from the address have their own budget.
	if err := e.db.GetContext(ctx, &n, `SELECT count(*) FROM rate_counters WHERE bucket = $1`, store.SignUpIPBucket(e.acct, in.IP)); err != nil || n != 0 {
		t.Fatalf("sign-up bucket touched: %d %v", n, err)
	}
}
