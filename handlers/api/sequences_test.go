package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/handlers/api"
	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/mailer/smtptest"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/sequence"
	"github.com/rundbrief/rundbrief/store/services"
)

// seqEnv is an account on a plan with an API holding the sequence service,
// its SMTP server a real test server and a send worker running; aiSvc (nil:
// none) is the AI service.
type seqEnv struct {
	db       *store.DB
	acct     int64
	srv      *smtptest.Server
	serverID int64
	c        *apitest.Client
	now      time.Time
}

func newSeqEnv(t *testing.T, plan string, aiSvc func(db *store.DB) *ai.Service) *seqEnv {
	t.Helper()
	ctx := context.Background()
	db := dbtest.NewDB(t)
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: "Acme GmbH", Email: "owner@acme.test", Password: "a long password", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := db.CreateKey(ctx, res.Account.ID, store.KeySettings{Name: "default"})
	if err != nil {
		t.Fatal(err)
	}
	e := &seqEnv{db: db, acct: res.Account.ID, srv: smtptest.Start(t, smtptest.Options{}),
		now: time.Date(2026, 3, 27, 10, 0, 0, 0, store.Berlin)} // a Friday before summer time
	box, err := secret.NewBox(sendAPISecret)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSMTPServer(ctx, box, e.acct, store.NewSMTPServer{SMTPServerSettings: store.SMTPServerSettings{
		Name: "Test", Host: e.srv.Host, Port: e.srv.Port, Encryption: "none", FromEmail: "story@acme.test", FromName: "Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	e.serverID = s.ID
	tokens, err := mailer.NewTokens(sendAPISecret)
	if err != nil {
		t.Fatal(err)
	}
	links := mailer.LinkBuilder{BaseURL: "https://rundbrief.test", Tokens: tokens}
	mail := mailer.NewTransports(db, box, mailer.TransportOptions{HELO: "rundbrief.test"})
	w := mailer.NewWorker(db, mail, mailer.WorkerOptions{Links: links, PollInterval: 20 * time.Millisecond})
	campaigns := campaign.New(db, mail, w, campaign.Options{Links: links})
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(runCtx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var aiService *ai.Service
	if aiSvc != nil {
		aiService = aiSvc(db)
	}
	clock := func() time.Time { return e.now }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.New(&services.Set{DB: db, APILog: store.NewAPILogWriter(db, log), Log: log, Box: box, Mail: mail, Campaigns: campaigns, AI: aiService,
		Sequences: sequence.New(db, aiService, campaigns, mail, w, sequence.Options{Now: clock}), ABTests: abtest.New(db, w, abtest.Options{})},
		api.Config{BaseURL: "https://rundbrief.test", RateLimit: 1_000_000})
	r := chi.NewRouter()
	r.Mount("/v1", a.Handler())
	e.c = apitest.NewClient(t, r, apitest.NewValidator(t, api.OpenAPIDocument()))
	e.c.Header.Set("Authorization", "Bearer "+key)
	return e
}

func (e *seqEnv) do(t *testing.T, method, path string, body any, status int) *apitest.Response {
	t.Helper()
	r := e.c.Request(method, path, body)
	if r.Status != status {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	return r
}

func (e *seqEnv) contacts(t *testing.T, prefix string, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := e.db.ExecContext(ctx, `INSERT INTO contacts (account_id, email, first_name)
SELECT $1, $3 || g || '@example.com', 'Vorname' || g FROM generate_series(1, $2::int) AS g`, e.acct, n, prefix); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := e.db.SelectContext(ctx, &ids, `SELECT id FROM contacts WHERE account_id = $1 AND email LIKE $2 ORDER BY id`, e.acct, prefix+"%"); err != nil {
		t.Fatal(err)
	}
	return ids
}

type seqOut struct {
	ID                int64   `json:"id"`
	Status            string  `json:"status"`
	Trigger           string  `json:"trigger"`
	SendTime          *string `json:"send_time"`
	DaysCount         int     `json:"days_count"`
	ParticipantsCount int     `json:"participants_count"`
}

type dayOut struct {
	ID        int64  `json:"id"`
	Position  int    `json:"position"`
	DelayDays int    `json:"delay_days"`
	Subject   string `json:"subject"`
	HTML      string `json:"html"`
}

// TestSequencesAPI walks a sequence through its endpoints: create (inactive),
// activate refused without days, days added, inserted and deleted with
// renumbering, enrolment with enrolled/skipped counts and the 1000 limit,
// participants, deactivate, delete; other accounts' ids are 404 and every
// response matches openapi.json.
func TestSequencesAPI(t *testing.T) {
	t.Parallel()
	e := newSeqEnv(t, "pro", nil)
	var s seqOut
	e.do(t, "POST", "/v1/sequences", map[string]any{"name": "Willkommen", "send_time": "09:00"}, 201).Data(t, &s)
	if s.Status != "inactive" || s.Trigger != "manual" || s.SendTime == nil || *s.SendTime != "09:00" {
		t.Fatalf("created: %+v", s)
	}
	base := fmt.Sprintf("/v1/sequences/%d", s.ID)
	r := e.do(t, "POST", base+"/activate", nil, 422)
	if !strings.Contains(string(r.Body), `"days"`) {
		t.Fatalf("activate without days: %s", r.Body)
	}
	e.do(t, "POST", "/v1/sequences", map[string]any{"name": "x", "trigger": "list"}, 422)
	e.do(t, "POST", "/v1/sequences", map[string]any{"name": "x", "send_time": "25:00"}, 422)

	var d1, d2, d3 dayOut
	e.do(t, "POST", base+"/days", map[string]any{"subject": "Eins", "html": "<p>1</p>"}, 201).Data(t, &d1)
	e.do(t, "POST", base+"/days", map[string]any{"subject": "Drei", "html": "<p>3</p>", "delay_days": 2}, 201).Data(t, &d3)
	e.do(t, "POST", base+"/days", map[string]any{"subject": "Zwei", "html": "<p>2</p>", "position": 2}, 201).Data(t, &d2)
	if d1.Position != 1 || d1.DelayDays != 0 || d2.Position != 2 || d2.DelayDays != 1 {
		t.Fatalf("days: %+v %+v", d1, d2)
	}
	var days []dayOut
	e.do(t, "GET", base+"/days", nil, 200).Data(t, &days)
	if len(days) != 3 || days[0].Subject != "Eins" || days[1].Subject != "Zwei" || days[2].Subject != "Drei" || days[2].Position != 3 {
		t.Fatalf("days in order: %+v", days)
	}
	e.do(t, "PATCH", fmt.Sprintf("%s/days/%d", base, d3.ID), map[string]any{"delay_days": 3, "subject": "Drei!"}, 200).Data(t, &d3)
	if d3.DelayDays != 3 || d3.Subject != "Drei!" {
		t.Fatalf("patched: %+v", d3)
	}
	e.do(t, "DELETE", fmt.Sprintf("%s/days/%d", base, d2.ID), nil, 204)
	e.do(t, "GET", base+"/days", nil, 200).Data(t, &days)
	if len(days) != 2 || days[1].ID != d3.ID || days[1].Position != 2 {
		t.Fatalf("after delete: %+v", days)
	}
	e.do(t, "PATCH", fmt.Sprintf("%s/days/%d", base, 999999), map[string]any{"subject": "x"}, 404)
	// Reorder: the last day to the front and back again.
	var moved dayOut
	e.do(t, "PATCH", fmt.Sprintf("%s/days/%d", base, d3.ID), map[string]any{"position": 1}, 200).Data(t, &moved)
	e.do(t, "GET", base+"/days", nil, 200).Data(t, &days)
	if moved.Position != 1 || days[0].ID != d3.ID || days[1].ID != d1.ID || days[1].Position != 2 {
		t.Fatalf("reordered: %+v", days)
	}
	e.do(t, "PATCH", fmt.Sprintf("%s/days/%d", base, d3.ID), map[string]any{"position": 9}, 200).Data(t, &moved)
	if moved.Position != 2 {
		t.Fatalf("moved back: %+v", moved)
	}

	ids := e.contacts(t, "seq", 3)
	var er struct {
		Enrolled int `json:"enrolled"`
		Skipped  int `json:"skipped"`
	}
	e.do(t, "POST", base+"/participants", map[string]any{"contact_ids": []int64{ids[0], ids[1], ids[0]}}, 200).Data(t, &er)
	if er.Enrolled != 2 || er.Skipped != 1 {
		t.Fatalf("enrol: %+v", er)
	}
	e.do(t, "POST", base+"/participants", map[string]any{"emails": []string{"SEQ3@example.com", "seq1@example.com", "nobody@example.com"}}, 200).Data(t, &er)
	if er.Enrolled != 1 || er.Skipped != 2 {
		t.Fatalf("enrol by email: %+v", er)
	}
	many := make([]int64, 1001)
	for i := range many {
		many[i] = int64(i + 1)
	}
	e.do(t, "POST", base+"/participants", map[string]any{"contact_ids": many}, 413)
	e.do(t, "POST", base+"/participants", map[string]any{}, 422)

	e.do(t, "POST", base+"/activate", nil, 200).Data(t, &s)
	if s.Status != "active" || s.DaysCount != 2 || s.ParticipantsCount != 3 {
		t.Fatalf("activated: %+v", s)
	}
	var parts []struct {
		ContactID  int64   `json:"contact_id"`
		Status     string  `json:"status"`
		CurrentDay int     `json:"current_day"`
		NextSendAt *string `json:"next_send_at"`
	}
	e.do(t, "GET", base+"/participants?status=active", nil, 200).Data(t, &parts)
	if len(parts) != 3 || parts[0].CurrentDay != 0 || parts[0].NextSendAt == nil || !strings.HasPrefix(*parts[0].NextSendAt, "2026-03-28T09:00:00+01:00") {
		t.Fatalf("participants: %+v", parts)
	}
	e.do(t, "DELETE", fmt.Sprintf("%s/participants/%d", base, ids[2]), nil, 204)
	e.do(t, "DELETE", fmt.Sprintf("%s/participants/%d", base, ids[2]), nil, 404)
	e.do(t, "POST", base+"/deactivate", nil, 200).Data(t, &s)
	if s.Status != "inactive" || s.ParticipantsCount != 2 {
		t.Fatalf("deactivated: %+v", s)
	}
	e.do(t, "PATCH", base, map[string]any{"send_time": nil, "name": "Neu"}, 200).Data(t, &s)
	if s.SendTime != nil {
		t.Fatalf("send_time not cleared: %+v", s)
	}
	var list []seqOut
	e.do(t, "GET", "/v1/sequences", nil, 200).Data(t, &list)
	if len(list) != 1 {
		t.Fatalf("list: %+v", list)
	}

	// Another account's sequence is not found.
	other := newSeqEnv(t, "business", nil)
	other.do(t, "GET", base, nil, 404)
	other.do(t, "POST", base+"/participants", map[string]any{"contact_ids": []int64{1}}, 404)

	e.do(t, "DELETE", base, nil, 204)
	e.do(t, "GET", base, nil, 404)

	// Without the plan feature: 402 plan_required, feature sequences.
	starter := newSeqEnv(t, "starter", nil)
	r = starter.do(t, "GET", "/v1/sequences", nil, 402)
	if !strings.Contains(string(r.Body), `"feature":"sequences"`) {
		t.Fatalf("402 without feature: %s", r.Body)
	}
}

func outlineJSON(n int) string {
	var b strings.Builder
	b.WriteString("```json\n{\"days\": [")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"subject": "Tag %d: Die Geschichte", "preheader": "Vorschau %d", "html": "<p>Hallo {{vorname}}, Teil %d.</p>"}`, i, i, i)
	}
	b.WriteString("]}\n```")
	return b.String()
}

// TestSequenceOutline writes days with the fake AI providers: a fenced JSON
// answer is appended as days and charged; save:false appends nothing; a
// malformed answer is a 503 with nothing charged; without a provider 503.
func TestSequenceOutline(t *testing.T) {
	t.Parallel()
	var fake *aitest.Server
	e := newSeqEnv(t, "pro", func(db *store.DB) *ai.Service {
		fake = aitest.NewAnthropic(t, "sk-ant-test", aitest.Fixed(aitest.Reply{Text: outlineJSON(4), TokensIn: 500, TokensOut: 1500}))
		return ai.NewService(db, ai.Config{Primary: ai.NewAnthropic(fake.URL, "sk-ant-test"), AttemptTimeout: 2 * time.Second, RetryDelay: time.Millisecond})
	})
	if _, err := e.db.AITopUp(context.Background(), e.acct, 10*store.EUR); err != nil {
		t.Fatal(err)
	}
	var s seqOut
	e.do(t, "POST", "/v1/sequences", map[string]any{"name": "KI"}, 201).Data(t, &s)
	base := fmt.Sprintf("/v1/sequences/%d", s.ID)
	var out struct {
		Days []struct {
			ID        *int64 `json:"id"`
			Position  *int   `json:"position"`
			DelayDays *int   `json:"delay_days"`
			Subject   string `json:"subject"`
		} `json:"days"`
		Saved   bool    `json:"saved"`
		CostEUR float64 `json:"cost_eur"`
	}
	e.do(t, "POST", base+"/outline", map[string]any{"topic": "Sauerteig backen", "days": 4, "goal": "Kurs verkaufen", "tone": "locker"}, 200).Data(t, &out)
	if len(out.Days) != 4 || !out.Saved || out.CostEUR <= 0 || out.Days[0].ID == nil || *out.Days[0].DelayDays != 0 || *out.Days[3].Position != 4 {
		t.Fatalf("outline: %+v", out)
	}
	if c := fake.Calls(); len(c) != 1 || !strings.Contains(c[0].User, "genau 4") || !strings.Contains(c[0].System, `{"days"`) {
		t.Fatalf("prompt: %+v", c)
	}
	e.do(t, "GET", base, nil, 200).Data(t, &s)
	if s.DaysCount != 4 {
		t.Fatalf("days_count %d", s.DaysCount)
	}
	balance := func() store.Money {
		b, err := e.db.AIBalance(context.Background(), e.acct)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := balance()
	e.do(t, "POST", base+"/outline", map[string]any{"topic": "Sauerteig", "days": 4, "save": false}, 200).Data(t, &out)
	if out.Saved || out.Days[0].ID != nil || balance() >= before {
		t.Fatalf("save:false: %+v, balance %v → %v", out, before, balance())
	}
	e.do(t, "GET", base, nil, 200).Data(t, &s)
	if s.DaysCount != 4 {
		t.Fatalf("save:false appended: %d days", s.DaysCount)
	}
	// Malformed answers: not JSON, the wrong number of days, a day without html.
	for _, text := range []string{"Hier ist Ihre Sequenz: Tag 1 …", outlineJSON(3), `{"days":[{"subject":"a"},{"subject":"b"},{"subject":"c"},{"subject":"d"}]}`} {
		fake.SetRespond(aitest.Fixed(aitest.Reply{Text: text}))
		before = balance()
		r := e.do(t, "POST", base+"/outline", map[string]any{"topic": "Sauerteig", "days": 4}, 503)
		if r.ErrorCode(t) != "service_unavailable" || balance() != before {
			t.Fatalf("malformed %q: %s, balance %v → %v", text, r.Body, before, balance())
		}
	}
	e.do(t, "POST", base+"/outline", map[string]any{"topic": "Sauerteig", "days": 2}, 422)
	e.do(t, "POST", base+"/outline", map[string]any{"days": 5}, 422)
	e.do(t, "POST", "/v1/sequences/999999/outline", map[string]any{"topic": "x"}, 404)

	// No provider configured: 503, nothing charged.
	none := newSeqEnv(t, "pro", nil)
	var s2 seqOut
	none.do(t, "POST", "/v1/sequences", map[string]any{"name": "ohne KI"}, 201).Data(t, &s2)
	none.do(t, "POST", fmt.Sprintf("/v1/sequences/%d/outline", s2.ID), map[string]any{"topic": "x"}, 503)
	// A plan without the feature ai: 402 plan_required.
	starter := newSeqEnv(t, "starter", nil)
	if _, err := starter.db.ExecContext(context.Background(), `UPDATE plans SET features = array_append(features, 'sequences') WHERE name = 'starter'`); err != nil {
		t.Fatal(err)
	}
	var s3 seqOut
	starter.do(t, "POST", "/v1/sequences", map[string]any{"name": "ohne KI"}, 201).Data(t, &s3)
	r := starter.do(t, "POST", fmt.Sprintf("/v1/sequences/%d/outline", s3.ID), map[string]any{"topic": "x"}, 402)
	if !strings.Contains(string(r.Body), `"feature":"ai"`) {
		t.Fatalf("outline without ai: %s", r.Body)
	}
}

type storyOut struct {
	ID          int64   `json:"id"`
	Status      string  `json:"status"`
	ScheduledAt *string `json:"scheduled_at"`
	CampaignID  int64   `json:"campaign_id"`
	Sent        *int64  `json:"sent"`
	Opens       *int64  `json:"opens"`
}

// TestStoryEmailsAPI covers the story email settings, drafts, the schedule
// on the next free allowed weekday at send_time (one per day, across the
// change to summer time), explicit schedules, test mails, sending now
// through the send queue to a real SMTP server and the campaigns listing.
func TestStoryEmailsAPI(t *testing.T) {
	t.Parallel()
	e := newSeqEnv(t, "starter", nil)
	ids := e.contacts(t, "story", 3)
	ctx := context.Background()
	name := "Story"
	l, err := e.db.CreateList(ctx, e.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.AddListMembers(ctx, e.acct, store.Actor{Type: store.ActorSystem}, l.ID, ids, nil); err != nil {
		t.Fatal(err)
	}
	var set struct {
		ListIDs  []int64 `json:"list_ids"`
		SendTime string  `json:"send_time"`
		Weekdays []int64 `json:"weekdays"`
	}
	e.do(t, "GET", "/v1/story-emails/settings", nil, 200).Data(t, &set)
	if set.SendTime != "08:00" || len(set.Weekdays) != 7 {
		t.Fatalf("defaults: %+v", set)
	}
	e.do(t, "PUT", "/v1/story-emails/settings", map[string]any{"weekdays": []int{8}}, 422)
	e.do(t, "PUT", "/v1/story-emails/settings", map[string]any{"send_time": "7:5"}, 422)
	e.do(t, "PUT", "/v1/story-emails/settings", map[string]any{"list_ids": []int64{l.ID}, "send_time": "07:30",
		"weekdays": []int{7, 1, 2}, "from_name": "Anna"}, 200).Data(t, &set)
	if set.SendTime != "07:30" || len(set.Weekdays) != 3 || set.Weekdays[0] != 1 || set.ListIDs[0] != l.ID {
		t.Fatalf("saved: %+v", set)
	}

	create := func(subject string) storyOut {
		var s storyOut
		e.do(t, "POST", "/v1/story-emails", map[string]any{"subject": subject, "html": "<p>Hallo {{vorname}}</p>"}, 201).Data(t, &s)
		return s
	}
	// Now: Friday 27 March 2026, 10:00. Allowed: Sunday, Monday, Tuesday.
	// Sunday 29 March is the day summer time starts: 07:30 is +02:00.
	want := []string{"2026-03-29T07:30:00+02:00", "2026-03-30T07:30:00+02:00", "2026-03-31T07:30:00+02:00", "2026-04-05T07:30:00+02:00"}
	var stories []storyOut
	for i, w := range want {
		s := create(fmt.Sprintf("Geschichte %d", i+1))
		e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/schedule", s.ID), nil, 200).Data(t, &s)
		if s.Status != "scheduled" || s.ScheduledAt == nil || *s.ScheduledAt != w {
			t.Fatalf("story %d scheduled %v, want %s", i+1, s.ScheduledAt, w)
		}
		stories = append(stories, s)
	}
	// Explicit time; a past one is refused.
	s := create("Termin")
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/schedule", s.ID), map[string]any{"scheduled_at": "2026-01-01 09:00"}, 422)
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/schedule", s.ID), map[string]any{"scheduled_at": "2026-04-10 18:00"}, 200).Data(t, &s)
	if *s.ScheduledAt != "2026-04-10T18:00:00+02:00" {
		t.Fatalf("explicit: %v", *s.ScheduledAt)
	}
	// One story email per Berlin day holds for an explicit time too: 30 March
	// (00:30 Berlin is still that day, 22:30 UTC of the 29th) and 10 April
	// are taken; the email itself may move within its own day.
	other := create("Gleicher Tag")
	for _, at := range []string{"2026-03-30 20:00", "2026-03-29T22:30:00Z", "2026-04-10 06:00"} {
		r := e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/schedule", other.ID), map[string]any{"scheduled_at": at}, 409)
		if r.ErrorCode(t) != "conflict" || !strings.Contains(string(r.Body), `"reason":"story_day_taken"`) || !strings.Contains(string(r.Body), "bereits eine Story-E-Mail") {
			t.Fatalf("same day %s: %s", at, r.Body)
		}
	}
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/schedule", s.ID), map[string]any{"scheduled_at": "2026-04-10 19:00"}, 200)
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/schedule", other.ID), map[string]any{"scheduled_at": "2026-04-11 09:00"}, 200)
	e.do(t, "DELETE", fmt.Sprintf("/v1/story-emails/%d", other.ID), nil, 204)
	e.do(t, "PATCH", fmt.Sprintf("/v1/story-emails/%d", stories[0].ID), map[string]any{"subject": "Neu"}, 200)

	// Test mail and send now.
	now := create("Jetzt")
	var tr struct {
		Sent int `json:"sent"`
	}
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/test", now.ID), map[string]any{"to": []string{"test@acme.test"}}, 200).Data(t, &tr)
	if tr.Sent != 1 {
		t.Fatalf("test: %+v", tr)
	}
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/test", now.ID), map[string]any{"to": []string{"a@x.de", "b@x.de", "c@x.de", "d@x.de", "e@x.de", "f@x.de"}}, 422)
	var sr struct {
		Status     string `json:"status"`
		Queued     int    `json:"queued"`
		CampaignID int64  `json:"campaign_id"`
	}
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/send", now.ID), nil, 202).Data(t, &sr)
	if sr.Queued != 3 || sr.CampaignID != now.ID {
		t.Fatalf("send: %+v", sr)
	}
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/send", now.ID), nil, 409)
	deadline := time.Now().Add(30 * time.Second)
	for {
		e.do(t, "GET", fmt.Sprintf("/v1/story-emails/%d", now.ID), nil, 200).Data(t, &now)
		if now.Status == "sent" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if now.Status != "sent" || now.Sent == nil || *now.Sent != 3 || now.Opens == nil {
		t.Fatalf("after sending: %+v", now)
	}
	if e.srv.Count() != 4 { // the test mail and three story mails
		t.Fatalf("%d messages", e.srv.Count())
	}
	var camps []struct {
		ID   int64  `json:"id"`
		Kind string `json:"kind"`
	}
	e.do(t, "GET", "/v1/campaigns?kind=story", nil, 200).Data(t, &camps)
	if len(camps) != 6 || camps[0].ID != now.ID || camps[0].Kind != "story" {
		t.Fatalf("campaigns: %+v", camps)
	}
	var list []storyOut
	e.do(t, "GET", "/v1/story-emails", nil, 200).Data(t, &list)
	if len(list) != 6 {
		t.Fatalf("list: %d", len(list))
	}
	e.do(t, "DELETE", fmt.Sprintf("/v1/story-emails/%d", stories[3].ID), nil, 204)
	e.do(t, "GET", fmt.Sprintf("/v1/story-emails/%d", stories[3].ID), nil, 404)
}

// TestSeinfeldABTest runs an A/B test of a story email's subject through the
// A/B machinery: the test on target_type seinfeld starts when the story
// email is sent, and the recipients get both subjects.
func TestSeinfeldABTest(t *testing.T) {
	t.Parallel()
	e := newSeqEnv(t, "pro", nil)
	ids := e.contacts(t, "ab", 10)
	ctx := context.Background()
	name := "Story"
	l, err := e.db.CreateList(ctx, e.acct, store.Actor{Type: store.ActorSystem}, store.ListInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.AddListMembers(ctx, e.acct, store.Actor{Type: store.ActorSystem}, l.ID, ids, nil); err != nil {
		t.Fatal(err)
	}
	e.do(t, "PUT", "/v1/story-emails/settings", map[string]any{"list_ids": []int64{l.ID}}, 200)
	var st storyOut
	e.do(t, "POST", "/v1/story-emails", map[string]any{"subject": "Betreff A", "html": "<p>Hallo</p>"}, 201).Data(t, &st)
	var ab struct {
		ID         int64  `json:"id"`
		TargetType string `json:"target_type"`
		Status     string `json:"status"`
	}
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"target_type": "seinfeld", "target_id": st.ID, "test_type": "subject",
		"b_subject": "Betreff B"}, 201).Data(t, &ab)
	if ab.TargetType != "seinfeld" {
		t.Fatalf("test: %+v", ab)
	}
	// The short form campaign_id names the story email's campaign too.
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"campaign_id": st.ID, "test_type": "subject", "b_subject": "X"}, 409)
	e.do(t, "POST", fmt.Sprintf("/v1/story-emails/%d/send", st.ID), nil, 202)
	deadline := time.Now().Add(30 * time.Second)
	for e.srv.Count() < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	subjects := map[string]int{}
	for _, m := range e.srv.Messages() {
		for _, line := range strings.Split(string(m.Data), "\r\n") {
			if strings.HasPrefix(line, "Subject: ") {
				subjects[strings.TrimPrefix(line, "Subject: ")]++
			}
		}
	}
	if e.srv.Count() != 10 || subjects["Betreff A"] == 0 || subjects["Betreff B"] == 0 || subjects["Betreff A"]+subjects["Betreff B"] != 10 {
		t.Fatalf("%d messages, subjects %v", e.srv.Count(), subjects)
	}
	e.do(t, "GET", fmt.Sprintf("/v1/ab-tests/%d", ab.ID), nil, 200).Data(t, &ab)
	if ab.Status != "running" {
		t.Fatalf("test after the send: %+v", ab)
	}
}

// TestSoapABTestAPI runs an A/B test of a sequence day through the API: a
// draft on the day (404 for an unknown day, 409 for a second one, 422 for a
// sender test), changed while a draft, no winner before a participant
// reached the day; the sequence worker starts it and assigns the variants;
// GET shows the results per variant; the day's content is locked while it
// runs (409 ab_test_running) and free again once it is stopped.
func TestSoapABTestAPI(t *testing.T) {
	e := newSeqEnv(t, "pro", nil)
	ids := e.contacts(t, "soap", 10)
	var s seqOut
	e.do(t, "POST", "/v1/sequences", map[string]any{"name": "Seife", "smtp_server_id": e.serverID}, 201).Data(t, &s)
	base := fmt.Sprintf("/v1/sequences/%d", s.ID)
	var d dayOut
	e.do(t, "POST", base+"/days", map[string]any{"subject": "Tag eins", "html": "<p>Hallo</p>"}, 201).Data(t, &d)
	type abOut struct {
		ID         int64  `json:"id"`
		TargetType string `json:"target_type"`
		TargetID   int64  `json:"target_id"`
		Status     string `json:"status"`
		Variants   []struct {
			Subject string `json:"subject"`
		} `json:"variants"`
		Results *struct {
			Variants map[string]struct {
				Sent int64 `json:"sent"`
			} `json:"variants"`
			Leader string `json:"leader"`
		} `json:"results"`
	}
	var ab abOut
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"target_type": "soap", "target_id": d.ID, "test_type": "subject",
		"b_subject": "Tag eins, anders", "wait_hours": 2}, 201).Data(t, &ab)
	if ab.Status != "draft" || ab.TargetType != "soap" || ab.TargetID != d.ID || ab.Variants[0].Subject != "Tag eins" ||
		ab.Variants[1].Subject != "Tag eins, anders" {
		t.Fatalf("created: %+v", ab)
	}
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"target_type": "soap", "target_id": d.ID, "test_type": "subject", "b_subject": "X"}, 409)
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"target_type": "soap", "target_id": 999999, "test_type": "subject", "b_subject": "X"}, 404)
	r := e.do(t, "POST", "/v1/ab-tests", map[string]any{"target_type": "soap", "target_id": d.ID, "test_type": "sender", "b_from_name": "X"}, 422)
	if !strings.Contains(string(r.Body), `"test_type"`) {
		t.Fatalf("sender test: %s", r.Body)
	}
	path := fmt.Sprintf("/v1/ab-tests/%d", ab.ID)
	e.do(t, "PATCH", path, map[string]any{"b_subject": "Tag eins, neu"}, 200).Data(t, &ab)
	if ab.Variants[1].Subject != "Tag eins, neu" {
		t.Fatalf("patched: %+v", ab)
	}
	r = e.do(t, "POST", path+"/winner", map[string]any{"variant": "B"}, 409)
	if !strings.Contains(string(r.Body), "ab_test_not_running") {
		t.Fatalf("winner of a draft: %s", r.Body)
	}

	e.do(t, "POST", base+"/activate", nil, 200)
	e.do(t, "POST", base+"/participants", map[string]any{"contact_ids": ids}, 200)
	w := sequence.NewWorker(e.db, nil, sequence.WorkerOptions{Now: func() time.Time { return e.now.Add(time.Minute) }})
	if res, err := w.Tick(context.Background()); err != nil || res.Queued != 10 {
		t.Fatalf("tick: %+v, %v", res, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.srv.Count() < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		e.do(t, "GET", path, nil, 200).Data(t, &ab)
		if ab.Results != nil && ab.Results.Variants["A"].Sent+ab.Results.Variants["B"].Sent == 10 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ab.Status != "running" || ab.Results == nil || ab.Results.Variants["A"].Sent != 5 || ab.Results.Variants["B"].Sent != 5 {
		t.Fatalf("running: %+v", ab)
	}
	r = e.do(t, "PATCH", fmt.Sprintf("%s/days/%d", base, d.ID), map[string]any{"subject": "Anders"}, 409)
	if !strings.Contains(string(r.Body), "ab_test_running") {
		t.Fatalf("edit while testing: %s", r.Body)
	}
	e.do(t, "POST", path+"/stop", nil, 200)
	e.do(t, "PATCH", fmt.Sprintf("%s/days/%d", base, d.ID), map[string]any{"subject": "Anders"}, 200)
}

// TestSequenceOutlineCommitsWithTheDebit: a failure after the AI debit of an
// outline committed must not let a retry with the same Idempotency-Key call
// the provider, append the days or charge again; the retry replays the
// response that committed with the charge.
func TestSequenceOutlineCommitsWithTheDebit(t *testing.T) {
	t.Parallel()
	var fake *aitest.Server
	e := newSeqEnv(t, "pro", func(db *store.DB) *ai.Service {
		fake = aitest.NewAnthropic(t, "sk-ant-test", aitest.Fixed(aitest.Reply{Text: outlineJSON(3), TokensIn: 500, TokensOut: 1500}))
		return ai.NewService(db, ai.Config{Primary: ai.NewAnthropic(fake.URL, "sk-ant-test"), AttemptTimeout: 2 * time.Second, RetryDelay: time.Millisecond})
	})
	if _, err := e.db.AITopUp(context.Background(), e.acct, 10*store.EUR); err != nil {
		t.Fatal(err)
	}
	var s seqOut
	e.do(t, "POST", "/v1/sequences", map[string]any{"name": "KI einmal"}, 201).Data(t, &s)
	failLateIdempotencyRecords(t, e.db)
	path := fmt.Sprintf("/v1/sequences/%d/outline", s.ID)
	body := map[string]any{"topic": "Sauerteig", "days": 3}
	first := e.c.Request(http.MethodPost, path, body, hdr("Idempotency-Key", "outline-once"))
	if first.Status != http.StatusOK {
		t.Fatalf("outline: %d %s", first.Status, first.Body)
	}
	again := e.c.Request(http.MethodPost, path, body, hdr("Idempotency-Key", "outline-once"))
	if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("retry: %d replayed=%q\n%s\nfirst:\n%s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, first.Body)
	}
	if calls, debits := len(fake.Calls()), countRows(t, e.db, `SELECT count(*) FROM ai_ledger WHERE account_id = $1 AND kind = 'debit'`, e.acct); calls != 1 || debits != 1 {
		t.Errorf("%d provider calls and %d debits, want 1 and 1", calls, debits)
	}
	if n := countRows(t, e.db, `SELECT count(*) FROM sequence_days WHERE account_id = $1 AND sequence_id = $2`, e.acct, s.ID); n != 3 {
		t.Errorf("%d days appended, want 3", n)
	}
}
