// Package portal serves the server-rendered pages of Rundbrief: the admin portal
// for marketers and admins, rendered with templ and enhanced with htmx.
//
// Every page works without JavaScript; htmx requests (HX-Request) get fragments
// from the same handlers. Sessions live in PostgreSQL (store.SessionStore), so any
// number of processes serve the same signed-in users. State-changing requests are
// checked by Go's cross-origin protection (Sec-Fetch-Site / Origin) on top of
// SameSite=Lax cookies, so forms need no CSRF tokens.
package portal

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/abtest"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/appointment"
	"github.com/rundbrief/rundbrief/store/bulk"
	"github.com/rundbrief/rundbrief/store/campaign"
	"github.com/rundbrief/rundbrief/store/imports"
	"github.com/rundbrief/rundbrief/store/inbox"
	"github.com/rundbrief/rundbrief/store/integration"
	"github.com/rundbrief/rundbrief/store/secret"
	"github.com/rundbrief/rundbrief/store/sequence"
	"github.com/rundbrief/rundbrief/store/services"
	"github.com/rundbrief/rundbrief/store/smtpserver"
	"github.com/rundbrief/rundbrief/store/webhook"
	"github.com/rundbrief/rundbrief/views"
)

// Session lifetimes: a session ends 12 hours after its last request, and at the
// latest 7 days after sign-in.
const (
	sessionIdleTimeout = 12 * time.Hour
	sessionLifetime    = 7 * 24 * time.Hour
)

// Config is what the portal needs from the service configuration.
type Config struct {
	BaseURL string           // public root URL (RUNDBRIEF_BASE_URL); https makes cookies Secure
	Now     func() time.Time // the clock; nil: time.Now
	// UpgradeURL is where an account changes its plan (RUNDBRIEF_UPGRADE_URL);
	// empty: the plan page tells it to ask the operator.
	UpgradeURL string
}

// Portal holds the dependencies of the portal pages.
type Portal struct {
	db      *store.DB
	box     *secret.Box // seals a new API key while the session carries it to the next page
	log     *slog.Logger
	baseURL string
	now     func() time.Time
	// upgradeURL is Config.UpgradeURL: the plan page's way to change the plan.
	upgradeURL string
	sessions   *scs.SessionManager
	csrf       *http.CrossOriginProtection
	// mail decides whether the development outbox exists (nil: no outbox).
	mail        *mailer.Transports
	webhooks    *webhook.Service
	campaigns   *campaign.Service
	abTests     *abtest.Service
	smtpServers *smtpserver.Service
	imports     *imports.Service
	bulk        *bulk.Service // bulk actions on contacts (issue 24)

	appointments *appointment.Service // the appointment book (issue 22)
	// integrations: payment-provider integrations (issue 23).
	integrations *integration.Service
	inbox        *inbox.Service
	sequences    *sequence.Service // story emails and sequences (issue 20)
	// tokens signs the public URLs of the editor's images (issue 24).
	tokens *mailer.Tokens
	ai     *ai.Service // the editor's AI assistant; nil: unavailable
}

// New returns the portal over the shared services (s.Box is required);
// Routes registers its pages. The sessions' cleanup runs separately
// (store.SessionStore.Run), among serve's workers.
func New(s *services.Set, cfg Config) (*Portal, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if s.Box == nil {
		return nil, errors.New("portal: services.Set.Box is required")
	}
	bk := s.Bulk
	if bk == nil {
		bk = bulk.New(s.DB) // stateless; a Set built by hand (tests) may leave it out
	}
	p := &Portal{db: s.DB, box: s.Box, log: s.Log, baseURL: strings.TrimRight(cfg.BaseURL, "/"), now: cfg.Now, upgradeURL: cfg.UpgradeURL,
		mail: s.Mail, webhooks: s.Webhooks, campaigns: s.Campaigns, abTests: s.ABTests, smtpServers: s.SMTPServers, imports: s.Imports, bulk: bk,
		appointments: s.Appointments, integrations: s.Integrations, inbox: s.Inbox, sequences: s.Sequences, tokens: s.Tokens, ai: s.AI}
	secure := strings.HasPrefix(p.baseURL, "https://")

	p.sessions = scs.New()
	p.sessions.Store = store.NewSessionStore(s.DB, s.Log)
	p.sessions.HashTokenInStore = true // a copy of the sessions table signs nobody in
	p.sessions.IdleTimeout = sessionIdleTimeout
	p.sessions.Lifetime = sessionLifetime
	p.sessions.Cookie.Name = "rundbrief_session"
	if secure {
		// The __Host- prefix makes browsers insist on Secure, Path=/ and no Domain.
		p.sessions.Cookie.Name = "__Host-rundbrief_session"
	}
	p.sessions.Cookie.HttpOnly = true
	p.sessions.Cookie.SameSite = http.SameSiteLaxMode
	p.sessions.Cookie.Secure = secure
	p.sessions.Cookie.Path = "/"
	p.sessions.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) { p.fail(w, r, err) }

	p.csrf = http.NewCrossOriginProtection()
	if u, err := url.Parse(p.baseURL); err == nil && u.Host != "" {
		// Our own public origin, for old browsers without Sec-Fetch-Site behind a
		// proxy that rewrites Host.
		if err := p.csrf.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("portal: base URL %q: %w", p.baseURL, err)
		}
	}
	p.csrf.SetDenyHandler(http.HandlerFunc(p.crossOriginDenied))
	return p, nil
}

// Routes registers every portal page, top to bottom.
func (p *Portal) Routes(r chi.Router) {
	// Unknown paths get the same headers and session as pages, so that a
	// signed-in user's 404 keeps the app shell.
	notFound := p.handle(func(http.ResponseWriter, *http.Request) error { return store.ErrNotFound })
	r.NotFound(pageHeaders(p.sessions.LoadAndSave(p.optionalUser(notFound))).ServeHTTP)
	r.Group(func(r chi.Router) {
		r.Use(pageHeaders, p.csrf.Handler, p.sessions.LoadAndSave)

		// Signed out.
		r.Get("/", p.handle(p.home))
		r.Get("/login", p.handle(p.signInPage))
		r.Post("/login", p.handle(p.signIn))

		// Signed in.
		r.Group(func(r chi.Router) {
			r.Use(p.requireUser)
			r.Post("/logout", p.handle(p.signOut))
			r.Get("/dashboard", p.handle(p.dashboard))
			r.Get("/account/password", p.handle(p.passwordPage))
			r.Post("/account/password", p.handle(p.changePassword))
			// The plan: features, limits with usage, how to change it. The
			// API's upgrade_url (402) points here (handlers/api/errors.go).
			r.Get(PlanPath, p.handle(p.planPage))
			r.Get("/logs/api", p.handle(p.apiLog))
			r.Get("/logs/activity", p.handle(p.activityLog))
			// The development outbox: only without an operator relay (404 otherwise).
			r.Get("/dev/outbox", p.handle(p.devOutbox))
			r.Get("/dev/outbox/{id}", p.handle(p.devOutboxMail))
			r.Get("/dev/outbox/{id}/html", p.handle(p.devOutboxHTML))

			// Contacts, CSV import and export.
			r.Get("/contacts", p.handle(p.listContacts))
			r.Get("/contacts/new", p.handle(p.newContactForm))
			r.Post("/contacts/new", p.handle(p.createContact))
			r.Get("/contacts/export", p.handle(p.exportContacts))
			r.Get("/contacts/count", p.handle(p.countContacts))
			r.Post("/contacts/actions", p.handle(p.startContactAction))
			r.Get("/contacts/actions/{id}", p.handle(p.showContactAction))
			r.Get("/segments", p.handle(p.listSegments))
			r.Post("/segments", p.handle(p.createSegment))
			r.Post("/segments/{id}/delete", p.handle(p.deleteSegment))
			r.Get("/contacts/import", p.handle(p.importPage))
			r.Post("/contacts/import", p.handle(p.uploadImport))
			r.Get("/contacts/import/{id}", p.handle(p.showImport))
			r.Post("/contacts/import/{id}", p.handle(p.startImport))
			r.Get("/contacts/{id}", p.handle(p.showContact))
			r.Get("/contacts/{id}/edit", p.handle(p.editContactForm))
			r.Post("/contacts/{id}/edit", p.handle(p.updateContact))
			r.Get("/contacts/{id}/unsubscribe", p.handle(p.confirmContact(views.ContactUnsubscribe)))
			r.Post("/contacts/{id}/unsubscribe", p.handle(p.unsubscribeContact))
			r.Get("/contacts/{id}/delete", p.handle(p.confirmContact(views.ContactDelete)))
			r.Post("/contacts/{id}/delete", p.handle(p.deleteContact))
			r.Post("/contacts/{id}/tags", p.handle(p.addContactTags))
			r.Post("/contacts/{id}/tags/remove", p.handle(p.removeContactTag))
			r.Post("/contacts/{id}/lists", p.handle(p.joinContactList))
			r.Post("/contacts/{id}/lists/{list_id}/remove", p.handle(p.leaveContactList))

			// Lists and their members.
			r.Get("/lists", p.handle(p.listLists))
			r.Get("/lists/new", p.handle(p.newListForm))
			r.Post("/lists/new", p.handle(p.createList))
			r.Get("/lists/{id}", p.handle(p.listMembers))
			r.Get("/lists/{id}/edit", p.handle(p.editListForm))
			r.Post("/lists/{id}/edit", p.handle(p.updateList))
			r.Get("/lists/{id}/delete", p.handle(p.confirmDeleteList))
			r.Post("/lists/{id}/delete", p.handle(p.deleteList))
			r.Post("/lists/{id}/members", p.handle(p.addMembers))
			r.Post("/lists/{id}/members/{contact_id}/remove", p.handle(p.removeMember))

			// Newsletters (issue 7): drafts, preview, test mails, sending.
			// The shared mail editor: image upload of its rich-text mode (issue 24).
			r.Post("/editor/images", p.handle(p.uploadEditorImage))
			r.Post("/editor/ai", p.needFeature("ai", p.editorAI))
			r.Get("/newsletters", p.handle(p.listNewsletters))
			r.Get("/newsletters/new", p.handle(p.newNewsletter))
			r.Post("/newsletters/new", p.handle(p.createNewsletter))
			r.Post("/newsletters/preview", p.handle(p.previewNewsletter))
			r.Get("/newsletters/{id}", p.handle(p.showNewsletter))
			r.Post("/newsletters/{id}", p.handle(p.saveNewsletter))
			r.Get("/newsletters/{id}/send", p.handle(p.sendConfirmation))
			r.Post("/newsletters/{id}/send", p.handle(p.sendNewsletter))
			r.Get("/newsletters/{id}/send/links", p.handle(p.newsletterLinks)) // the send confirmation's link check, loaded after it
			r.Get("/newsletters/{id}/progress", p.handle(p.newsletterProgress))
			r.Post("/newsletters/{id}/unschedule", p.handle(p.newsletterAction(p.unscheduleNewsletter, func(t views.Text) string { return t.Newsletters.UnscheduledFlash })))
			r.Post("/newsletters/{id}/pause", p.handle(p.newsletterAction(p.pauseNewsletter, func(t views.Text) string { return t.Newsletters.PausedFlash })))
			r.Post("/newsletters/{id}/resume", p.handle(p.newsletterAction(p.resumeNewsletter, func(t views.Text) string { return t.Newsletters.ResumedFlash })))
			r.Post("/newsletters/{id}/duplicate", p.handle(p.duplicateNewsletter))
			r.Get("/newsletters/{id}/delete", p.handle(p.confirmDeleteNewsletter))
			r.Post("/newsletters/{id}/delete", p.handle(p.deleteNewsletter))
			// Its statistics: the figures of GET /v1/newsletters/{id}/stats, over time, per link.
			r.Get("/newsletters/{id}/stats", p.handle(p.newsletterStats))
			r.Get("/newsletters/{id}/recipients.csv", p.handle(p.exportRecipients))

			// Templates, the library, attachments and the sender's imprint (issue 19).
			r.Get("/templates", p.handle(p.templatesPage))
			r.Get("/templates/new", p.handle(p.newTemplateForm))
			r.Post("/templates/new", p.handle(p.createTemplate))
			r.Post("/templates/preview", p.handle(p.previewTemplate))
			r.Post("/templates/library/{key}/copy", p.handle(p.copyLibraryDesign))
			r.Get("/templates/{id}", p.handle(p.editTemplateForm))
			r.Post("/templates/{id}", p.handle(p.saveTemplate))
			r.Post("/templates/{id}/delete", p.handle(p.deleteTemplate))
			r.Get("/attachments", p.handle(p.attachmentsPage))
			r.Post("/attachments", p.handle(p.uploadAttachment))
			r.Get("/attachments/{id}/download", p.handle(p.downloadAttachment))
			r.Post("/attachments/{id}/delete", p.handle(p.deleteAttachment))
			// Everyone sees the sender and imprint; owners and admins change them.
			r.Get("/settings/sender", p.handle(p.senderPage))
			r.With(p.requireAdmin).Post("/settings/sender", p.handle(p.saveSender))
			// Custom field definitions: label and type of the contacts' own
			// fields (issue 24; the API's /v1/fields).
			r.Get("/settings/fields", p.handle(p.fieldsPage))
			r.Post("/settings/fields", p.handle(p.createField))
			r.Post("/settings/fields/{key}", p.handle(p.updateField))
			r.Post("/settings/fields/{key}/delete", p.handle(p.deleteField))

			// Sign-up forms (issue 7): create, embed code, preview.
			r.Get("/forms", p.handle(p.listForms))
			r.Get("/forms/new", p.handle(p.newForm))
			r.Post("/forms/new", p.handle(p.createForm))
			r.Get("/forms/{id}/edit", p.handle(p.editForm))
			r.Post("/forms/{id}/edit", p.handle(p.updateForm))
			r.Get("/forms/{id}/embed", p.handle(p.formEmbed))
			r.Get("/forms/{id}/delete", p.handle(p.confirmDeleteForm))
			r.Post("/forms/{id}/delete", p.handle(p.deleteForm))

			// AI credit and what each request cost (the API's /ai/usage and /ai/credit).
			r.Get("/ai/usage", p.needFeature("ai", p.aiUsage))

			// Single emails (the API's /emails) and the overview of all campaigns.
			r.Get("/emails", p.handle(p.listEmails))
			r.Get("/emails/new", p.handle(p.newEmail))
			r.Post("/emails/new", p.handle(p.sendEmail))
			r.Get("/emails/{id}", p.handle(p.showEmail))
			r.Post("/emails/{id}/cancel", p.handle(p.cancelEmail))
			r.Get("/campaigns", p.handle(p.listCampaigns))

			// The blocked-address list (the API's /unsubscribes).
			r.Get("/blocked", p.handle(p.listBlocked))
			r.Post("/blocked", p.handle(p.blockAddresses))
			r.Post("/blocked/remove", p.handle(p.unblockAddress))

			// A/B tests of newsletters: create from a draft, results, winner (issue 6).
			// Story emails (calendar, drafts, settings) and the sequence builder
			// (issue 20); sequences need the plan feature "sequences".
			r.Get("/story-emails", p.handle(p.storyCalendar))
			r.Post("/story-emails/new", p.handle(p.createStory))
			r.Get("/story-emails/settings", p.handle(p.storySettingsForm))
			r.Post("/story-emails/settings", p.handle(p.saveStorySettings))
			r.Post("/story-emails/{id}/schedule", p.handle(p.storyAction(false)))
			r.Post("/story-emails/{id}/send", p.handle(p.storyAction(true)))
			r.Get("/story-emails/{id}", p.handle(p.storyEditForm))
			r.Post("/story-emails/{id}", p.handle(p.saveStory))
			r.Post("/story-emails/{id}/preview", p.handle(p.previewStory))
			r.Get("/sequences", p.needSequences(p.listSequences))
			r.Post("/sequences/new", p.needSequences(p.createSequence))
			r.Get("/sequences/{id}", p.needSequences(p.showSequence))
			r.Post("/sequences/{id}/activate", p.needSequences(p.sequencePost(p.activateSequence)))
			r.Post("/sequences/{id}/deactivate", p.needSequences(p.sequencePost(p.deactivateSequence)))
			r.Post("/sequences/{id}/days/new", p.needSequences(p.sequencePost(p.addDay)))
			r.Post("/sequences/{id}/days/{day_id}/edit", p.needSequences(p.editDay))
			r.Post("/sequences/{id}/days/{day_id}/preview", p.needSequences(p.previewDay))
			r.Post("/sequences/{id}/days/{day_id}/move", p.needSequences(p.sequencePost(p.moveDay)))
			r.Post("/sequences/{id}/days/{day_id}/delete", p.needSequences(p.sequencePost(p.deleteDay)))
			r.Post("/sequences/{id}/participants", p.needSequences(p.sequencePost(p.enrolSequence)))
			r.Post("/sequences/{id}/outline", p.needSequences(p.sequencePost(p.outlineSequence)))

			r.Get("/ab-tests", p.needAB(p.listABTests))
			r.Get("/ab-tests/new", p.needAB(p.newABForm))
			r.Post("/ab-tests/new", p.needAB(p.createABTest))
			r.Post("/ab-tests/preview", p.needAB(p.previewABTest))
			r.Get("/ab-tests/{id}", p.needAB(p.showABTest))
			r.Post("/ab-tests/{id}/winner", p.needAB(p.setABWinner))
			r.Post("/ab-tests/{id}/stop", p.needAB(p.stopABTest))
			r.Post("/ab-tests/{id}/delete", p.needAB(p.deleteABTest))

			// The appointment book: calendar, manual booking, cancelling and the
			// settings with weekly hours and blocked dates (issue 22).
			r.Get("/appointments", p.needAppointments(p.appointmentsPage))
			r.Post("/appointments", p.needAppointments(p.bookAppointment))
			r.Post("/appointments/{id}/cancel", p.needAppointments(p.cancelAppointment))
			r.Get("/appointments/settings", p.needAppointments(p.appointmentSettings))
			r.Post("/appointments/settings", p.needAppointments(p.saveAppointmentSettings))
			// The inbox (issue 21): three panes, replies, AI drafts, rules,
			// metrics; the connection settings for owners and admins.
			yes, no := true, false
			r.Get("/inbox", p.needInbox(p.inboxPage))
			r.Post("/inbox/sync", p.needInbox(p.inboxSync))
			r.Get("/inbox/messages/{id}", p.needInbox(p.inboxMessage))
			r.Post("/inbox/messages/{id}/reply", p.needInbox(p.inboxReply))
			r.Post("/inbox/messages/{id}/draft", p.needInbox(p.inboxDraft))
			r.Post("/inbox/messages/{id}/labels", p.needInbox(p.inboxLabels))
			r.Post("/inbox/messages/{id}/unread", p.needInbox(p.inboxFlag(&no, nil)))
			r.Post("/inbox/messages/{id}/archive", p.needInbox(p.inboxFlag(nil, &yes)))
			r.Post("/inbox/messages/{id}/unarchive", p.needInbox(p.inboxFlag(nil, &no)))
			r.Post("/inbox/drafts/{id}/approve", p.needInbox(p.inboxApprove))
			r.Post("/inbox/drafts/{id}/discard", p.needInbox(p.inboxDiscard))
			r.Get("/inbox/rules", p.needInbox(p.inboxRulesPage))
			r.Post("/inbox/rules", p.needInbox(p.createInboxRule))
			r.Post("/inbox/rules/{id}/delete", p.needInbox(p.deleteInboxRule))
			r.Get("/inbox/metrics", p.needInbox(p.inboxMetricsPage))
			r.With(p.requireAdmin).Get("/inbox/settings", p.needInbox(p.inboxSettingsPage))
			r.With(p.requireAdmin).Post("/inbox/settings", p.needInbox(p.saveInboxSettings))
			r.With(p.requireAdmin).Post("/inbox/settings/test", p.needInbox(p.testInboxSettings))

			// Owners and admins.
			r.Group(func(r chi.Router) {
				r.Use(p.requireAdmin)
				r.Get("/api-keys", p.handle(p.listKeys))
				r.Get("/api-keys/new", p.handle(p.newKeyForm))
				r.Post("/api-keys/new", p.handle(p.createKey))
				r.Get("/api-keys/{id}/edit", p.handle(p.editKeyForm))
				r.Post("/api-keys/{id}/edit", p.handle(p.updateKey))
				r.Get("/api-keys/{id}/renew", p.handle(p.confirmKey(views.KeyRenew)))
				r.Post("/api-keys/{id}/renew", p.handle(p.renewKey))
				r.Get("/api-keys/{id}/revoke", p.handle(p.confirmKey(views.KeyRevoke)))
				r.Post("/api-keys/{id}/revoke", p.handle(p.revokeKey))

				// SMTP servers and their connection test.
				r.Get("/smtp-servers", p.handle(p.listSMTPServers))
				r.Get("/smtp-servers/new", p.handle(p.newSMTPForm))
				r.Post("/smtp-servers/new", p.handle(p.createSMTPServer))
				r.Get("/smtp-servers/{id}/edit", p.handle(p.editSMTPForm))
				r.Post("/smtp-servers/{id}/edit", p.handle(p.updateSMTPServer))
				r.Get("/smtp-servers/{id}/delete", p.handle(p.confirmDeleteSMTP))
				r.Post("/smtp-servers/{id}/delete", p.handle(p.deleteSMTPServer))
				r.Post("/smtp-servers/{id}/test", p.handle(p.testSMTPServer))

				// Payment-provider integrations: setup per provider, test event,
				// the inbound event log with raw payloads (issue 23).
				r.Get("/integrations", p.needIntegrations(p.listIntegrations))
				r.Get("/integrations/new", p.needIntegrations(p.newIntegrationForm))
				r.Post("/integrations/new", p.needIntegrations(p.createIntegration))
				r.Get("/integrations/{id}/edit", p.needIntegrations(p.editIntegrationForm))
				r.Post("/integrations/{id}/edit", p.needIntegrations(p.updateIntegration))
				r.Get("/integrations/{id}/delete", p.needIntegrations(p.confirmDeleteIntegration))
				r.Post("/integrations/{id}/delete", p.needIntegrations(p.deleteIntegration))
				r.Post("/integrations/{id}/test", p.needIntegrations(p.testIntegration))
				r.Get("/integrations/{id}/events", p.needIntegrations(p.integrationEvents))

				// Webhooks: secrets shown once, test sends, the delivery log and resends.
				r.Get("/webhooks", p.handle(p.listWebhooks))
				r.Get("/webhooks/new", p.handle(p.newWebhookForm))
				r.Post("/webhooks/new", p.handle(p.createWebhook))
				r.Get("/webhooks/{id}/edit", p.handle(p.editWebhookForm))
				r.Post("/webhooks/{id}/edit", p.handle(p.updateWebhook))
				r.Post("/webhooks/{id}/pause", p.handle(p.setWebhookStatus(store.WebhookPaused)))
				r.Post("/webhooks/{id}/resume", p.handle(p.setWebhookStatus(store.WebhookActive)))
				r.Get("/webhooks/{id}/rotate", p.handle(p.confirmWebhook("rotate")))
				r.Post("/webhooks/{id}/rotate", p.handle(p.rotateWebhookSecret))
				r.Get("/webhooks/{id}/delete", p.handle(p.confirmWebhook("delete")))
				r.Post("/webhooks/{id}/delete", p.handle(p.deleteWebhook))
				r.Get("/webhooks/{id}/deliveries", p.handle(p.webhookDeliveries))
				r.Post("/webhooks/{id}/test", p.handle(p.testWebhook))
				r.Post("/webhook-deliveries/{id}/resend", p.handle(p.resendDelivery))

				// The account's users: add, change role, remove (the store's rules).
				r.Get("/users", p.handle(p.listUsers))
				r.Get("/users/new", p.handle(p.newUserForm))
				r.Post("/users/new", p.handle(p.addUser))
				r.Post("/users/{id}/role", p.handle(p.changeUserRole))
				r.Get("/users/{id}/remove", p.handle(p.confirmRemoveUser))
				r.Post("/users/{id}/remove", p.handle(p.removeUser))
			})
		})
	})
}
