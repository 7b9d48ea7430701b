package api

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/botguard"
	"github.com/rundbrief/rundbrief/store/bulk"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/sequence"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// Config is what the API needs from the service configuration.
type Config struct {
	BaseURL   string           // public root URL; the API is BaseURL + "/v1"
	RateLimit int              // default requests per minute per key
	Now       func() time.Time // the clock; tests move it
}

// API holds the dependencies of the /v1 handlers.
type API struct {
	db      *store.DB
	limiter *store.RateLimiter
	apiLog  *store.APILogWriter
	log     *slog.Logger
	cfg     Config
	ai      *ai.Service
	box     *secret.Box
	mail    *mailer.Transports

	webhooks *webhook.Service
	guard    *botguard.Guard

	campaigns   *campaign.Service
	abTests     *abtest.Service
	smtpServers *smtpserver.Service

	appointments *appointment.Service
	// integrations: payment providers (issue 23).
	integrations *integration.Service
	inbox        *inbox.Service
	sequences    *sequence.Service // story sequences and story emails (issue 20)
	bulk         *bulk.Service     // bulk actions on contacts (issue 24)
}

// New returns the API over the shared services; mount Handler() at /v1.
func New(s *services.Set, cfg Config) *API {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RateLimit <= 0 {
		cfg.RateLimit = 120
	}
	bk := s.Bulk
	if bk == nil {
		bk = bulk.New(s.DB) // stateless; a Set built by hand (tests) may leave it out
	}
	return &API{db: s.DB, limiter: store.NewRateLimiter(s.DB), apiLog: s.APILog, log: s.Log, cfg: cfg, ai: s.AI, box: s.Box, mail: s.Mail,
		webhooks: s.Webhooks, guard: s.Guard, campaigns: s.Campaigns, abTests: s.ABTests, smtpServers: s.SMTPServers,
		appointments: s.Appointments, integrations: s.Integrations, inbox: s.Inbox, sequences: s.Sequences, bulk: bk}
}

// Handler is the /v1 router. Every route of the API is listed here, top to bottom.
func (a *API) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(withRequestID, a.recoverPanics, cors, limitBody, middleware.GetHead)
	// Not found and method not allowed answer as they are, without handle's
	// checks of the values: no route reads them.
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { a.writeError(w, r, errNotFound) })
	r.MethodNotAllowed(a.methodNotAllowed(r))

	// Public: no key.
	r.Get("/", a.handle(a.index))
	r.Get("/openapi.json", serveOpenAPI(OpenAPIDocument())) // assembled once, here
	r.Get("/docs", serveDocs(docsPage()))                   // the reference in the browser, rendered once

	// Public sign-up through a form's token (issue 3): no key, CORS always *,
	// bot checks and rate limits of their own (store.SignUp).
	r.Post("/subscribe/{token}", a.handle(a.subscribe))
	r.Get("/subscribe/{token}/challenge", a.handle(a.subscribeChallenge))

	// Everything else needs a key.
	r.Group(func(r chi.Router) {
		r.Use(a.keyed()...)

		r.Get("/me", a.need("", "", a.me))
		r.Get("/plan/limits", a.need("", "", a.planLimits))

		r.Get("/logs/api", a.need("read", "", a.listAPILog))
		r.Get("/logs/api/{id}", a.need("read", "", a.getAPILogEntry))

		// Contacts, tags, lists, blocked addresses and the activity log (issue 3).
		r.Get("/contacts", a.need("read", "", a.listContacts))
		r.Post("/contacts", a.need("write", "", a.upsertContact))
		r.Post("/contacts/bulk", a.need("write", "", a.bulkContacts))
		// Bulk actions as background jobs, and segments (saved filters) (issue 24).
		r.Post("/contacts/actions", a.need("write", "", a.startContactAction))
		r.Get("/contacts/actions/{id}", a.need("read", "", a.getContactAction))
		r.Get("/segments", a.need("read", "", a.listSegments))
		r.Post("/segments", a.need("write", "", a.createSegment))
		r.Get("/segments/{id}", a.need("read", "", a.getSegment))
		r.Patch("/segments/{id}", a.need("write", "", a.patchSegment))
		r.Delete("/segments/{id}", a.need("write", "", a.deleteSegment))
		r.Get("/segments/{id}/contacts", a.need("read", "", a.listSegmentContacts))
		r.Get("/contacts/{id}", a.need("read", "", a.getContact))
		r.Patch("/contacts/{id}", a.need("write", "", a.patchContact))
		r.Delete("/contacts/{id}", a.need("write", "", a.deleteContact))
		r.Post("/contacts/{id}/unsubscribe", a.need("write", "", a.unsubscribeContact))
		r.Get("/contacts/{id}/activities", a.need("read", "", a.listContactActivities))
		r.Post("/contacts/{id}/tags", a.need("write", "", a.addContactTags))
		r.Delete("/contacts/{id}/tags/{tag}", a.need("write", "", a.removeContactTag))
		r.Get("/tags", a.need("read", "", a.listTags))
		// Custom field definitions: label and type of the contacts' own
		// fields (issue 24).
		r.Get("/fields", a.need("read", "", a.listFields))
		r.Post("/fields", a.need("write", "", a.createField))
		r.Get("/fields/{key}", a.need("read", "", a.getField))
		r.Patch("/fields/{key}", a.need("write", "", a.patchField))
		r.Delete("/fields/{key}", a.need("write", "", a.deleteField))
		r.Get("/lists", a.need("read", "", a.listLists))
		r.Post("/lists", a.need("write", "", a.createList))
		r.Get("/lists/{id}", a.need("read", "", a.getList))
		r.Patch("/lists/{id}", a.need("write", "", a.patchList))
		r.Delete("/lists/{id}", a.need("write", "", a.deleteList))
		r.Get("/lists/{id}/members", a.need("read", "", a.listListMembers))
		r.Post("/lists/{id}/members", a.need("write", "", a.addListMembers))
		r.Delete("/lists/{id}/members/{contact_id}", a.need("write", "", a.removeListMember))
		r.Get("/unsubscribes", a.need("read", "", a.listUnsubscribes))
		r.Post("/unsubscribes", a.need("write", "", a.createUnsubscribes))
		r.Delete("/unsubscribes/{email}", a.need("write", "", a.deleteUnsubscribe))
		r.Get("/logs/activity", a.need("read", "", a.listActivityLog))

		// Sign-up forms: their public token, target lists, bot protection and the
		// embeddable HTML snippet (issue 3).
		r.Get("/forms", a.need("read", "", a.listForms))
		r.Post("/forms", a.need("write", "", a.createForm))
		r.Get("/forms/{id}", a.need("read", "", a.getForm))
		r.Patch("/forms/{id}", a.need("write", "", a.patchForm))
		r.Delete("/forms/{id}", a.need("write", "", a.deleteForm))
		r.Get("/forms/{id}/embed", a.need("read", "", a.getFormEmbed))

		// AI: text generation against the account's AI credit, its ledger and balance.
		r.Post("/ai/generate", a.need("ai", "ai", a.aiLimited(a.generateAI)))
		r.Get("/ai/usage", a.need("read", "ai", a.listAIUsage))
		r.Get("/ai/credit", a.need("read", "ai", a.getAICredit))

		// Webhooks: subscriptions, their signing secrets, test sends and the
		// delivery log with resends. /webhooks/events before /webhooks/{id}.
		r.Get("/webhooks", a.need("read", "", a.listWebhooks))
		r.Post("/webhooks", a.need("write", "", a.createWebhook))
		r.Get("/webhooks/events", a.need("read", "", a.listWebhookEvents))
		r.Get("/webhooks/{id}", a.need("read", "", a.getWebhook))
		r.Patch("/webhooks/{id}", a.need("write", "", a.updateWebhook))
		r.Delete("/webhooks/{id}", a.need("write", "", a.deleteWebhook))
		r.Post("/webhooks/{id}/rotate-secret", a.need("write", "", a.rotateWebhookSecret))
		r.Post("/webhooks/{id}/test", a.need("write", "", a.testWebhook))
		r.Get("/webhooks/{id}/deliveries", a.need("read", "", a.listWebhookDeliveries))
		r.Get("/webhook-deliveries/{id}", a.need("read", "", a.getWebhookDelivery))
		r.Post("/webhook-deliveries/{id}/resend", a.need("write", "", a.resendWebhookDelivery))

		// Appointments: settings, free slots and bookings (issue 22; plan
		// feature appointments). The public booking page is /book/{token}.
		r.Get("/appointments/settings", a.need("read", appointment.Feature, a.getAppointmentSettings))
		r.Put("/appointments/settings", a.need("write", appointment.Feature, a.putAppointmentSettings))
		r.Get("/appointments/slots", a.need("read", appointment.Feature, a.listAppointmentSlots))
		r.Get("/appointments", a.need("read", appointment.Feature, a.listAppointments))
		r.Post("/appointments", a.need("write", appointment.Feature, a.createAppointment))
		r.Get("/appointments/{id}", a.need("read", appointment.Feature, a.getAppointment))
		r.Patch("/appointments/{id}", a.need("write", appointment.Feature, a.patchAppointment))
		r.Delete("/appointments/{id}", a.need("write", appointment.Feature, a.deleteAppointment))

		// Newsletters and single emails: drafts, test mails, sending and
		// scheduling, pause/resume, retries of failed recipients, stats and
		// previews (issue 4). Sending and scheduling need the scope "send".
		r.Get("/newsletters", a.need("read", "", a.listNewsletters))
		r.Post("/newsletters", a.need("write", "", a.createNewsletter))
		r.Get("/newsletters/{id}", a.need("read", "", a.getNewsletter))
		r.Patch("/newsletters/{id}", a.need("write", "", a.patchNewsletter))
		r.Delete("/newsletters/{id}", a.need("write", "", a.deleteNewsletter))
		r.Post("/newsletters/{id}/test", a.need("send", "", a.testNewsletter))
		r.Post("/newsletters/{id}/send", a.need("send", "", a.sendNewsletter))
		r.Post("/newsletters/{id}/schedule", a.need("send", "", a.scheduleNewsletter))
		r.Post("/newsletters/{id}/unschedule", a.need("send", "", a.unscheduleNewsletter))
		r.Post("/newsletters/{id}/duplicate", a.need("write", "", a.duplicateNewsletter))
		r.Post("/newsletters/{id}/retry-failed", a.need("send", "", a.retryFailedNewsletter))
		r.Post("/newsletters/{id}/pause", a.need("send", "", a.pauseNewsletter))
		r.Post("/newsletters/{id}/resume", a.need("send", "", a.resumeNewsletter))
		r.Get("/newsletters/{id}/stats", a.need("read", "", a.newsletterStats))
		r.Get("/newsletters/{id}/preview", a.need("read", "", a.previewNewsletter))
		r.Post("/emails/send", a.need("send", "", a.sendEmail))
		r.Get("/emails", a.need("read", "", a.listEmails))
		r.Get("/emails/{id}", a.need("read", "", a.getEmail))
		r.Delete("/emails/{id}", a.need("send", "", a.cancelEmail))

		// Campaigns (newsletters and single emails) with their engagement,
		// recipients and links, and the account's analytics (issue 4).
		r.Get("/campaigns", a.need("read", "", a.listCampaigns))
		r.Get("/campaigns/{id}", a.need("read", "", a.getCampaign))
		r.Get("/campaigns/{id}/recipients", a.need("read", "", a.listCampaignRecipients))
		r.Get("/campaigns/{id}/links", a.need("read", "", a.listCampaignLinks))
		r.Get("/analytics/overview", a.need("read", "", a.analyticsOverview))
		r.Get("/analytics/timeseries", a.need("read", "", a.analyticsTimeseries))

		// A/B tests of newsletters and single emails: drafts, results with
		// significance, the winner, stopping, and what won before (issue 6).
		r.Get("/ab-tests", a.need("read", "ab_tests", a.listABTests))
		r.Post("/ab-tests", a.need("write", "ab_tests", a.createABTest))
		r.Get("/ab-tests/insights", a.need("read", "ab_tests", a.abInsights))
		r.Get("/ab-tests/{id}", a.need("read", "ab_tests", a.getABTest))
		r.Patch("/ab-tests/{id}", a.need("write", "ab_tests", a.patchABTest))
		r.Delete("/ab-tests/{id}", a.need("write", "ab_tests", a.deleteABTest))
		r.Post("/ab-tests/{id}/winner", a.need("write", "ab_tests", a.setABWinner))
		r.Post("/ab-tests/{id}/stop", a.need("write", "ab_tests", a.stopABTest))

		// Story emails (one a day to the story lists) and story sequences with
		// their days, participants and AI outlines (issue 20). Sequences need
		// the plan feature "sequences"; changes need "write", test mails and
		// sends "send", outlines "ai" (and the feature "ai").
		r.Get("/story-emails", a.need("read", "", a.listStoryEmails))
		r.Post("/story-emails", a.need("write", "", a.createStoryEmail))
		r.Get("/story-emails/settings", a.need("read", "", a.getStorySettings))
		r.Put("/story-emails/settings", a.need("write", "", a.putStorySettings))
		r.Get("/story-emails/{id}", a.need("read", "", a.getStoryEmail))
		r.Patch("/story-emails/{id}", a.need("write", "", a.patchStoryEmail))
		r.Delete("/story-emails/{id}", a.need("write", "", a.deleteStoryEmail))
		r.Post("/story-emails/{id}/test", a.need("send", "", a.testStoryEmail))
		r.Post("/story-emails/{id}/send", a.need("send", "", a.sendStoryEmail))
		r.Post("/story-emails/{id}/schedule", a.need("send", "", a.scheduleStoryEmail))
		r.Get("/sequences", a.need("read", "sequences", a.listSequences))
		r.Post("/sequences", a.need("write", "sequences", a.createSequence))
		r.Get("/sequences/{id}", a.need("read", "sequences", a.getSequence))
		r.Patch("/sequences/{id}", a.need("write", "sequences", a.patchSequence))
		r.Delete("/sequences/{id}", a.need("write", "sequences", a.deleteSequence))
		r.Post("/sequences/{id}/activate", a.need("write", "sequences", a.activateSequence))
		r.Post("/sequences/{id}/deactivate", a.need("write", "sequences", a.deactivateSequence))
		r.Get("/sequences/{id}/days", a.need("read", "sequences", a.listSequenceDays))
		r.Post("/sequences/{id}/days", a.need("write", "sequences", a.createSequenceDay))
		r.Patch("/sequences/{id}/days/{day_id}", a.need("write", "sequences", a.patchSequenceDay))
		r.Delete("/sequences/{id}/days/{day_id}", a.need("write", "sequences", a.deleteSequenceDay))
		r.Get("/sequences/{id}/participants", a.need("read", "sequences", a.listParticipants))
		r.Post("/sequences/{id}/participants", a.need("write", "sequences", a.enrolParticipants))
		r.Delete("/sequences/{id}/participants/{contact_id}", a.need("write", "sequences", a.removeParticipant))
		r.Post("/sequences/{id}/outline", a.need("ai", "sequences", requireFeature("ai", a.aiLimited(a.outlineSequence))))

		// SMTP servers of the account, the connection test, and the development
		// outbox (only without RUNDBRIEF_SMTP_URL; otherwise its paths are 404) (issue 4).
		r.Get("/templates", a.need("read", "", a.listTemplates))
		r.Post("/templates", a.need("write", "", a.createTemplate))
		r.Get("/templates/{id}", a.need("read", "", a.getTemplate))
		r.Patch("/templates/{id}", a.need("write", "", a.patchTemplate))
		r.Delete("/templates/{id}", a.need("write", "", a.deleteTemplate))
		r.Get("/template-library", a.need("read", "", a.listTemplateLibrary))
		r.Post("/template-library/{key}/copy", a.need("write", "", a.copyLibraryTemplate))
		r.Get("/attachments", a.need("read", "", a.listAttachments))
		r.Post("/attachments", a.need("write", "", a.uploadAttachment))
		r.Get("/attachments/{id}", a.need("read", "", a.getAttachment))
		r.Delete("/attachments/{id}", a.need("write", "", a.deleteAttachment))
		r.Get("/attachments/{id}/download", a.need("read", "", a.downloadAttachment))
		r.Get("/account/settings", a.need("read", "", a.getAccountSettings))
		r.Put("/account/settings", a.need("write", "", a.putAccountSettings))

		r.Get("/smtp-servers", a.need("read", "", a.listSMTPServers))
		r.Post("/smtp-servers", a.need("write", "", a.createSMTPServer))
		r.Get("/smtp-servers/{id}", a.need("read", "", a.getSMTPServer))
		r.Patch("/smtp-servers/{id}", a.need("write", "", a.updateSMTPServer))
		r.Delete("/smtp-servers/{id}", a.need("write", "", a.deleteSMTPServer))
		r.Post("/smtp-servers/{id}/test", a.need("write", "", a.testSMTPServer))
		// Payment-provider integrations and their inbound event log; the
		// inbound URLs themselves are public pages (/hooks/…) (issue 23).
		r.Get("/integrations", a.need("read", "integrations", a.listIntegrations))
		r.Post("/integrations", a.need("write", "integrations", a.createIntegration))
		r.Get("/integrations/{id}", a.need("read", "integrations", a.getIntegration))
		r.Patch("/integrations/{id}", a.need("write", "integrations", a.updateIntegration))
		r.Delete("/integrations/{id}", a.need("write", "integrations", a.deleteIntegration))
		r.Get("/integrations/{id}/events", a.need("read", "integrations", a.listIntegrationEvents))
		// Inbox: the connected IMAP mailbox, its messages, replies, AI reply
		// drafts, rules and metrics (issue 21; plan feature inbox).
		r.Get("/inbox/settings", a.need("read", "inbox", a.getInboxSettings))
		r.Put("/inbox/settings", a.need("write", "inbox", a.putInboxSettings))
		r.Post("/inbox/sync", a.need("write", "inbox", a.syncInbox))
		r.Get("/inbox/messages", a.need("read", "inbox", a.listInboxMessages))
		r.Get("/inbox/messages/{id}", a.need("read", "inbox", a.getInboxMessage))
		r.Patch("/inbox/messages/{id}", a.need("write", "inbox", a.patchInboxMessage))
		r.Post("/inbox/messages/{id}/reply", a.need("send", "inbox", a.replyInboxMessage))
		r.Post("/inbox/messages/{id}/draft", a.need("ai", "inbox", a.aiLimited(a.draftInboxMessage)))
		r.Get("/inbox/drafts", a.need("read", "inbox", a.listInboxDrafts))
		r.Post("/inbox/drafts/{id}/approve", a.need("send", "inbox", a.approveInboxDraft))
		r.Delete("/inbox/drafts/{id}", a.need("write", "inbox", a.discardInboxDraft))
		r.Get("/inbox/rules", a.need("read", "inbox", a.listInboxRules))
		r.Post("/inbox/rules", a.need("write", "inbox", a.createInboxRule))
		r.Delete("/inbox/rules/{id}", a.need("write", "inbox", a.deleteInboxRule))
		r.Get("/inbox/metrics", a.need("read", "inbox", a.inboxMetrics))

		if a.devOutboxEnabled() {
			r.Get("/dev/outbox", a.need("read", "", a.listDevOutbox))
			r.Get("/dev/outbox/{id}", a.need("read", "", a.getDevOutboxMail))
		}
	})
	return r
}

// keyed is the middleware chain of every endpoint that needs a key, in order: a
// request is authenticated, then logged, checked against the key's restrictions,
// counted against its rate limit and the plan, and finally made idempotent.
func (a *API) keyed() []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{a.authenticate, a.logRequest, a.restrict, a.rateLimit, a.requireAPIPlan, a.idempotency}
}

// methodNotAllowed answers 405 with the Allow header listing the path's methods.
func (a *API) methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	return func(w http.ResponseWriter, r *http.Request) {
		path := apiPath(r)
		var allowed []string
		for _, m := range methods {
			if routes.Match(chi.NewRouteContext(), m, path) {
				allowed = append(allowed, m)
			}
		}
		if slices.Contains(allowed, http.MethodGet) {
			allowed = append(allowed, http.MethodHead)
		}
		allowed = append(allowed, http.MethodOptions)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		a.writeError(w, r, &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
			Message: "Die Methode " + r.Method + " ist für diesen Pfad nicht erlaubt."})
	}
}
