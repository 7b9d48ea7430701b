package views

import (
	"context"
	"strings"
)

// Text holds every user-visible string of the views in one language, so that the
// templates contain markup only. To add a language, write a function like German
// that fills every field, and add its tag to TextFor.
type Text struct {
	// Lang is the BCP 47 tag written into <html lang>.
	Lang string

	ProductName   string
	SkipToContent string
	TitleSuffix   string // appended to every page title: "Kontakte · Rundbrief"

	HomeTitle        string
	HomeLead         string
	HomeFeaturesHead string
	HomeFeatures     []Feature
	HomeAPIHead      string
	HomeAPIIntro     string
	HomeAPIDocLink   string
	HomeAPIDocHint   string
	HomeAPIIndexLink string
	HomeAPIIndexHint string
	HomeSelfHosted   string
	HomeSignIn       string

	// The portal, one group per page area; a later feature adds its own group.
	Format    FormatText
	Common    CommonText
	Nav       NavText
	Shell     ShellText
	Auth      AuthText
	Dashboard DashboardText
	Plan      PlanText
	Keys      KeysText
	Logs      LogsText
	Contacts  ContactsText
	Lists     ListsText
	Import    ImportText
	Errors    ErrorsText
	// SMTP holds the SMTP servers pages, Outbox the development outbox.
	SMTP   SMTPText
	Outbox OutboxText
	// Webhooks holds the webhook pages and their delivery log.
	Webhooks WebhooksText
	// AB holds the A/B test pages.
	AB ABText
	// Blocked holds the blocked-address list.
	Blocked BlockedText
	// AIUsage holds the AI usage and credit page.
	AIUsage AIUsageText
	// Emails holds the single-email pages, Campaigns the overview of all.
	Emails    EmailsText
	Campaigns CampaignsText
	// Sequences holds the story email calendar and the sequence builder.
	Sequences SequencesText
	// Activity holds the activity log, Users the user management.
	Activity ActivityText
	Users    UsersText
	// Newsletters holds the newsletter list, editor, preview and sending pages.
	Newsletters NewslettersText
	// Forms holds the sign-up form pages (list, editor, embed code, preview).
	Forms FormsText
	// Public holds the public pages (hosted sign-up form, confirmation).
	Public PublicText
	// Integrations holds the payment-provider integration pages (issue 23).
	Integrations IntegrationsText
	// Unsubscribe holds the unsubscribe page behind every mail's link.
	Unsubscribe UnsubscribeText
	// Charts holds the SVG charts (ChartFigure); Stats a newsletter's
	// statistics page; Analytics the dashboard's analytics panels.
	Charts    ChartsText
	Stats     StatsText
	Analytics AnalyticsText
	// APIDocs holds the API reference page /v1/docs.
	APIDocs APIDocsText
	// Templates holds the templates and library pages, the attachments
	// manager and the sender settings (imprint) with their notices.
	Templates TemplatesText
	// Appointments holds the appointment book: the portal's calendar and
	// settings and the public booking page.
	Appointments AppointmentsText
	// Inbox holds the connected inbox: reading, replies, drafts, rules,
	// metrics and the connection settings (text_inbox block below).
	Inbox InboxText
	// Fields, Changes and SMTPErrors: the custom field definitions, the
	// activity log's sentences and SMTP errors in German (issue 24, text
	// block at the end of this file).
	Fields     FieldsText
	Changes    ChangesText
	SMTPErrors SMTPErrorsText
	// LinkCheck: the send confirmation's check of the links that answer
	// (issue 24, germanLinkCheck at the end of this file).
	LinkCheck LinkCheckText
	// Segments holds saved filters, bulk actions on contacts and the
	// contact table's sorting (issue 24, segmentsText below).
	Segments SegmentsText
	// Editor holds the shared mail editor: rich text, images, AI assistant
	// (text_editor block below).
	Editor EditorText
}

// ChartsText holds what every chart says besides its data.
type ChartsText struct {
	NoData    string
	ShowTable string
}

// StatsText holds a newsletter's statistics page.
type StatsText struct {
	HoursTitle, HoursDesc, Hour, ExportCSV string
	Title                                  string // %s: the newsletter's name
	Lead                                   string // %s: subject
	Back                                   string
	Status                                 string
	Started                                string
	Finished                               string
	NotYet                                 string
	Recipients                             string
	Sent                                   string
	Opened                                 string
	Clicked                                string
	Unsubscribed                           string
	Bounced                                string
	Failed                                 string
	Skipped                                string
	Waiting                                string
	OfSent                                 string // %s: a rate, "of sent mail"
	OfOpened                               string // %s: a rate, "of openers"
	OfAttempted                            string // %s: a rate of sent + failed
	FiguresHead                            string
	TimelineTitle                          string
	TimelineDesc                           string // %s: name
	Day                                    string
	LinksHead                              string
	LinksCaption                           string
	URL                                    string
	UniqueClicks                           string
	Clicks                                 string
	ClickRate                              string
	NoLinks                                string
	NotSentTitle                           string
	NotSentBody                            string
	Note                                   string
	// StatusLabels names the campaign statuses.
	StatusLabels map[string]string
}

// AnalyticsText holds the dashboard's analytics panels.
type AnalyticsText struct {
	ActivityHead       string
	ActivityLead       string // %d: days
	Sent               string
	OpenRate           string
	ClickRate          string
	NewContacts        string
	Contacts           string
	ContactsChartTitle string
	ContactsChartDesc  string // %d: days
	Day                string
	CampaignsHead      string
	CampaignsLead      string
	CampaignsCaption   string
	RatesChartTitle    string
	RatesChartDesc     string
	Campaign           string
	Status             string
	NoCampaignsTitle   string
	NoCampaignsBody    string
	ShowStats          string // %s: campaign name, for screen readers
	Email              string // kind label of a single email
}

// FormatText holds how numbers and times are written.
type FormatText struct {
	DateTime     string // time layout, e.g. "02.01.2006, 15:04"
	Thousands    string // thousands separator
	Decimal      string // decimal separator
	Never        string // for a time that has not happened ("nie")
	Bytes        []string
	PercentUsed  string // %d: percent of a limit that is used
	EuroAmount   string // %s: amount with decimal separator
	MilliSeconds string // %s: duration in ms
}

// CommonText holds words many pages share.
type CommonText struct {
	Save         string
	Cancel       string
	Back         string
	Edit         string
	Actions      string
	FormInvalid  string // summary above a form with field errors
	Filter       string
	ResetFilter  string
	All          string
	PrevPage     string
	NextPage     string
	Pagination   string // aria-label of the pagination nav
	PageOf       string // %s, %s: page, pages (formatted numbers)
	RangeOfTotal string // %s, %s, %s: first, last, total (formatted numbers)
	RangeOfMore  string // %s, %s, %s: first, last, a count the total exceeds
	RangeOfOne   string // the only entry of a listing
	PageN        string // %s: page
	Copy         string
	Copied       string
	CopyFailed   string
}

// NavText holds the sidebar's labels.
type NavText struct {
	Label           string // aria-label of the navigation
	Dashboard       string
	Contacts        string
	Lists           string
	Newsletters     string
	Forms           string
	SectionDev      string
	APIKeys         string
	APILog          string
	SectionAccount  string
	Password        string
	Plan            string
	Blocked         string
	DevOutbox       string
	AIUsage         string
	Emails          string
	Campaigns       string
	SectionSettings string
	SMTP            string
	Webhooks        string
	ABTests         string
	Activity        string
	Users           string
	Inbox           string
}

// PlanText holds the plan page (/settings/plan).
type PlanText struct {
	Title      string
	Lead       string // %s: the plan's name
	ChangeHead string
	ChangeLead string // with RUNDBRIEF_UPGRADE_URL
	ChangeLink string
	// AskOperator is shown without RUNDBRIEF_UPGRADE_URL: %d the account's
	// number, %s the current plan.
	AskOperator string
	// FeatureTitle and FeatureBody answer a page of a feature the plan lacks
	// (402, as the API): FeatureBody %s is the feature's name.
	FeatureTitle, FeatureBody string
}

// AIUsageText holds the AI usage and credit page.
type AIUsageText struct {
	Title, Lead                                        string
	Balance, BalanceHint, SpentMonth, RequestsMonth    string // SpentMonth, RequestsMonth %s: the month
	LedgerHead, Caption, Time, Action, Model, Tokens   string
	Amount, TopUp, Fallback, FallbackHint              string
	EmptyTitle, EmptyBody, NoCreditTitle, NoCreditBody string
}

// ShellText holds the app shell's own strings.
type ShellText struct {
	Account    string // aria-label of the account area in the header
	SignedInAs string // read before the address by screen readers
	SignOut    string
	Menu       string
}

// AuthText holds sign-in, sign-out and password change.
type AuthText struct {
	SignInTitle      string
	SignInLead       string
	Email            string
	Password         string
	SignIn           string
	EmailRequired    string
	PasswordRequired string
	InvalidLogin     string
	Throttled        string
	Blocked          string
	SignedOut        string
	SessionExpired   string

	PasswordTitle      string
	PasswordLead       string
	CurrentPassword    string
	NewPassword        string
	NewPasswordHint    string // %d: minimum length
	ConfirmPassword    string
	PasswordMismatch   string
	PasswordChange     string
	PasswordChanged    string
	PasswordThrottled  string
	BackToStart        string
	NoAccountYet       string
	NoAccountYetDetail string
}

// SendCheckText words the pre-send checklist.
type SendCheckText struct {
	Head, Warning                                                  string
	SubjectOK, SubjectMissing, SubjectTooLong, SubjectShouting     string
	PreheaderOK, PreheaderMissing, SenderOK, SenderMissing         string // SenderOK %s: the route
	UnsubscribeOwn, UnsubscribeAppended                            string
	LinksOK, LinksBad, ImagesOK, ImagesNoAlt, WordsOK, WordsFound  string // LinksOK %d; LinksBad %s; ImagesOK %d; ImagesNoAlt %d of %d; WordsFound %s
	LinksOKOne, LinksNone, ImagesOKOne, ImagesNone, ImagesNoAltOne string // the forms for one and none; ImagesNoAltOne: one image of %d… %d
}

// EmailsText holds the single-email pages.
type EmailsText struct {
	Title, Lead, New, NewTitle, NewLead, Caption, EmptyTitle, EmptyBody                     string
	Subject, Status, Sent, Created, To, ToHint, ToLists, ToMore, Content                    string // ToMore %s: first addresses, %d: the rest
	Type, TypeHint, ScheduleAt, ScheduleHint, Send, Cancel, Outcome, OutcomeLine, LastError string // OutcomeLine %d sent, failed, skipped
	Recipients, Address, SentAt, OpenedAt, ClickedAt, OutcomeFilter                         string
	NoRecipientsTitle, NoRecipientsBody                                                     string
	SentFlash, SkippedFlash, AllSkippedFlash, ScheduledFlash, CancelledFlash                string // SentFlash %d; SkippedFlash %d, %d; AllSkippedFlash %d
	SkippedFlashOne, AllSkippedFlashOne                                                     string // one recipient skipped: SkippedFlashOne %d, %d; AllSkippedFlashOne no verb
	TypeLabels, Outcomes, RecipientStatus                                                   map[string]string
}

// CampaignsText holds the campaigns overview.
type CampaignsText struct {
	Title, Lead, Caption, Name, BounceRate, UnsubscribeRate, KindFilter, EmptyTitle, EmptyBody string
	Kinds, KindLabels                                                                          map[string]string
}

// BlockedText holds the blocked-address list.
type BlockedText struct {
	Title, Lead, AddHead, Emails, EmailsHint, File, FileHint, Add string
	FileTooLarge, FileUnreadable                                  string
	AddedOne, Added, RemovedFlash                                 string // Added %d: count; RemovedFlash %s: address
	Search, SearchHint, Caption, Email, Source, Since, Remove     string
	EmptyTitle, EmptyBody, NoMatchTitle, NoMatchBody              string
	SourceLabels                                                  map[string]string // store.Unsub…
}

// DashboardText holds the dashboard.
type DashboardText struct {
	Title        string
	Greeting     string // %s: account name
	UsageHead    string
	UsageLead    string // %s: plan name
	Contacts     string
	Lists        string
	SendsToday   string
	Storage      string
	Webhooks     string
	APIKeys      string
	AICredit     string
	AICreditHint string
	Upgrade      string
	NearLimit    string
	AtLimit      string
	Features     string
	NoFeatures   string
	// FeatureLabels names the plan features (plans.features).
	FeatureLabels map[string]string

	OnboardingHead string
	OnboardingLead string // %d done, %d steps
	OnboardingDone string // the screen-reader word for a ticked step
	OnboardingTodo string
	Steps          map[string]OnboardingStepText // by step id
}

// OnboardingStepText is one step of the first-steps checklist.
type OnboardingStepText struct {
	Title, Hint, Action string
}

// KeysText holds the API keys pages.
type KeysText struct {
	Title           string
	Lead            string
	New             string
	NewTitle        string
	EditTitle       string // %s: key name
	Create          string
	EmptyTitle      string
	EmptyBody       string
	Caption         string
	Name            string
	NameHint        string
	Unnamed         string
	Scopes          string
	ScopesHint      string
	ScopeLabels     map[string]string
	Restrictions    string
	RowIPs          string // short labels of the restrictions in the list
	RowOrigins      string
	RowLimit        string
	AllowedIPs      string
	AllowedIPsHint  string
	AllowedOrigins  string
	OriginsHint     string
	RateLimit       string
	RateLimitHint   string
	RateLimitNumber string
	PerMinute       string // %d: requests per minute
	AnyIP           string
	AnyOrigin       string
	DefaultLimit    string
	Created         string
	LastUsed        string
	Status          string
	Active          string
	Revoked         string // %s: when
	Renew           string
	Revoke          string
	RevokeQuestion  string // %s: key name
	RevokeDetail    string
	RevokeConfirm   string
	RenewQuestion   string // %s: key name
	RenewDetail     string
	RenewConfirm    string
	RevokedFlash    string // %s: key name
	UpdatedFlash    string // %s: key name
	LimitReached    string // %d: max keys
	RevealTitle     string
	RevealBody      string
	RevealLabel     string // %s: key name
	RevealUsage     string
	// Docs links the API reference (/v1/docs) from the keys page.
	Docs string
}

// APIDocsText holds the API reference page /v1/docs around the viewer, which
// shows the descriptions of openapi.json as they are (German and English).
type APIDocsText struct {
	Title       string
	OpenAPILink string
	Guides      string // followed by the path docs/README.md
	NoScript    string // followed by a link to openapi.json
}

// LogsText holds the API log page.
type LogsText struct {
	DocsLink      string
	Title         string
	Lead          string
	Caption       string
	Key           string
	AnyKey        string
	DeletedKey    string // %d: key id
	Status        string
	StatusHint    string
	StatusInvalid string
	Path          string
	PathHint      string
	Time          string
	Request       string
	IP            string
	Origin        string
	Duration      string
	EmptyTitle    string
	EmptyBody     string
	NoMatchTitle  string
	NoMatchBody   string
	Capped        string // %s: how many entries the pages hold
}

// NewslettersText holds the newsletter pages: the list, the editor with its
// live preview and placeholder picker, test mails, sending and scheduling.
type NewslettersText struct {
	// Checks words the pre-send checklist of the send confirmation.
	Checks SendCheckText
	// OpenRate and ClickRate head the list's rate columns.
	OpenRate, ClickRate string
	// The preview's width switch: a desktop client (600 px) or a phone.
	PreviewWidth, PreviewDesktop, PreviewMobile string
	Title                                       string
	Lead                                        string
	New                                         string
	NewTitle                                    string
	EditTitle                                   string // %s: newsletter name
	Caption                                     string
	EmptyTitle                                  string
	EmptyBody                                   string
	NoMatchTitle                                string
	NoMatchBody                                 string
	StatusFilter                                string
	AllStatuses                                 string
	// StatusLabels names the statuses (store.Campaign…), as the API's status_label.
	StatusLabels map[string]string

	Name                string
	NameHint            string
	Unnamed             string
	Subject             string
	SubjectHint         string
	Preheader           string
	PreheaderHint       string
	Format              string
	FormatMarkdown      string
	FormatHTML          string
	Content             string
	ContentHintMarkdown string
	ContentHintHTML     string
	Lists               string
	ListsHint           string
	NoLists             string
	ListMembers         string // %s: number of members
	SMTPServer          string
	SMTPDefault         string
	SMTPHint            string
	FromName            string
	FromNameHint        string
	ReplyTo             string
	ReplyToHint         string
	Tracking            string
	TrackOpens          string
	TrackClicks         string
	SectionContent      string
	SectionSettings     string
	SectionActions      string
	SaveDraft           string
	CreateDraft         string
	CreatedFlash        string // %s: name
	SavedFlash          string // %s: name
	TemplateConflict    string

	Placeholders      string
	PlaceholdersHint  string
	PlaceholderLabels map[string]string // placeholder name (German) → meaning

	Preview            string
	PreviewHint        string
	PreviewContact     string
	PreviewContactHint string
	PreviewFor         string // %s: contact address
	PreviewSample      string
	PreviewEmpty       string
	PreviewSubject     string
	PreviewPreheader   string
	PreviewText        string
	PreviewFrame       string // title of the iframe
	PreviewUnknown     string // %s: address without a contact
	PreviewUpdate      string // button without JavaScript

	TestTitle     string
	TestTo        string
	TestToHint    string // %d: max addresses
	TestSend      string
	TestResult    string // %d, %d: sent, total
	TestResultOne string // the same of one test mail
	TestOK        string
	TestFailed    string
	TestFailedAt  string // %s: error

	SendNow          string
	SendTitle        string // %s: name
	SendLead         string
	SendCount        string // %s: number of recipients
	SendCountMore    string // %s: the count's cap, more recipients than that
	SendCountNote    string // a capped count: the send counts exactly
	SendSkippedMore  string // %s: the count's cap, more blocked addresses
	SendSkipped      string // %s: blocked addresses
	SendLists        string
	SendSubject      string
	SendServer       string
	SendConfirm      string
	SendNotReady     string
	SendNoRecipients string
	SendStartedFlash string // %s: name
	SendingOff       string
	LimitReached     string // %s: sends per day

	Schedule         string
	ScheduleAt       string
	ScheduleHint     string
	ScheduleButton   string
	ScheduleInvalid  string
	ScheduledFlash   string // %s: time
	ScheduledFor     string // %s: time
	Unschedule       string
	UnscheduledFlash string
	Pause            string
	PausedFlash      string
	Resume           string
	ResumedFlash     string
	Duplicate        string
	NewABTest        string // link from a saved draft to a new A/B test of it
	DuplicatedFlash  string // %s: name of the copy
	Delete           string
	DeleteQuestion   string // %s: name
	DeleteDetail     string
	DeleteConfirm    string
	DeletedFlash     string // %s: name
	Stats            string
	Progress         string // %s, %s: sent, total
	ProgressLabel    string
	Recipients       string
	Sent             string
	Failed           string
	Skipped          string
	StartedAt        string
	FinishedAt       string
	LastError        string
	Created          string
	Updated          string
	Overview         string
	EditLink         string
	Open             string
	ChosenLists      string
	NoneChosen       string
	DefaultRoute     string
}

// FormsText holds the sign-up form pages.
type FormsText struct {
	Title           string
	Lead            string
	New             string
	NewTitle        string
	EditTitle       string // %s: name
	Caption         string
	EmptyTitle      string
	EmptyBody       string
	Name            string
	NameHint        string
	Lists           string
	ListsHint       string
	NoLists         string
	DoubleOptIn     string
	DoubleOptInHint string
	Fields          string
	FieldsHint      string
	Tags            string
	TagsHint        string
	SuccessRedirect string
	RedirectHint    string
	SuccessMessage  string
	MessageHint     string
	BotProtection   string
	ProofOfWork     string
	ProofOfWorkHint string
	MinFillSeconds  string
	MinFillHint     string
	MinFillNumber   string
	Create          string
	CreatedFlash    string // %s: name
	SavedFlash      string // %s: name
	Submissions     string
	Created         string
	On              string
	Off             string
	Embed           string
	EmbedTitle      string // %s: name
	EmbedLead       string
	EmbedCode       string
	EmbedHint       string
	// NoPrivacyURL: the account has no privacy policy address, so the
	// snippet and the hosted page link none; NoPrivacyURLLink goes to where
	// it is entered.
	NoPrivacyURL     string
	NoPrivacyURLLink string
	HostedURL        string
	HostedHint       string
	PreviewTitle     string
	PreviewFrame     string // title of the iframe
	Delete           string
	DeleteQuestion   string // %s: name
	DeleteDetail     string
	DeleteConfirm    string
	DeletedFlash     string // %s: name
	NoListsChosen    string
	Protection       string
	ProtectionPoW    string
	ProtectionStamp  string // %d: seconds
	ProtectionNone   string
}

// ContactsText holds the contact pages: table, detail, form, confirmations.
type ContactsText struct {
	TagSuggestion, TagSuggestionOne                             string // %s: tag, %s: contacts with it
	ActivityMail                                                string // before the mail an activity names: "in „Herbst“"
	Title, Lead, New, Import, Export, Caption                   string
	Search, SearchHint, List, AnyList, Tag, TagHint, Status     string
	AnyStatus                                                   string
	StatusLabels                                                map[string]string // subscribed, unsubscribed, pending
	SourceLabels                                                map[string]string // app, import, api, form, integration
	EmptyTitle, EmptyBody, NoMatchTitle, NoMatchBody            string
	Email, Name, FirstName, LastName, Address, Zip, City        string
	Phone, Note, Tags, TagsHint, Lists, ListsHint, Created      string
	Updated, Source, Confirmed, Unsubscribed                    string
	Fields, CustomFields, CustomHint, CustomKey, CustomValue    string
	NoCustomFields, NoTags, NoLists                             string
	NewTitle, EditTitle, Create, Exists                         string // EditTitle %s: email; Exists: address already has a contact
	ShowExisting                                                string
	Created1, Updated1                                          string // flashes, %s: email
	AddTag, AddTagLabel, RemoveTag                              string // RemoveTag %s: tag
	JoinList, JoinListLabel, LeaveList, AllJoined               string // LeaveList %s: list
	Activity, ActivityEmpty, ActivityMore                       string // ActivityMore %d: further entries
	ActivityLabels                                              map[string]string
	ActorLabels                                                 map[string]string
	Unsubscribe, UnsubscribeQ, UnsubscribeDetail, UnsubscribeOK string // UnsubscribeQ %s: email
	UnsubscribedFlash                                           string // %s: email
	Delete, DeleteQ, DeleteDetail, DeleteOK, DeletedFlash       string // DeleteQ, DeletedFlash %s: email
	LimitReached                                                string // %d: max contacts
	BackToList                                                  string
	ExportHint                                                  string
	UnknownList, CustomKeyMissing                               string
}

// ListsText holds the list pages.
type ListsText struct {
	Title, Lead, New, Caption, EmptyTitle, EmptyBody               string
	Name, NameHint, Color, ColorHint, Description, DescriptionHint string
	DoubleOptIn, DoubleOptInHint, DOIOn, DOIOff, Members, Created  string
	NewTitle, EditTitle, Create, CreatedFlash, UpdatedFlash        string // EditTitle, flashes %s: name
	Delete, DeleteQ, DeleteDetail, DeleteOK, DeletedFlash          string // DeleteQ, DeletedFlash %s: name
	LimitReached                                                   string // %d: max lists
	MembersTitle, MembersLead, MembersCaption                      string // MembersTitle %s: name; MembersLead %d: count
	MembersLeadOne                                                 string
	MembersEmptyTitle, MembersEmptyBody                            string
	AddMembers, AddMembersLabel, AddMembersHint, AddMembersSubmit  string
	AddMembersEmpty, AddMembersTooMany                             string // AddMembersTooMany %d: max
	AddedFlash                                                     string // %d, %d, %d, %d: added, created, already, failed
	AddFailed                                                      string // %s: email, %s: message
	Remove, RemovedFlash                                           string // RemovedFlash %s: email
}

// ImportText holds the CSV import: upload, column mapping, progress, summary.
type ImportText struct {
	Title, Lead, File, FileHint, Upload                 string
	FileMissing, FileTooLarge, FileUnreadable           string // FileTooLarge %d: MB
	Recent, RecentCaption, RecentEmpty, RecentEmptyBody string
	MapTitle, MapLead, Column, Sample, Target           string // MapLead %s: file, %d rows, %s delimiter
	TargetIgnore, TargetCustom, CustomKey               string
	TargetLabels                                        map[string]string
	Lists, ListsHint, Tags, TagsHint, Start             string
	DelimiterNames                                      map[string]string
	ProgressTitle, Queued, Running, Progress            string // Progress %d, %d: processed, total
	Refresh                                             string
	DoneTitle, FailedTitle, Created, Updated, Failed    string
	RowErrors, RowErrorsCaption, Row, Email, Message    string
	MoreErrors                                          string // %d: errors not listed
	MoreErrorsOne                                       string // the same of one error
	StatusLabels                                        map[string]string
	FileName, Rows, When, Status, ToContacts, Again     string
}

// SMTPText holds the SMTP servers pages.
type SMTPText struct {
	Title, Lead, New, NewTitle, EditTitle, Create string // EditTitle: %s server name
	EmptyTitle, EmptyBody, Caption                string
	DevOutboxNote                                 string
	Name, NameHint                                string
	Server, Host, HostHint, Port, PortHint        string
	Encryption, EncryptionHint                    string
	EncryptionLabels                              map[string]string // none, starttls, tls
	Username, UsernameHint                        string
	Password, PasswordHint, PasswordKeepHint      string
	RemovePassword, PasswordStored                string
	Sender, FromEmail, FromEmailHint              string
	FromName, FromNameHint                        string
	Rate, RateHint, PortNumber, RateNumber        string
	IsDefault, IsDefaultHint, Default             string
	Login, NoLogin                                string
	LastTest, NeverTested, Test, Testing          string
	TestCodes                                     map[string]string // ok, connect_failed, tls_failed, auth_failed
	TestedIn                                      string            // %s time, %s milliseconds
	Delete, DeleteQuestion, DeleteDetail          string            // DeleteQuestion: %s name
	DeleteDefaultDetail                           string
	CreatedFlash, UpdatedFlash, DeletedFlash      string // %s name
}

// ABText holds the A/B test pages: the list, the form that creates a test
// from a newsletter draft, and the results page.
type ABText struct {
	Title, Lead, New, NewTitle, Create            string
	EmptyTitle, EmptyBody, Caption                string
	Name, NameHint, Newsletter                    string
	TargetHint, NoDrafts                          string
	TestType, TestTypeHint                        string
	TestTypes                                     map[string]string // subject, content, design, sender, combo
	Mode, ModeHint                                string
	Modes                                         map[string]string // split, winner
	SplitA, SplitAHint                            string
	SamplePct, SamplePctHint                      string
	WaitHours, WaitHoursHint                      string
	Metric, MetricHint                            string
	Metrics                                       map[string]string // opens, clicks, ctr
	AutoApply, AutoApplyHint                      string
	VariantB, VariantBLead                        string
	BSubject, BPreheader, BFromName, BHTML        string
	BSubjectHint, BHTMLHint                       string
	NotANumber                                    string
	Status, Created, Started, DecideAt            string
	Statuses                                      map[string]string // draft, running, completed, stopped
	Variant                                       string            // %s: A or B
	Subject, Preheader, FromName, Content         string
	Unchanged, OwnContent, ShareOfRecipients      string // ShareOfRecipients: %d percent
	Results, ResultsLead, Sent, Opens             string
	Clicks, OpenRate, ClickRate, CTR              string
	Confidence, ConfidenceHint, Leader            string
	Level, Waiting, WaitingOne, Winner, Suggested string
	Significant, NotSignificant                   string
	ChooseWinner, ChooseWinnerLead                string
	WinnerA, WinnerB, WinnerAuto                  string
	Stop, StopDetail, Delete                      string
	WinnerFlash                                   string // %s winner, %d released
	CopiedFlash, StoppedFlash, CreatedFlash       string // CreatedFlash: %s name; StoppedFlash: %d released
	DeletedFlash                                  string
	NotRunning, Copied, Released                  string // Released: %d recipients
	PlanTitle, PlanBody                           string
	// PreviewTitle heads the side-by-side preview of the variants (issue 24).
	PreviewTitle string
}

// SequencesText holds the story email calendar and the sequence pages.
type SequencesText struct {
	StoryTitle, StoryLead, StorySettings, StorySettingsLead, StorySummary  string
	StorySummaryOne                                                        string // %s time, %d lists: one list
	StorySummaryNone                                                       string // %s time: no list chosen yet
	StoryEmails, Day, Gap, SentCount, Drafts, NoDrafts, ScheduleNext       string
	SendNow, NewStory, Subject, Content, CreateDraft                       string
	SendTime, SendTimeHint, Weekdays, Lists, FromName, ReplyTo, Save, Back string
	Saved, Title, Lead, EmptyTitle, EmptyBody, Name, Status, Trigger       string
	DaysCol, ParticipantsCol, New, Create, SequenceSendTimeHint            string
	Active, Inactive, BuilderLead, Activate, Deactivate, AddDay, DelayDays string
	DelayHint, Outline, OutlineLead, Topic, Goal, Tone, OutlineDays        string
	OutlineSubmit, Cancel, Funnel, FunnelSummary, Reached, Sent, Opened    string
	Clicked, Participants, EnrolEmails, EnrolHint, Enrol, Email, Progress  string
	NextSend, DayOf, DayN, Preheader, MoveUp, MoveDown, Delete, AtTime     string
	AtEntry, DaysAfterEntry, SameDay, DaysAfter, TimingSendTime            string
	DayAfterEntry, DayAfter                                                string // DaysAfterEntry and DaysAfter of one day
	TimingDelay, Enrolled, OutlineDone, PlanTitle, PlanBody, Scheduled     string
	SentNow                                                                string
	Edit, EditStory, EditStoryLead, StoryLocked, Preview                   string
	WeekdayNames, WeekdayShort                                             []string
	Statuses, Triggers, ParticipantStatuses                                map[string]string
	// DragHint labels the handle that drags a day of the builder's
	// timeline to another place (static/sequences.js).
	DragHint string
}

// WebhooksText holds the webhook pages and the delivery log.
type WebhooksText struct {
	Title, Lead, New, NewTitle, EditTitle, Create string // EditTitle: %s URL
	EmptyTitle, EmptyBody, Caption                string
	URL, URLHint, Description, DescriptionHint    string
	Events, EventsHint, AllEvents, AllEventsLong  string
	EventGroups                                   map[string]string // contact, list, email, campaign, other
	EventLabels                                   map[string]string // by event name
	Status, Active, Paused, Created               string
	PauseReasons                                  map[string]string // manual, failures, gone
	Failures, FailuresOne                         string            // %d failed attempts in a row
	PreviousSecret                                string            // %s: until when the old secret still signs
	Deliveries, Pause, Resume, Rotate, Delete     string
	PausedFlash, ResumedFlash                     string // %s URL
	CreatedFlash, UpdatedFlash, DeletedFlash      string // %s URL
	RotateQuestion, RotateDetail, RotateConfirm   string // RotateQuestion: %s URL
	DeleteQuestion, DeleteDetail                  string // DeleteQuestion: %s URL
	LimitReached                                  string // %d max webhooks
	RevealTitle, RevealBody, RevealLabel          string // RevealLabel: %s URL
	RevealUsage                                   string
	DeliveriesTitle, BackToList                   string
	TestTitle, TestLead, TestEvent, TestSend      string
	TestSentFlash                                 string // %s status label, %s response code or "–"
	TestBadge                                     string
	DeliveriesCaption                             string
	DeliveriesEmptyTitle, DeliveriesEmptyBody     string
	NoMatchBody, AnyEvent                         string
	Time, Event, ResponseCode, Duration, Attempts string
	DeliveryStatuses                              map[string]string // pending, retrying, succeeded, failed
	NextAttempt                                   string            // %s time
	Resend, ResentFlash                           string            // ResentFlash: %s status label
	ShowDetails, Payload, ResponseBody            string
	NoResponse, AttemptLog, NoStatus              string
}

// ActivityText holds the activity log page.
type ActivityText struct {
	Title, Lead, Caption, EmptyTitle, EmptyBody, NoMatchBody string
	Time, Action, Object, Actor, Details                     string
	ObjectType, AnyObject                                    string
	ObjectTypes                                              map[string]string // by store object type
	ActorTypes                                               map[string]string // key, user, system, public
	KeyActor                                                 string            // %s key name
	RemovedUser                                              string            // %d user id
	Capped                                                   string            // %s: how many entries the pages hold
	Actions                                                  map[string]string // by action, e.g. contact.created
}

// UsersText holds the user management pages.
type UsersText struct {
	Title, Lead, New, NewTitle, NewLead, Create, Caption string
	Email, Name, NameHint, Role, RoleOf, Since, You      string // RoleOf: %s address
	Roles                                                map[string]string
	RolesHelp                                            string
	Password, PasswordHint                               string // PasswordHint: %d minimum length
	ChangeRole, Remove, RemoveQuestion, RemoveDetail     string // RemoveQuestion: %s address
	CreatedFlash, RoleFlash, RemovedFlash                string // %s address; RoleFlash: %s address, %s role
	RevealTitle, RevealBody, RevealLabel                 string // RevealLabel: %s address
}

// OutboxText holds the development outbox.
type OutboxText struct {
	ToNewsletters                               string
	Title, Lead, Caption, EmptyTitle, EmptyBody string
	Time, Subject, From, To, Size, NoSubject    string
	MailLead                                    string // %s recipient, %s time
	Back, Headers, TextPart, HTMLPart, HTMLNote string
	ReadError                                   string
}

// ErrorsText holds the error pages.
type ErrorsText struct {
	NotFoundTitle   string
	NotFound        string
	ForbiddenTitle  string
	Forbidden       string
	CrossSiteTitle  string
	CrossSite       string
	InternalTitle   string
	Internal        string
	BadRequestTitle string
	BadRequest      string
	BackToDashboard string
}

// UnsubscribeText is the unsubscribe page: the question, the outcome, and what a
// test mail's link says.
type UnsubscribeText struct {
	Title, Question, Button string
	DoneTitle, Done         string
	AlreadyTitle, Already   string
	TestTitle, Test         string
}

// PublicText holds the public pages a visitor sees without signing in: the
// hosted sign-up form (also the embeddable snippet) and the double opt-in
// confirmation.
type PublicText struct {
	SubscribeTitle string
	SubscribeLead  string // %s: account name
	// FieldLabels names the form's fields: email and the optional ones.
	FieldLabels map[string]string
	Optional    string // appended to an optional field's label
	Honeypot    string // label of the field only bots fill
	Submit      string
	Privacy     string
	// PrivacyBefore and PrivacyLink say where the privacy policy is: the
	// text before its link and the link's own words; a full stop follows.
	PrivacyBefore string
	PrivacyLink   string
	ThanksTitle   string
	// FieldErrors are shown after a browser post came back with errors, by
	// field; FieldErrorDefault for a field without its own message.
	FieldErrors       map[string]string
	FieldErrorDefault string
	// Errors are form-wide messages after a failed post: stamp (fill time),
	// proof (proof of work), limit (too many sign-ups), unavailable.
	ErrStamp       string
	ErrProof       string
	ErrLimit       string
	ErrUnavailable string
	NeedsScript    string // noscript note of a form with proof of work

	// ConfirmAsk (%s: the address) and ConfirmButton are the page of a
	// confirmation link before the click: the button confirms.
	ConfirmAskTitle       string
	ConfirmAsk            string
	ConfirmButton         string
	ConfirmedTitle        string
	Confirmed             string
	AlreadyConfirmedTitle string
	AlreadyConfirmed      string
	ExpiredTitle          string
	Expired               string
	InvalidTitle          string
	Invalid               string
}

// Feature is one entry of the start page's feature list.
type Feature struct {
	Title string
	Body  string
}

// German returns the German interface strings, Rundbrief's default language.
func German() Text {
	return Text{
		Lang:          "de",
		ProductName:   "Rundbrief",
		SkipToContent: "Zum Inhalt springen",
		TitleSuffix:   " · Rundbrief",

		HomeTitle: "E-Mail-Marketing auf dem eigenen Server",
		HomeLead: "Rundbrief verwaltet Kontakte und Listen, verschickt Newsletter, Story-E-Mails " +
			"und automatische Sequenzen und zeigt, was davon ankommt – selbst betrieben, " +
			"mit einer vollständigen JSON-API.",
		HomeFeaturesHead: "Was Rundbrief kann",
		HomeFeatures: []Feature{
			{"Kontakte und Listen", "Import, Schlagwörter, Aktivitätsverlauf, Austragen per Klick und Double-Opt-in über gehostete Formulare."},
			{"Newsletter und Sequenzen", "Planen, pausieren, fortsetzen; Story-Sequenzen, die Tag für Tag zugestellt werden."},
			{"A/B-Tests und Statistik", "Öffnungen, Klicks und Zustellung je Kampagne, mit automatisch ermitteltem Gewinner."},
			{"Posteingang mit KI", "Antworten im verbundenen Postfach lesen, Regeln anlegen und Antwortentwürfe erstellen lassen."},
			{"Webhooks und Integrationen", "Signierte Ereignisse an Ihre Systeme; Käufe aus Stripe, Digistore24, CopeCart und PayPal."},
			{"Terminbuchung", "Öffentliche Buchungsseite mit freien Zeitfenstern, Bestätigung per E-Mail."},
		},
		HomeAPIHead:      "API",
		HomeAPIIntro:     "Alles, was das Portal kann, geht auch über die JSON-API. Sie authentifizieren sich mit einem API-Schlüssel im Authorization-Header:",
		HomeAPIDocLink:   "API-Beschreibung (OpenAPI)",
		HomeAPIDocHint:   "Maschinenlesbare Beschreibung aller Endpunkte, Parameter und Antworten.",
		HomeAPIIndexLink: "API-Übersicht",
		HomeAPIIndexHint: "Einstiegspunkt der API mit Version und Verweisen.",
		HomeSelfHosted:   "Rundbrief läuft als ein einziges Programm mit PostgreSQL. Ihre Daten bleiben auf Ihrem Server.",
		HomeSignIn:       "Anmelden",

		Format: FormatText{
			DateTime:     "02.01.2006, 15:04",
			Thousands:    ".",
			Decimal:      ",",
			Never:        "nie",
			Bytes:        []string{"B", "KB", "MB", "GB", "TB"},
			PercentUsed:  "%d %% genutzt",
			EuroAmount:   "%s €",
			MilliSeconds: "%s ms",
		},
		Common: CommonText{
			Save:         "Speichern",
			Cancel:       "Abbrechen",
			Back:         "Zurück",
			Edit:         "Bearbeiten",
			Actions:      "Aktionen",
			FormInvalid:  "Bitte korrigieren Sie die markierten Felder.",
			Filter:       "Filtern",
			ResetFilter:  "Filter zurücksetzen",
			All:          "Alle",
			PrevPage:     "Vorherige Seite",
			NextPage:     "Nächste Seite",
			Pagination:   "Seitenauswahl",
			PageOf:       "Seite %s von %s",
			RangeOfTotal: "%s–%s von %s Einträgen",
			RangeOfMore:  "%s–%s von mehr als %s Einträgen",
			RangeOfOne:   "1 Eintrag",
			PageN:        "Seite %s",
			Copy:         "Kopieren",
			Copied:       "In die Zwischenablage kopiert.",
			CopyFailed:   "Kopieren nicht möglich – bitte markieren und mit Strg+C kopieren.",
		},
		Nav: NavText{
			Label:           "Hauptnavigation",
			Dashboard:       "Übersicht",
			Contacts:        "Kontakte",
			Lists:           "Listen",
			Newsletters:     "Newsletter",
			Forms:           "Anmeldeformulare",
			SectionDev:      "Entwickler",
			APIKeys:         "API-Schlüssel",
			APILog:          "API-Protokoll",
			SectionAccount:  "Konto",
			Password:        "Passwort ändern",
			Plan:            "Tarif",
			Blocked:         "Sperrliste",
			DevOutbox:       "Postausgang",
			AIUsage:         "KI-Nutzung",
			Emails:          "E-Mails",
			Campaigns:       "Kampagnen",
			SectionSettings: "Einstellungen",
			SMTP:            "SMTP-Server",
			Webhooks:        "Webhooks",
			ABTests:         "A/B-Tests",
			Activity:        "Aktivitätsprotokoll",
			Users:           "Benutzer",
			Inbox:           "Posteingang",
		},
		Plan: PlanText{
			Title:        "Tarif",
			FeatureTitle: "Nicht in Ihrem Tarif enthalten",
			FeatureBody:  "„%s“ gehört nicht zu Ihrem Tarif. Auf der Seite „Tarif“ sehen Sie, was Ihr Tarif umfasst und wie Sie ihn wechseln.",
			Lead:         "Ihr Konto nutzt den Tarif „%s“.",
			ChangeHead:   "Tarif wechseln",
			ChangeLead:   "Mehr Kontakte, höhere Limits oder weitere Funktionen: Den Tarif wechseln Sie beim Betreiber dieser Rundbrief-Installation.",
			ChangeLink:   "Zum Tarifwechsel",
			AskOperator:  "Den Tarif ändert der Betreiber dieser Rundbrief-Installation. Bitte wenden Sie sich an ihn und nennen Sie Ihre Kontonummer %d und den gewünschten Tarif (derzeit „%s“).",
		},
		Shell: ShellText{
			Account:    "Benutzerkonto",
			SignedInAs: "Angemeldet als",
			SignOut:    "Abmelden",
			Menu:       "Menü",
		},
		Auth: AuthText{
			SignInTitle:      "Anmelden",
			SignInLead:       "Melden Sie sich mit Ihrer E-Mail-Adresse und Ihrem Passwort an.",
			Email:            "E-Mail-Adresse",
			Password:         "Passwort",
			SignIn:           "Anmelden",
			EmailRequired:    "Bitte die E-Mail-Adresse angeben.",
			PasswordRequired: "Bitte das Passwort angeben.",
			InvalidLogin:     "E-Mail-Adresse oder Passwort ist falsch.",
			Throttled:        "Zu viele fehlgeschlagene Anmeldeversuche. Bitte warten Sie 15 Minuten und versuchen Sie es dann erneut.",
			Blocked:          "Dieses Konto ist gesperrt. Bitte wenden Sie sich an den Betreiber.",
			SignedOut:        "Sie wurden abgemeldet.",
			SessionExpired:   "Bitte melden Sie sich an, um fortzufahren.",

			PasswordTitle:      "Passwort ändern",
			PasswordLead:       "Nach der Änderung werden Sie auf allen anderen Geräten abgemeldet.",
			CurrentPassword:    "Aktuelles Passwort",
			NewPassword:        "Neues Passwort",
			NewPasswordHint:    "Mindestens %d Zeichen.",
			ConfirmPassword:    "Neues Passwort wiederholen",
			PasswordMismatch:   "Die beiden Eingaben stimmen nicht überein.",
			PasswordChange:     "Passwort ändern",
			PasswordChanged:    "Ihr Passwort wurde geändert. Andere Sitzungen wurden beendet.",
			PasswordThrottled:  "Zu viele falsche Passworteingaben. Bitte warten Sie 15 Minuten.",
			BackToStart:        "Zur Startseite",
			NoAccountYet:       "Noch kein Zugang?",
			NoAccountYetDetail: "Der Betreiber legt Konten mit „rundbrief account create“ an.",
		},
		Dashboard: DashboardText{
			OnboardingHead: "Erste Schritte",
			OnboardingLead: "%d von %d erledigt. Jeder Schritt hakt sich selbst ab, sobald er getan ist.",
			OnboardingDone: "Erledigt:",
			OnboardingTodo: "Offen:",
			Steps: map[string]OnboardingStepText{
				"sender":     {"Absender und Impressum eintragen", "Firma und Postanschrift gehören in jede Werbe-E-Mail (Impressumspflicht); Rundbrief setzt sie unten ein.", "Absender eintragen"},
				"smtp":       {"Versand einrichten", "Tragen Sie den SMTP-Server ein, über den Ihre E-Mails hinausgehen.", "SMTP-Server eintragen"},
				"audience":   {"Kontakte gewinnen", "Importieren Sie Ihre Kontakte als CSV oder legen Sie ein Anmeldeformular für Ihre Website an.", "Kontakte importieren"},
				"newsletter": {"Ersten Newsletter schreiben", "Ein Entwurf genügt: Sie können ihn in Ruhe fertigstellen.", "Newsletter schreiben"},
				"test":       {"Test-E-Mail senden", "Schicken Sie Ihren Newsletter zuerst an sich selbst und prüfen Sie ihn im eigenen Postfach.", "Zu den Newslettern"},
			},
			Title:        "Übersicht",
			Greeting:     "Willkommen bei %s",
			UsageHead:    "Tarif und Verbrauch",
			UsageLead:    "Tarif „%s“: was Ihr Konto von seinen Limits nutzt.",
			Contacts:     "Kontakte",
			Lists:        "Listen",
			SendsToday:   "Versand heute",
			Storage:      "Speicher",
			Webhooks:     "Webhooks",
			APIKeys:      "Aktive API-Schlüssel",
			AICredit:     "KI-Guthaben",
			AICreditHint: "Wird bei jeder KI-Anfrage verbraucht.",
			Upgrade:      "Tarif wechseln",
			NearLimit:    "Fast ausgeschöpft",
			AtLimit:      "Limit erreicht",
			Features:     "Enthaltene Funktionen",
			NoFeatures:   "Dieser Tarif enthält keine Zusatzfunktionen (auch keinen API-Zugang).",
			FeatureLabels: map[string]string{
				"api":          "API-Zugang",
				"ab_tests":     "A/B-Tests",
				"ai":           "KI-Funktionen",
				"inbox":        "Posteingang",
				"sequences":    "Story-Sequenzen",
				"integrations": "Integrationen",
				"appointments": "Terminbuchung",
			},
		},
		Keys: KeysText{
			Title:      "API-Schlüssel",
			Lead:       "Mit API-Schlüsseln greifen Ihre Systeme auf die Rundbrief-API zu. Geben Sie jedem Schlüssel nur die Rechte, die er braucht.",
			New:        "Neuer API-Schlüssel",
			NewTitle:   "Neuen API-Schlüssel erstellen",
			EditTitle:  "Einschränkungen von „%s“ bearbeiten",
			Create:     "Schlüssel erstellen",
			EmptyTitle: "Noch keine API-Schlüssel",
			EmptyBody:  "Erstellen Sie einen Schlüssel, um Kontakte, Newsletter und mehr über die API zu verwalten.",
			Caption:    "API-Schlüssel dieses Kontos, aktive zuerst",
			Name:       "Name",
			NameHint:   "Wofür der Schlüssel gedacht ist, z. B. „Shop-Anbindung“.",
			Unnamed:    "Ohne Namen",
			Scopes:     "Bereiche",
			ScopesHint: "Ohne Auswahl erhält der Schlüssel Vollzugriff.",
			ScopeLabels: map[string]string{
				"*":     "Vollzugriff (alle Bereiche)",
				"read":  "Lesen (alle GET-Anfragen)",
				"write": "Schreiben (anlegen, ändern, löschen)",
				"send":  "Versenden (E-Mails und Newsletter)",
				"ai":    "KI (Textgenerierung)",
			},
			Restrictions:    "Einschränkungen",
			RowIPs:          "IPs",
			RowOrigins:      "Origins",
			RowLimit:        "Limit",
			AllowedIPs:      "Erlaubte IP-Adressen",
			AllowedIPsHint:  "Eine Adresse oder ein CIDR-Bereich pro Zeile, z. B. 203.0.113.7 oder 10.0.0.0/8. Leer: jede Adresse.",
			AllowedOrigins:  "Erlaubte Origins (Browser)",
			OriginsHint:     "Ein Origin pro Zeile, z. B. https://shop.example.com oder https://*.example.com. Leer: jeder Origin.",
			RateLimit:       "Eigenes Anfragelimit",
			RateLimitHint:   "Anfragen pro Minute, höchstens das Standardlimit des Dienstes. Leer: Standardlimit.",
			RateLimitNumber: "Bitte eine ganze Zahl angeben.",
			PerMinute:       "%d/min",
			AnyIP:           "jede IP",
			AnyOrigin:       "jeder Origin",
			DefaultLimit:    "Standardlimit",
			Created:         "Angelegt",
			LastUsed:        "Zuletzt benutzt",
			Status:          "Status",
			Active:          "Aktiv",
			Revoked:         "Widerrufen am %s",
			Renew:           "Erneuern",
			Revoke:          "Widerrufen",
			RevokeQuestion:  "Schlüssel „%s“ widerrufen?",
			RevokeDetail:    "Der Schlüssel funktioniert sofort nicht mehr. Das lässt sich nicht rückgängig machen.",
			RevokeConfirm:   "Endgültig widerrufen",
			RenewQuestion:   "Schlüssel „%s“ erneuern?",
			RenewDetail:     "Sie erhalten einen neuen Schlüssel mit denselben Einstellungen. Der bisherige funktioniert sofort nicht mehr.",
			RenewConfirm:    "Jetzt erneuern",
			RevokedFlash:    "Der Schlüssel „%s“ wurde widerrufen.",
			UpdatedFlash:    "Die Einschränkungen von „%s“ wurden gespeichert.",
			LimitReached:    "Ihr Tarif erlaubt höchstens %d aktive API-Schlüssel. Widerrufen Sie einen oder wechseln Sie den Tarif.",
			RevealTitle:     "Ihr neuer API-Schlüssel",
			RevealBody:      "Kopieren Sie den Schlüssel jetzt und bewahren Sie ihn sicher auf. Er wird nur dieses eine Mal angezeigt.",
			RevealLabel:     "API-Schlüssel „%s“",
			RevealUsage:     "Senden Sie ihn im Header: Authorization: Bearer <Schlüssel>",
			Docs:            "API-Referenz",
		},
		Appointments: germanAppointments(),
		Fields:       germanFields(),
		Changes:      germanChanges(),
		SMTPErrors:   germanSMTPErrors(),
		LinkCheck:    germanLinkCheck(),
		Inbox:        germanInbox(),
		Editor:       germanEditor(),
		APIDocs: APIDocsText{
			Title:       "Rundbrief-API – Referenz",
			OpenAPILink: "OpenAPI-Beschreibung (JSON)",
			Guides:      "Anleitungen im Repository:",
			NoScript:    "Die Referenz braucht JavaScript. Ohne JavaScript lesen Sie die maschinenlesbare Beschreibung:",
		},
		Logs: LogsText{
			DocsLink:      "API-Dokumentation öffnen",
			Title:         "API-Protokoll",
			Lead:          "Jede Anfrage an die API mit Zeit, Schlüssel, IP-Adresse und Ergebnis. Einträge werden 90 Tage aufbewahrt.",
			Caption:       "API-Anfragen, neueste zuerst",
			Key:           "Schlüssel",
			AnyKey:        "Alle Schlüssel",
			DeletedKey:    "Schlüssel #%d",
			Status:        "Status",
			StatusHint:    "z. B. 401",
			StatusInvalid: "Bitte einen HTTP-Statuscode zwischen 100 und 599 angeben.",
			Path:          "Pfad beginnt mit",
			PathHint:      "z. B. /v1/contacts",
			Time:          "Zeit",
			Request:       "Anfrage",
			IP:            "IP-Adresse",
			Origin:        "Origin",
			Duration:      "Dauer",
			EmptyTitle:    "Noch keine API-Anfragen",
			EmptyBody:     "Sobald ein API-Schlüssel benutzt wird, erscheinen die Anfragen hier.",
			NoMatchTitle:  "Keine passenden Einträge",
			NoMatchBody:   "Für diesen Filter gibt es keine Anfragen. Ändern oder entfernen Sie den Filter.",
			Capped:        "Das Protokoll hat mehr Einträge: Hier blättern Sie durch die neuesten %s. Ältere finden Sie mit einem Filter oder über die API (GET /v1/logs/api).",
		},
		Newsletters: NewslettersText{
			Title:          "Newsletter",
			Open:           "Öffnen",
			OpenRate:       "Öffnungsrate",
			PreviewWidth:   "Breite der Vorschau",
			PreviewDesktop: "Desktop",
			PreviewMobile:  "Handy",
			Checks: SendCheckText{
				Head:                "Vor dem Versand geprüft",
				Warning:             "Bitte prüfen:",
				SubjectOK:           "Betreff gesetzt, kurz genug und ohne Großbuchstaben-Geschrei.",
				SubjectMissing:      "Kein Betreff.",
				SubjectTooLong:      "Der Betreff ist länger als 70 Zeichen; auf dem Handy wird er abgeschnitten.",
				SubjectShouting:     "Der Betreff enthält Wörter in Großbuchstaben oder „!!“; das wirkt wie Werbung und landet eher im Spam.",
				PreheaderOK:         "Vorschautext gesetzt.",
				PreheaderMissing:    "Kein Vorschautext: Postfächer zeigen dann den Anfang des Inhalts neben dem Betreff.",
				SenderOK:            "Absender: %s.",
				SenderMissing:       "Kein Absender eingerichtet.",
				UnsubscribeOwn:      "Der Austragen-Link steht im Inhalt.",
				UnsubscribeAppended: "Die Austragen-Zeile wird unten angehängt.",
				LinksOK:             "%d Links, alle vollständige Adressen.",
				LinksOKOne:          "%d Link, eine vollständige Adresse.",
				LinksNone:           "Keine Links.",
				LinksBad:            "Diese Links führen ins Leere, weil ihnen https:// oder die Domain fehlt: %s",
				ImagesOK:            "%d Bilder, alle mit Alternativtext.",
				ImagesNoAlt:         "%d von %d Bildern haben keinen Alternativtext; wer Bilder blockiert, sieht dann nichts.",
				ImagesNoAltOne:      "%d von %d Bildern hat keinen Alternativtext; wer Bilder blockiert, sieht dann nichts.",
				ImagesOKOne:         "%d Bild, mit Alternativtext.",
				ImagesNone:          "Keine Bilder.",
				WordsOK:             "Keine Wörter, auf die Spamfilter anspringen.",
				WordsFound:          "Spamfilter reagieren auf: %s",
			},
			ClickRate:    "Klickrate",
			Lead:         "Schreiben, testen und versenden Sie Newsletter an Ihre Listen – sofort oder zu einem geplanten Zeitpunkt.",
			New:          "Neuer Newsletter",
			NewTitle:     "Neuer Newsletter",
			EditTitle:    "„%s“ bearbeiten",
			Caption:      "Newsletter dieses Kontos, neueste zuerst",
			EmptyTitle:   "Noch keine Newsletter",
			EmptyBody:    "Legen Sie Ihren ersten Newsletter als Entwurf an. Versendet wird erst, wenn Sie es bestätigen.",
			NoMatchTitle: "Keine Newsletter mit diesem Status",
			NoMatchBody:  "Wählen Sie einen anderen Status oder zeigen Sie alle Newsletter.",
			StatusFilter: "Status",
			AllStatuses:  "Alle Status",
			StatusLabels: campaignStatusLabels(),

			Name:                "Interner Name",
			NameHint:            "Nur für Sie sichtbar. Ohne Angabe heißt ein neuer Entwurf wie sein Betreff.",
			Unnamed:             "Ohne Namen",
			Subject:             "Betreff",
			SubjectHint:         "Platzhalter wie {{vorname}} sind erlaubt.",
			Preheader:           "Vorschautext",
			PreheaderHint:       "Der kurze Text, den viele Postfächer neben dem Betreff zeigen.",
			Format:              "Format des Inhalts",
			FormatMarkdown:      "Markdown",
			FormatHTML:          "HTML",
			Content:             "Inhalt",
			ContentHintMarkdown: "Markdown: **fett**, *kursiv*, [Link](https://…), Listen mit „-“, Überschriften mit „#“.",
			ContentHintHTML:     "Vollständiges HTML oder ein Ausschnitt. Eine Abmeldezeile wird angefügt, wenn {{abmelde_link}} fehlt.",
			Lists:               "Empfängerlisten",
			ListsHint:           "Der Newsletter geht an alle angemeldeten Kontakte dieser Listen (jede Adresse einmal).",
			NoLists:             "Es gibt noch keine Listen. Legen Sie zuerst eine Liste mit Kontakten an.",
			ListMembers:         "%s Mitglieder",
			SMTPServer:          "SMTP-Server",
			SMTPDefault:         "Standard des Kontos",
			SMTPHint:            "Über welchen Server die E-Mails verschickt werden.",
			FromName:            "Absendername",
			FromNameHint:        "Leer: der Absendername des SMTP-Servers.",
			ReplyTo:             "Antwortadresse",
			ReplyToHint:         "Optional: wohin Antworten gehen sollen.",
			Tracking:            "Messung",
			TrackOpens:          "Öffnungen messen",
			TrackClicks:         "Klicks messen",
			SectionContent:      "Inhalt",
			SectionSettings:     "Empfänger und Absender",
			SectionActions:      "Testen und versenden",
			SaveDraft:           "Entwurf speichern",
			CreateDraft:         "Entwurf anlegen",
			CreatedFlash:        "Der Entwurf „%s“ wurde angelegt.",
			SavedFlash:          "Der Entwurf „%s“ wurde gespeichert.",
			TemplateConflict:    "Dieser Newsletter verwendet eine Vorlage; eigener Inhalt ersetzt sie nicht. Leeren Sie den Inhalt oder entfernen Sie die Vorlage über die API.",

			Placeholders:     "Platzhalter",
			PlaceholdersHint: "Wird für jeden Empfänger ersetzt. Mit {{vorname|Hallo}} geben Sie einen Ersatztext für leere Werte an.",
			PlaceholderLabels: map[string]string{
				"vorname":      "Vorname",
				"nachname":     "Nachname",
				"name":         "Vollständiger Name",
				"email":        "E-Mail-Adresse",
				"adresse":      "Straße und Hausnummer",
				"plz":          "Postleitzahl",
				"ort":          "Ort",
				"telefon":      "Telefon",
				"notiz":        "Notiz",
				"datum":        "Heutiges Datum",
				"abmelde_link": "Persönlicher Abmeldelink",
			},

			Preview:            "Vorschau",
			PreviewHint:        "So sieht der Newsletter für einen Empfänger aus. Links und Öffnungen werden in der Vorschau nicht gezählt.",
			PreviewContact:     "Vorschau für Kontakt",
			PreviewContactHint: "E-Mail-Adresse eines Kontakts. Leer: der erste Empfänger der Listen, sonst ein Beispielkontakt.",
			PreviewFor:         "Personalisiert für %s",
			PreviewSample:      "Personalisiert für einen Beispielkontakt (Max Mustermann)",
			PreviewEmpty:       "Sobald der Newsletter Inhalt hat, erscheint hier die Vorschau.",
			PreviewSubject:     "Betreff",
			PreviewPreheader:   "Vorschautext",
			PreviewText:        "Textversion anzeigen",
			PreviewFrame:       "Vorschau des Newsletters",
			PreviewUnknown:     "Es gibt keinen Kontakt mit der Adresse %s.",
			PreviewUpdate:      "Vorschau aktualisieren",

			TestTitle:     "Test-E-Mail",
			TestTo:        "Testempfänger",
			TestToHint:    "Bis zu %d Adressen, durch Komma oder Zeilenumbruch getrennt. Der Entwurf wird vorher gespeichert; der Betreff beginnt mit [TEST].",
			TestSend:      "Speichern und Test senden",
			TestResult:    "%d von %d Test-E-Mails verschickt.",
			TestResultOne: "%d von %d Test-E-Mail verschickt.",
			TestOK:        "verschickt",
			TestFailed:    "fehlgeschlagen",
			TestFailedAt:  "Fehler: %s",

			SendNow:          "Jetzt versenden …",
			SendTitle:        "„%s“ jetzt versenden?",
			SendLead:         "Bitte prüfen Sie die Angaben. Der Versand beginnt sofort und lässt sich nur pausieren, nicht zurücknehmen.",
			SendCount:        "%s Empfänger",
			SendCountMore:    "Mehr als %s Empfänger",
			SendCountNote:    "Gezählt wurde bis zu dieser Zahl; der Versand stellt die genaue Zahl fest und nennt sie danach in der Statistik.",
			SendSkippedMore:  "Mehr als %s gesperrte Adressen werden übersprungen.",
			SendSkipped:      "%s gesperrte Adressen werden übersprungen.",
			SendLists:        "Listen",
			SendSubject:      "Betreff",
			SendServer:       "Versand über",
			SendConfirm:      "Ja, jetzt an alle versenden",
			SendNotReady:     "Der Newsletter kann noch nicht versendet werden:",
			SendNoRecipients: "Die gewählten Listen haben keine angemeldeten Empfänger.",
			SendStartedFlash: "Der Versand von „%s“ hat begonnen.",
			SendingOff:       "Der Versand ist in diesem Dienst nicht eingerichtet.",
			LimitReached:     "Ihr Tarif erlaubt höchstens %s E-Mails pro Tag. Versenden Sie morgen oder wechseln Sie den Tarif.",

			Schedule:         "Planen",
			ScheduleAt:       "Versandzeitpunkt",
			ScheduleHint:     "Datum und Uhrzeit in deutscher Zeit (Europe/Berlin). Der Entwurf wird vorher gespeichert.",
			ScheduleButton:   "Speichern und planen",
			ScheduleInvalid:  "Bitte Datum und Uhrzeit angeben, z. B. 01.12.2026, 09:00.",
			ScheduledFlash:   "Der Newsletter wird am %s versendet.",
			ScheduledFor:     "Geplant für %s",
			Unschedule:       "Planung aufheben",
			UnscheduledFlash: "Die Planung wurde aufgehoben; der Newsletter ist wieder ein Entwurf.",
			Pause:            "Pausieren",
			PausedFlash:      "Der Versand ist pausiert.",
			Resume:           "Fortsetzen",
			ResumedFlash:     "Der Versand wird fortgesetzt.",
			Duplicate:        "Duplizieren",
			NewABTest:        "A/B-Test anlegen",
			DuplicatedFlash:  "Die Kopie „%s“ wurde als Entwurf angelegt.",
			Delete:           "Löschen",
			DeleteQuestion:   "Entwurf „%s“ löschen?",
			DeleteDetail:     "Der Entwurf wird endgültig gelöscht.",
			DeleteConfirm:    "Endgültig löschen",
			DeletedFlash:     "Der Entwurf „%s“ wurde gelöscht.",
			Stats:            "Statistik ansehen",
			Progress:         "%s von %s E-Mails verschickt",
			ProgressLabel:    "Versandfortschritt",
			Recipients:       "Empfänger",
			Sent:             "Versendet",
			Failed:           "Fehlgeschlagen",
			Skipped:          "Übersprungen",
			StartedAt:        "Versand begonnen",
			FinishedAt:       "Versand beendet",
			LastError:        "Letzter Fehler",
			Created:          "Angelegt",
			Updated:          "Geändert",
			Overview:         "Übersicht",
			EditLink:         "Bearbeiten",
			ChosenLists:      "Listen",
			NoneChosen:       "keine",
			DefaultRoute:     "Standard des Kontos",
		},
		Forms: FormsText{
			Title:            "Anmeldeformulare",
			Lead:             "Formulare für Ihre Website: neue Kontakte landen direkt in den gewählten Listen, auf Wunsch mit Double-Opt-in.",
			New:              "Neues Formular",
			NewTitle:         "Neues Anmeldeformular",
			EditTitle:        "Formular „%s“ bearbeiten",
			Caption:          "Anmeldeformulare dieses Kontos, neueste zuerst",
			EmptyTitle:       "Noch keine Anmeldeformulare",
			EmptyBody:        "Erstellen Sie ein Formular und binden Sie es mit einem kurzen HTML-Code auf Ihrer Website ein.",
			Name:             "Name",
			NameHint:         "Nur für Sie sichtbar, z. B. „Newsletter Fußzeile“.",
			Lists:            "Listen",
			ListsHint:        "Neue Kontakte werden in diese Listen eingetragen.",
			NoLists:          "Es gibt noch keine Listen. Kontakte werden dann nur angelegt.",
			DoubleOptIn:      "Double-Opt-in",
			DoubleOptInHint:  "Neue Kontakte bestätigen ihre Anmeldung über einen Link per E-Mail (empfohlen).",
			Fields:           "Weitere Felder",
			FieldsHint:       "Die E-Mail-Adresse ist immer dabei; diese Felder sind für Besucher freiwillig.",
			Tags:             "Schlagwörter",
			TagsHint:         "Werden jedem neuen Kontakt gegeben, durch Komma getrennt.",
			SuccessRedirect:  "Weiterleitung nach der Anmeldung",
			RedirectHint:     "Optional: vollständige Adresse Ihrer Danke-Seite, z. B. https://example.com/danke.",
			SuccessMessage:   "Danke-Text",
			MessageHint:      "Wird ohne Weiterleitung nach der Anmeldung angezeigt. Leer: ein Standardtext.",
			BotProtection:    "Schutz vor Bots",
			ProofOfWork:      "Rechenaufgabe (Proof of Work)",
			ProofOfWorkHint:  "Der Browser löst unsichtbar eine kleine Rechenaufgabe; kein Captcha. Braucht JavaScript und HTTPS.",
			MinFillSeconds:   "Mindestzeit zum Ausfüllen (Sekunden)",
			MinFillHint:      "Anmeldungen, die schneller abgeschickt werden, gelten als Bot. 0 schaltet die Prüfung ab.",
			MinFillNumber:    "Bitte eine ganze Zahl angeben.",
			Create:           "Formular erstellen",
			CreatedFlash:     "Das Formular „%s“ wurde erstellt. Kopieren Sie jetzt den Einbettungscode.",
			SavedFlash:       "Das Formular „%s“ wurde gespeichert.",
			Submissions:      "Anmeldungen",
			Created:          "Angelegt",
			On:               "an",
			Off:              "aus",
			Embed:            "Einbetten",
			EmbedTitle:       "Formular „%s“ einbetten",
			EmbedLead:        "Fügen Sie diesen Code an der Stelle Ihrer Website ein, an der das Formular erscheinen soll.",
			EmbedCode:        "Einbettungscode (HTML)",
			EmbedHint:        "Der Code enthält das Formular und, wenn nötig, ein kleines Skript für den Bot-Schutz.",
			NoPrivacyURL:     "Unter dem Formular steht noch kein Link zu Ihrer Datenschutzerklärung. Wer seine Adresse einträgt, muss erfahren können, wie Sie sie verarbeiten (DSGVO).",
			NoPrivacyURLLink: "Adresse der Datenschutzerklärung eintragen",
			HostedURL:        "Gehostete Anmeldeseite",
			HostedHint:       "Ohne eigene Website: verlinken Sie einfach diese Seite.",
			PreviewTitle:     "Vorschau",
			PreviewFrame:     "Vorschau der Anmeldeseite",
			Delete:           "Löschen",
			DeleteQuestion:   "Formular „%s“ löschen?",
			DeleteDetail:     "Eingebettete Formulare und die Anmeldeseite funktionieren sofort nicht mehr. Bereits angemeldete Kontakte bleiben erhalten.",
			DeleteConfirm:    "Endgültig löschen",
			DeletedFlash:     "Das Formular „%s“ wurde gelöscht.",
			NoListsChosen:    "keine Liste",
			Protection:       "Bot-Schutz",
			ProtectionPoW:    "Rechenaufgabe",
			ProtectionStamp:  "Mindestzeit %d s",
			ProtectionNone:   "keiner",
		},
		Contacts: ContactsText{
			TagSuggestion:    "%s (%s Kontakte)",
			TagSuggestionOne: "%s (%s Kontakt)",
			ActivityMail:     "in",
			Title:            "Kontakte",
			Lead:             "Alle Kontakte Ihres Kontos: suchen, filtern, bearbeiten, importieren und exportieren.",
			New:              "Neuer Kontakt",
			Import:           "CSV importieren",
			Export:           "Als CSV exportieren",
			Caption:          "Kontakte, neueste zuerst",
			Search:           "Suche",
			SearchHint:       "E-Mail-Adresse oder Name",
			List:             "Liste",
			AnyList:          "Alle Listen",
			Tag:              "Schlagwort",
			TagHint:          "z. B. kunde",
			Status:           "Status",
			AnyStatus:        "Jeder Status",
			StatusLabels: map[string]string{
				"subscribed":   "Angemeldet",
				"unsubscribed": "Ausgetragen",
				"pending":      "Unbestätigt",
			},
			SourceLabels: map[string]string{
				"app":         "Portal",
				"import":      "Import",
				"api":         "API",
				"form":        "Anmeldeformular",
				"integration": "Integration",
				"booking":     "Terminbuchung",
			},
			EmptyTitle:     "Noch keine Kontakte",
			EmptyBody:      "Legen Sie einen Kontakt an oder importieren Sie Ihre bestehenden Kontakte aus einer CSV-Datei.",
			NoMatchTitle:   "Keine passenden Kontakte",
			NoMatchBody:    "Für diese Suche und diesen Filter gibt es keine Kontakte. Ändern oder entfernen Sie den Filter.",
			Email:          "E-Mail-Adresse",
			Name:           "Name",
			FirstName:      "Vorname",
			LastName:       "Nachname",
			Address:        "Adresse",
			Zip:            "PLZ",
			City:           "Ort",
			Phone:          "Telefon",
			Note:           "Notiz",
			Tags:           "Schlagwörter",
			TagsHint:       "Durch Kommas getrennt, z. B. kunde, newsletter.",
			Lists:          "Listen",
			ListsHint:      "Listen mit Double-Opt-in senden neuen Kontakten eine Bestätigungs-E-Mail.",
			Created:        "Angelegt",
			Updated:        "Geändert",
			Source:         "Herkunft",
			Confirmed:      "Bestätigt am",
			Unsubscribed:   "Abgemeldet am",
			Fields:         "Angaben",
			CustomFields:   "Eigene Felder",
			CustomHint:     "Feldname aus a–z, 0–9, _ und - (nutzbar als Platzhalter). Leeren Sie den Namen, um ein Feld zu entfernen.",
			CustomKey:      "Feldname",
			CustomValue:    "Wert",
			NoCustomFields: "Keine eigenen Felder.",
			NoTags:         "Keine Schlagwörter.",
			NoLists:        "In keiner Liste.",
			NewTitle:       "Neuen Kontakt anlegen",
			EditTitle:      "Kontakt %s bearbeiten",
			Create:         "Kontakt anlegen",
			Exists:         "Zu dieser Adresse gibt es schon einen Kontakt.",
			ShowExisting:   "Vorhandenen Kontakt öffnen",
			Created1:       "Der Kontakt %s wurde angelegt.",
			Updated1:       "Der Kontakt %s wurde gespeichert.",
			AddTag:         "Hinzufügen",
			AddTagLabel:    "Schlagwort hinzufügen",
			RemoveTag:      "Schlagwort „%s“ entfernen",
			JoinList:       "Eintragen",
			JoinListLabel:  "In Liste eintragen",
			LeaveList:      "Aus „%s“ entfernen",
			AllJoined:      "Der Kontakt ist in allen Listen.",
			Activity:       "Verlauf",
			ActivityEmpty:  "Noch keine Einträge.",
			ActivityMore:   "%d ältere Einträge werden nicht angezeigt.",
			ActivityLabels: map[string]string{
				"contact.created":           "Angelegt",
				"contact.updated":           "Geändert",
				"contact.unsubscribed":      "Ausgetragen",
				"contact.confirmed":         "Anmeldung bestätigt",
				"contact.signed_up":         "Über ein Formular angemeldet",
				"contact.confirmation_sent": "Bestätigungs-E-Mail verschickt",
				"list.joined":               "In Liste aufgenommen",
				"list.left":                 "Aus Liste entfernt",
				"email.sent":                "E-Mail versendet",
				"email.opened":              "E-Mail geöffnet",
				"email.clicked":             "Link in E-Mail geklickt",
				"email.bounced":             "E-Mail unzustellbar",
				"address.blocked":           "Adresse gesperrt",
			},
			ActorLabels: map[string]string{
				"key":    "API-Schlüssel",
				"user":   "Portal",
				"system": "System",
				"public": "Kontakt selbst",
			},
			Unsubscribe:       "Austragen",
			UnsubscribeQ:      "%s austragen?",
			UnsubscribeDetail: "Der Kontakt erhält keine E-Mails mehr; die Adresse kommt auf die Sperrliste. Erst eine neue Anmeldung mit Bestätigung hebt das auf.",
			UnsubscribeOK:     "Jetzt austragen",
			UnsubscribedFlash: "%s wurde ausgetragen.",
			Delete:            "Löschen",
			DeleteQ:           "Kontakt %s löschen?",
			DeleteDetail:      "Der Kontakt, seine Listen und sein Verlauf werden gelöscht. Eine gesperrte Adresse bleibt gesperrt. Das lässt sich nicht rückgängig machen.",
			DeleteOK:          "Endgültig löschen",
			DeletedFlash:      "Der Kontakt %s wurde gelöscht.",
			LimitReached:      "Ihr Tarif erlaubt höchstens %d Kontakte. Löschen Sie Kontakte oder wechseln Sie den Tarif.",
			BackToList:        "Zur Kontaktliste",
			UnknownList:       "Diese Liste gibt es nicht.",
			CustomKeyMissing:  "Bitte jedem Wert einen Feldnamen geben.",
			ExportHint:        "Exportiert alle Kontakte des aktuellen Filters mit allen Feldern, Schlagwörtern und Listen.",
		},
		Lists: ListsText{
			Title:             "Listen",
			Lead:              "Listen ordnen Ihre Kontakte, etwa nach Interesse. Newsletter gehen an eine oder mehrere Listen.",
			New:               "Neue Liste",
			Caption:           "Listen dieses Kontos",
			EmptyTitle:        "Noch keine Listen",
			EmptyBody:         "Legen Sie eine Liste an, um Kontakte zu gruppieren und Newsletter gezielt zu versenden.",
			Name:              "Name",
			NameHint:          "z. B. „Stammkunden“.",
			Color:             "Farbe",
			ColorHint:         "Kennzeichnet die Liste in Tabellen, Format #rrggbb.",
			Description:       "Beschreibung",
			DescriptionHint:   "Nur für Sie sichtbar.",
			DoubleOptIn:       "Double-Opt-in",
			DoubleOptInHint:   "Neue Kontakte erhalten eine Bestätigungs-E-Mail und sind bis zur Bestätigung unbestätigt.",
			DOIOn:             "Mit Bestätigung",
			DOIOff:            "Ohne Bestätigung",
			Members:           "Kontakte",
			Created:           "Angelegt",
			NewTitle:          "Neue Liste anlegen",
			EditTitle:         "Liste „%s“ bearbeiten",
			Create:            "Liste anlegen",
			CreatedFlash:      "Die Liste „%s“ wurde angelegt.",
			UpdatedFlash:      "Die Liste „%s“ wurde gespeichert.",
			Delete:            "Löschen",
			DeleteQ:           "Liste „%s“ löschen?",
			DeleteDetail:      "Die Liste wird gelöscht; ihre Kontakte bleiben erhalten. Das lässt sich nicht rückgängig machen.",
			DeleteOK:          "Endgültig löschen",
			DeletedFlash:      "Die Liste „%s“ wurde gelöscht.",
			LimitReached:      "Ihr Tarif erlaubt höchstens %d Listen. Löschen Sie eine Liste oder wechseln Sie den Tarif.",
			MembersTitle:      "Liste „%s“",
			MembersLead:       "%s Kontakte in dieser Liste.",
			MembersLeadOne:    "1 Kontakt in dieser Liste.",
			MembersCaption:    "Kontakte dieser Liste, neueste zuerst",
			MembersEmptyTitle: "Noch keine Kontakte in dieser Liste",
			MembersEmptyBody:  "Tragen Sie Kontakte per E-Mail-Adresse ein oder importieren Sie eine CSV-Datei in diese Liste.",
			AddMembers:        "Kontakte eintragen",
			AddMembersLabel:   "E-Mail-Adressen",
			AddMembersHint:    "Eine Adresse pro Zeile (oder durch Kommas getrennt). Unbekannte Adressen werden als neue Kontakte angelegt.",
			AddMembersSubmit:  "Eintragen",
			AddMembersEmpty:   "Bitte mindestens eine E-Mail-Adresse angeben.",
			AddMembersTooMany: "Höchstens %d Adressen auf einmal; für mehr nutzen Sie den CSV-Import.",
			AddedFlash:        "%d eingetragen, %d neu angelegt, %d schon in der Liste, %d fehlgeschlagen.",
			AddFailed:         "%s: %s",
			Remove:            "Entfernen",
			RemovedFlash:      "%s wurde aus der Liste entfernt.",
		},
		Import: ImportText{
			Title:           "Kontakte importieren",
			Lead:            "Laden Sie eine CSV-Datei hoch (UTF-8, mit Kopfzeile). Im nächsten Schritt ordnen Sie die Spalten den Kontaktfeldern zu.",
			File:            "CSV-Datei",
			FileHint:        "Höchstens 50 MB. Trennzeichen (Komma, Semikolon, Tabulator) wird erkannt.",
			Upload:          "Hochladen und weiter",
			FileMissing:     "Bitte eine CSV-Datei auswählen.",
			FileTooLarge:    "Die Datei ist größer als %d MB. Bitte teilen Sie sie in mehrere Dateien auf.",
			FileUnreadable:  "Die Datei konnte nicht gelesen werden. Bitte laden Sie sie erneut hoch.",
			Recent:          "Letzte Importe",
			RecentCaption:   "Letzte Importe, neueste zuerst",
			RecentEmpty:     "Noch keine Importe",
			RecentEmptyBody: "Jeder Import erscheint hier mit seinem Fortschritt und dem Ergebnis: angelegte, geänderte und fehlerhafte Zeilen.",
			MapTitle:        "Spalten zuordnen",
			MapLead:         "%s: %s Zeilen, Trennzeichen %s. Wählen Sie für jede Spalte, wohin sie gehört.",
			Column:          "Spalte",
			Sample:          "Beispielwerte",
			Target:          "Zuordnung",
			TargetIgnore:    "Nicht importieren",
			TargetCustom:    "Eigenes Feld …",
			CustomKey:       "Name des eigenen Felds",
			TargetLabels: map[string]string{
				"email":      "E-Mail-Adresse",
				"first_name": "Vorname",
				"last_name":  "Nachname",
				"address":    "Adresse",
				"zip":        "PLZ",
				"city":       "Ort",
				"phone":      "Telefon",
				"note":       "Notiz",
				"tags":       "Schlagwörter",
			},
			Lists:     "In Listen eintragen",
			ListsHint: "Alle importierten Kontakte kommen in diese Listen. Listen mit Double-Opt-in senden neuen Kontakten eine Bestätigungs-E-Mail.",
			Tags:      "Schlagwörter für alle",
			TagsHint:  "Durch Kommas getrennt, z. B. import-2026.",
			Start:     "Import starten",
			DelimiterNames: map[string]string{
				",":  "Komma",
				";":  "Semikolon",
				"\t": "Tabulator",
				"|":  "senkrechter Strich",
			},
			ProgressTitle:    "Import läuft",
			Queued:           "Der Import wartet auf den Start …",
			Running:          "Kontakte werden importiert …",
			Progress:         "%s von %s Zeilen verarbeitet",
			Refresh:          "Aktualisieren",
			DoneTitle:        "Import abgeschlossen",
			FailedTitle:      "Import abgebrochen",
			Created:          "Neu angelegt",
			Updated:          "Aktualisiert",
			Failed:           "Fehlgeschlagen",
			RowErrors:        "Fehlerhafte Zeilen",
			RowErrorsCaption: "Zeilen, die nicht importiert wurden",
			Row:              "Zeile",
			Email:            "E-Mail-Adresse",
			Message:          "Fehler",
			MoreErrors:       "%d weitere Fehler werden nicht angezeigt.",
			MoreErrorsOne:    "%d weiterer Fehler wird nicht angezeigt.",
			StatusLabels: map[string]string{
				"uploaded": "Zuordnung offen",
				"queued":   "Wartet",
				"running":  "Läuft",
				"done":     "Abgeschlossen",
				"failed":   "Abgebrochen",
			},
			FileName:   "Datei",
			Rows:       "Zeilen",
			When:       "Hochgeladen",
			Status:     "Status",
			ToContacts: "Zu den Kontakten",
			Again:      "Weitere Datei importieren",
		},
		Errors: ErrorsText{
			NotFoundTitle:   "Nicht gefunden",
			NotFound:        "Diese Seite oder dieses Objekt gibt es nicht (mehr).",
			ForbiddenTitle:  "Keine Berechtigung",
			Forbidden:       "Diese Seite ist Inhabern und Administratoren des Kontos vorbehalten.",
			CrossSiteTitle:  "Anfrage abgelehnt",
			CrossSite:       "Diese Anfrage kam nicht von Rundbrief selbst und wurde zu Ihrem Schutz abgelehnt. Bitte laden Sie die Seite neu und versuchen Sie es erneut.",
			InternalTitle:   "Ein Fehler ist aufgetreten",
			Internal:        "Die Anfrage konnte nicht bearbeitet werden. Bitte versuchen Sie es später erneut.",
			BadRequestTitle: "Fehlerhafte Anfrage",
			BadRequest:      "Das Formular konnte nicht gelesen werden (zu groß oder beschädigt). Bitte laden Sie die Seite neu.",
			BackToDashboard: "Zur Übersicht",
		},
		SMTP: SMTPText{
			Title:         "SMTP-Server",
			Lead:          "Über Ihre eigenen SMTP-Server verschickt Rundbrief die E-Mails dieses Kontos. Der Standardserver wird benutzt, wenn ein Versand keinen anderen nennt.",
			New:           "SMTP-Server hinzufügen",
			NewTitle:      "SMTP-Server hinzufügen",
			EditTitle:     "SMTP-Server „%s“ bearbeiten",
			Create:        "Server hinzufügen",
			EmptyTitle:    "Noch keine eigenen SMTP-Server",
			EmptyBody:     "Ohne eigenen Server gehen E-Mails über den Server des Betreibers. Fügen Sie einen hinzu, um mit Ihrer eigenen Domain und Ihrem eigenen Anbieter zu versenden.",
			Caption:       "SMTP-Server dieses Kontos",
			DevOutboxNote: "Entwicklungsmodus: Es ist kein Server des Betreibers eingerichtet. E-Mails ohne eigenen SMTP-Server werden nicht verschickt, sondern im Postausgang gesammelt:",
			Name:          "Name",
			NameHint:      "Zur Unterscheidung, z. B. „Mailjet“ oder „Eigener Server“.",
			Server:        "Server",
			Host:          "Hostname",
			HostHint:      "Ohne Schema und Port, z. B. smtp.example.com.",
			Port:          "Port",
			PortHint:      "Leer: der übliche Port der Verschlüsselung (587, 465 oder 25).",
			Encryption:    "Verschlüsselung",
			EncryptionHint: "STARTTLS (meist Port 587) oder TLS von Anfang an (meist Port 465). " +
				"Unverschlüsselt nur für Server im eigenen Netz.",
			EncryptionLabels: map[string]string{
				"starttls": "STARTTLS",
				"tls":      "TLS (SMTPS)",
				"none":     "Keine (unverschlüsselt)",
			},
			Username:         "Benutzername",
			UsernameHint:     "Leer, wenn der Server keine Anmeldung verlangt.",
			Password:         "Passwort",
			PasswordHint:     "Wird verschlüsselt gespeichert und nie wieder angezeigt.",
			PasswordKeepHint: "Ein Passwort ist gespeichert (es wird nie angezeigt). Leer lassen, um es zu behalten; oder ein neues eingeben.",
			RemovePassword:   "Gespeichertes Passwort entfernen",
			PasswordStored:   "Passwort gespeichert",
			Sender:           "Absender",
			FromEmail:        "Absenderadresse",
			FromEmailHint:    "Die Adresse, von der die E-Mails kommen; der Server muss sie verschicken dürfen.",
			FromName:         "Absendername",
			FromNameHint:     "Optional, z. B. Ihr Firmenname.",
			Rate:             "Höchstens E-Mails pro Sekunde",
			RateHint:         "0 oder leer: unbegrenzt. Viele Anbieter begrenzen die Rate.",
			PortNumber:       "Bitte eine ganze Zahl angeben.",
			RateNumber:       "Bitte eine ganze Zahl angeben.",
			IsDefault:        "Standardserver dieses Kontos",
			IsDefaultHint:    "Der Standardserver verschickt alle E-Mails, die keinen anderen Server nennen. Es gibt höchstens einen.",
			Default:          "Standard",
			Login:            "Anmeldung",
			NoLogin:          "ohne Anmeldung",
			LastTest:         "Letzter Test",
			NeverTested:      "Noch nicht getestet",
			Test:             "Verbindung testen",
			Testing:          "Wird geprüft …",
			TestCodes: map[string]string{
				"ok":             "Erfolgreich",
				"connect_failed": "Verbindung fehlgeschlagen",
				"tls_failed":     "Verschlüsselung fehlgeschlagen",
				"auth_failed":    "Anmeldung fehlgeschlagen",
			},
			TestedIn:            "Getestet am %s in %s ms",
			Delete:              "Löschen",
			DeleteQuestion:      "SMTP-Server „%s“ löschen?",
			DeleteDetail:        "E-Mails, die diesen Server nennen, gehen danach über den Standardserver.",
			DeleteDefaultDetail: "Das ist der Standardserver: Danach wird Ihr ältester anderer Server zum Standard, ohne weitere Server gehen E-Mails über den Server des Betreibers.",
			CreatedFlash:        "Der SMTP-Server „%s“ wurde hinzugefügt. Testen Sie jetzt die Verbindung.",
			UpdatedFlash:        "Der SMTP-Server „%s“ wurde gespeichert.",
			DeletedFlash:        "Der SMTP-Server „%s“ wurde gelöscht.",
		},
		Emails: EmailsText{
			Title:              "E-Mails",
			Lead:               "Einzelne E-Mails an bestimmte Adressen: Folge-E-Mails nach einem Gespräch oder Kauf, Belege und Bestätigungen.",
			New:                "Neue E-Mail",
			NewTitle:           "E-Mail schreiben",
			NewLead:            "Geht sofort hinaus oder zum gewählten Zeitpunkt. Gesperrte Adressen werden bei Folge-E-Mails übersprungen.",
			Caption:            "Einzelne E-Mails, neueste zuerst",
			EmptyTitle:         "Noch keine einzelnen E-Mails",
			EmptyBody:          "Schreiben Sie eine E-Mail an einzelne Adressen, oder senden Sie sie aus Ihrem Shop über die API (POST /v1/emails/send).",
			Subject:            "Betreff",
			Status:             "Status",
			Sent:               "Versendet",
			Created:            "Angelegt",
			To:                 "An",
			ToHint:             "Eine Adresse pro Zeile oder durch Komma getrennt; höchstens 1.000.",
			ToLists:            "Listen und Kontakte",
			ToMore:             "%s und %d weitere",
			Content:            "Inhalt",
			Type:               "Art",
			TypeHint:           "Transaktionale E-Mails gehen auch an gesperrte Adressen und ohne Austragen-Zeile: nur für Belege, Bestätigungen und Passwörter.",
			ScheduleAt:         "Zeitpunkt",
			ScheduleHint:       "Leer: sofort. Deutsche Zeit.",
			Send:               "Senden",
			Cancel:             "Planung aufheben",
			Outcome:            "Ergebnis",
			OutcomeLine:        "%d versendet, %d fehlgeschlagen, %d übersprungen",
			LastError:          "Letzter Fehler",
			Recipients:         "Empfänger",
			Address:            "Adresse",
			SentAt:             "Versendet",
			OpenedAt:           "Geöffnet",
			ClickedAt:          "Geklickt",
			OutcomeFilter:      "Empfänger filtern",
			NoRecipientsTitle:  "Keine Empfänger",
			NoRecipientsBody:   "In dieser Auswahl ist niemand. Geplante E-Mails haben ihre Empfänger erst beim Versand.",
			SentFlash:          "Die E-Mail geht an %d Empfänger hinaus.",
			SkippedFlash:       "Die E-Mail geht an %d Empfänger hinaus; %d waren gesperrt oder nicht angemeldet.",
			AllSkippedFlash:    "Nichts versendet: alle %d Empfänger sind gesperrt oder nicht angemeldet.",
			SkippedFlashOne:    "Die E-Mail geht an %d Empfänger hinaus; %d war gesperrt oder nicht angemeldet.",
			AllSkippedFlashOne: "Nichts versendet: Der Empfänger ist gesperrt oder nicht angemeldet.",
			ScheduledFlash:     "Die E-Mail ist geplant.",
			CancelledFlash:     "Die Planung ist aufgehoben; die E-Mail wird nicht versendet.",
			TypeLabels: map[string]string{
				"follow_up":     "Folge-E-Mail",
				"transactional": "Transaktional",
				"newsletter":    "Newsletter",
			},
			Outcomes: map[string]string{
				"":        "Alle",
				"opened":  "Geöffnet",
				"clicked": "Geklickt",
				"failed":  "Fehlgeschlagen",
				"skipped": "Übersprungen",
			},
			RecipientStatus: map[string]string{
				"queued":  "In der Warteschlange",
				"sending": "Wird versendet",
				"sent":    "Versendet",
				"failed":  "Fehlgeschlagen",
				"skipped": "Übersprungen",
			},
		},
		Campaigns: CampaignsText{
			Title:           "Kampagnen",
			Lead:            "Alles, was Rundbrief verschickt hat, nebeneinander: Newsletter und einzelne E-Mails mit ihren Raten.",
			Caption:         "Kampagnen, neueste zuerst",
			Name:            "Name",
			BounceRate:      "Unzustellbar",
			UnsubscribeRate: "Ausgetragen",
			KindFilter:      "Nach Art filtern",
			EmptyTitle:      "Noch nichts verschickt",
			EmptyBody:       "Sobald ein Newsletter oder eine E-Mail hinausgeht, steht sie hier mit Öffnungen, Klicks und Austragungen.",
			Kinds: map[string]string{
				"":           "Alle",
				"newsletter": "Newsletter",
				"email":      "Einzelne E-Mails",
			},
			KindLabels: map[string]string{
				"newsletter": "Newsletter",
				"email":      "Einzelne E-Mail",
			},
		},
		AIUsage: AIUsageText{
			Title:         "KI-Nutzung",
			Lead:          "Was die KI-Funktionen gekostet haben und wie viel Guthaben bleibt. Abgerechnet wird je Anfrage nach den Tokens des Modells.",
			Balance:       "Guthaben",
			BalanceHint:   "Das Guthaben lädt der Betreiber auf.",
			SpentMonth:    "Verbraucht im %s",
			RequestsMonth: "Anfragen im %s",
			LedgerHead:    "Verlauf",
			Caption:       "Anfragen und Aufladungen, neueste zuerst",
			Time:          "Zeitpunkt",
			Action:        "Aufgabe",
			Model:         "Modell",
			Tokens:        "Tokens (ein/aus)",
			Amount:        "Betrag",
			TopUp:         "Aufladung",
			Fallback:      "Ersatzmodell",
			FallbackHint:  "Das gewählte Modell war nicht erreichbar; ein anderes hat geantwortet.",
			EmptyTitle:    "Noch keine KI-Anfragen",
			EmptyBody:     "Im Newsletter-Editor schlägt die KI Betreffzeilen und Vorschautexte vor und überarbeitet Texte. Jede Anfrage erscheint hier mit ihren Kosten.",
			NoCreditTitle: "Kein Guthaben",
			NoCreditBody:  "Ohne Guthaben sind die KI-Funktionen gesperrt. Bitten Sie den Betreiber, Ihr Guthaben aufzuladen.",
		},
		Blocked: BlockedText{
			Title:          "Sperrliste",
			Lead:           "An diese Adressen geht keine E-Mail mehr, auch wenn sie als Kontakt wieder auftauchen. Ausgetragene Kontakte und harte Unzustellbarkeiten landen von selbst hier.",
			AddHead:        "Adressen sperren",
			Emails:         "E-Mail-Adressen",
			EmailsHint:     "Eine Adresse pro Zeile, oder durch Komma getrennt; höchstens 1.000 auf einmal.",
			File:           "Oder aus einer Datei",
			FileHint:       "Eine CSV- oder Textdatei; übernommen wird jede Zelle mit einer E-Mail-Adresse.",
			Add:            "Sperren",
			FileTooLarge:   "Die Datei ist größer als 1 MB. Teilen Sie sie bitte auf.",
			FileUnreadable: "Die Datei ließ sich nicht lesen. Ist es eine CSV- oder Textdatei?",
			AddedOne:       "1 Adresse steht auf der Sperrliste.",
			Added:          "%d Adressen stehen auf der Sperrliste.",
			RemovedFlash:   "%s steht nicht mehr auf der Sperrliste. Der Kontakt bleibt ausgetragen, bis er sich neu anmeldet.",
			Search:         "Suche",
			SearchHint:     "Adresse oder Teil davon",
			Caption:        "Gesperrte Adressen",
			Email:          "E-Mail-Adresse",
			Source:         "Grund",
			Since:          "Gesperrt seit",
			Remove:         "Entsperren",
			EmptyTitle:     "Die Sperrliste ist leer",
			EmptyBody:      "Sobald sich jemand austrägt oder eine Adresse dauerhaft unzustellbar ist, steht sie hier. Adressen, die nie Post bekommen sollen, tragen Sie oben ein.",
			NoMatchTitle:   "Keine Adresse gefunden",
			NoMatchBody:    "Keine gesperrte Adresse enthält diesen Suchbegriff.",
			SourceLabels: map[string]string{
				"link":      "Über den Austragen-Link",
				"one_click": "Per Ein-Klick-Austragung im Postfach",
				"manual":    "Von Hand gesperrt",
				"api":       "Über die API",
				"import":    "Beim Import",
				"bounce":    "Dauerhaft unzustellbar",
				"complaint": "Als Spam gemeldet",
			},
		},
		AB: ABText{
			PreviewTitle:      "Vorschau: Variante A und B nebeneinander",
			Title:             "A/B-Tests",
			PlanTitle:         "A/B-Tests gehören nicht zu Ihrem Tarif",
			PlanBody:          "A/B-Tests sind ab dem Tarif Pro enthalten. Auf der Seite „Tarif“ sehen Sie, was Ihr Tarif umfasst und wie Sie ihn wechseln.",
			Lead:              "Testen Sie Betreff, Inhalt, Design oder Absender gegeneinander: Rundbrief teilt die Empfänger auf, misst Öffnungen und Klicks und ermittelt den Gewinner.",
			New:               "Neuer A/B-Test",
			NewTitle:          "A/B-Test anlegen",
			Create:            "Test anlegen",
			EmptyTitle:        "Noch keine A/B-Tests",
			EmptyBody:         "Legen Sie einen Test für einen Newsletter-Entwurf an. Er beginnt, sobald der Newsletter versendet wird.",
			Caption:           "A/B-Tests dieses Kontos",
			Name:              "Name",
			NameHint:          "Leer lassen für „A/B-Test: <Newsletter>“.",
			Newsletter:        "Newsletter-Entwurf",
			TargetHint:        "Variante A ist der aktuelle Inhalt dieses Newsletters; der Test beginnt mit seinem Versand.",
			NoDrafts:          "Es gibt keinen Newsletter-Entwurf ohne Test. Legen Sie zuerst einen Newsletter an.",
			TestType:          "Was wird getestet?",
			TestTypeHint:      "Davon hängt ab, welche Änderung Variante B braucht.",
			TestTypes:         map[string]string{"subject": "Betreff", "content": "Inhalt", "design": "Design", "sender": "Absender", "combo": "Kombination"},
			Mode:              "Modus",
			ModeHint:          "Aufteilung: alle Empfänger erhalten A oder B. Gewinner: erst eine Testgruppe, danach geht der Gewinner an alle übrigen.",
			Modes:             map[string]string{"split": "Aufteilung", "winner": "Testgruppe, dann Gewinner"},
			SplitA:            "Anteil Variante A (%)",
			SplitAHint:        "10 bis 90; der Rest erhält Variante B.",
			SamplePct:         "Testgruppe (%)",
			SamplePctHint:     "Nur im Modus Gewinner: 5 bis 50 Prozent der Empfänger.",
			WaitHours:         "Wartezeit (Stunden)",
			WaitHoursHint:     "1 bis 72 Stunden nach dem Versand wird der Gewinner ermittelt.",
			Metric:            "Gewinner nach",
			MetricHint:        "Klicks pro Öffnung vergleicht, wie viele der Öffnenden klicken.",
			Metrics:           map[string]string{"opens": "Öffnungen", "clicks": "Klicks", "ctr": "Klicks pro Öffnung"},
			AutoApply:         "Gewinner automatisch übernehmen",
			AutoApplyHint:     "Ohne Haken schlägt Rundbrief den Gewinner nur vor; Sie wählen ihn dann hier aus.",
			VariantB:          "Variante B",
			VariantBLead:      "Nur was Sie hier eintragen, unterscheidet B von A. Leere Felder übernehmen den Wert von A.",
			BSubject:          "Betreff B",
			BPreheader:        "Vorschautext B",
			BFromName:         "Absendername B",
			BHTML:             "Inhalt B (HTML)",
			BSubjectHint:      "Platzhalter wie {{vorname}} sind erlaubt.",
			BHTMLHint:         "Der vollständige HTML-Inhalt von Variante B.",
			NotANumber:        "Bitte eine ganze Zahl angeben.",
			Status:            "Status",
			Created:           "Angelegt",
			Started:           "Gestartet",
			DecideAt:          "Entscheidung",
			Statuses:          map[string]string{"draft": "Bereit", "running": "Läuft", "completed": "Abgeschlossen", "stopped": "Gestoppt"},
			Variant:           "Variante %s",
			Subject:           "Betreff",
			Preheader:         "Vorschautext",
			FromName:          "Absender",
			Content:           "Inhalt",
			Unchanged:         "wie A",
			OwnContent:        "eigener Inhalt",
			ShareOfRecipients: "%d %% der Empfänger",
			Results:           "Ergebnisse",
			ResultsLead:       "Es zählt nur die Testgruppe; Öffnungen und Klicks jeweils einmal pro Empfänger.",
			Sent:              "Versendet",
			Opens:             "Öffnungen",
			Clicks:            "Klicks",
			OpenRate:          "Öffnungsrate",
			ClickRate:         "Klickrate",
			CTR:               "Klicks pro Öffnung",
			Confidence:        "Konfidenz",
			ConfidenceHint:    "Wie sicher der Unterschied kein Zufall ist (z-Test für zwei Anteile); ab 95 % gilt er als signifikant.",
			Leader:            "Vorne",
			Level:             "Gleichstand",
			Waiting:           "%d Empfänger warten auf den Gewinner.",
			WaitingOne:        "%d Empfänger wartet auf den Gewinner.",
			Winner:            "Gewinner",
			Suggested:         "Vorschlag nach der Wartezeit: Variante %s",
			Significant:       "signifikant",
			NotSignificant:    "noch nicht signifikant",
			ChooseWinner:      "Gewinner festlegen",
			ChooseWinnerLead:  "Die wartenden Empfänger erhalten den Gewinner; gewinnt B, wird sein Inhalt in den Newsletter übernommen.",
			WinnerA:           "A gewinnt",
			WinnerB:           "B gewinnt",
			WinnerAuto:        "Nach den Daten",
			Stop:              "Test stoppen",
			StopDetail:        "Wartende Empfänger erhalten Variante A.",
			Delete:            "Test löschen",
			WinnerFlash:       "Variante %s hat gewonnen. %d wartende Empfänger erhalten sie jetzt.",
			CopiedFlash:       "Der Inhalt von Variante B wurde in den Newsletter übernommen.",
			StoppedFlash:      "Der Test wurde gestoppt. %d wartende Empfänger erhalten Variante A.",
			CreatedFlash:      "Der A/B-Test „%s“ ist angelegt. Er beginnt mit dem Versand des Newsletters.",
			DeletedFlash:      "Der A/B-Test wurde gelöscht.",
			NotRunning:        "Der Test beginnt mit dem Versand des Newsletters; bis dahin gibt es keine Ergebnisse.",
			Copied:            "Inhalt von B übernommen",
			Released:          "%d wartende Empfänger erhielten den Gewinner.",
		},
		Sequences: SequencesText{
			StoryTitle:           "Story-E-Mails",
			StoryLead:            "Eine E-Mail am Tag an Ihre Story-Listen: was wann hinausgeht, Entwürfe und Lücken im Kalender.",
			StorySettings:        "Einstellungen",
			StorySettingsLead:    "Wann und an wen die tägliche Story-E-Mail geht. Uhrzeiten gelten in deutscher Zeit (Europe/Berlin), auch über die Zeitumstellung.",
			StorySummary:         "Versand um %s Uhr an %d Listen.",
			StorySummaryOne:      "Versand um %s Uhr an %d Liste.",
			StorySummaryNone:     "Versand um %s Uhr, aber noch an keine Liste: Wählen Sie die Story-Listen in den Einstellungen.",
			StoryEmails:          "Story-E-Mails",
			Day:                  "Tag",
			Gap:                  "Lücke",
			SentCount:            "%d verschickt",
			Drafts:               "Entwürfe",
			NoDrafts:             "Keine Entwürfe.",
			ScheduleNext:         "Nächsten freien Tag planen",
			SendNow:              "Jetzt senden",
			NewStory:             "Neue Story-E-Mail",
			Subject:              "Betreff",
			Content:              "Inhalt (HTML)",
			CreateDraft:          "Entwurf anlegen",
			SendTime:             "Uhrzeit",
			SendTimeHint:         "Deutsche Zeit (Europe/Berlin).",
			Weekdays:             "Wochentage",
			Lists:                "Story-Listen",
			FromName:             "Absendername",
			ReplyTo:              "Antwortadresse",
			Save:                 "Speichern",
			Back:                 "Zurück",
			Saved:                "Gespeichert.",
			Title:                "Sequenzen",
			Lead:                 "Story-Sequenzen: mehrere E-Mails an aufeinanderfolgenden Tagen, für jeden Kontakt ab seinem Eintritt.",
			EmptyTitle:           "Noch keine Sequenz",
			EmptyBody:            "Legen Sie eine Sequenz an und schreiben Sie die Tage selbst oder mit der KI.",
			Name:                 "Name",
			Status:               "Status",
			Trigger:              "Auslöser",
			DaysCol:              "Tage",
			ParticipantsCol:      "Teilnehmer",
			New:                  "Neue Sequenz",
			Create:               "Sequenz anlegen",
			SequenceSendTimeHint: "Leer lassen: jeder Tag geht zur selben Uhrzeit wie der Eintritt hinaus.",
			Active:               "Aktiv",
			Inactive:             "Inaktiv",
			BuilderLead:          "Die Tage in Versandreihenfolge. Änderungen gelten für alle, die den Tag noch nicht erhalten haben.",
			Activate:             "Aktivieren",
			Deactivate:           "Anhalten",
			AddDay:               "Tag hinzufügen",
			DelayDays:            "Tage nach dem vorigen Tag",
			DelayHint:            "0 am ersten Tag: beim Eintritt.",
			Outline:              "Mit KI gliedern",
			OutlineLead:          "Die KI schreibt die Tage aus Thema, Ziel und Tonfall und hängt sie an. Das kostet KI-Guthaben.",
			Topic:                "Thema",
			Goal:                 "Ziel",
			Tone:                 "Tonfall",
			OutlineDays:          "Anzahl Tage (3–14)",
			OutlineSubmit:        "Tage schreiben",
			Cancel:               "Abbrechen",
			Funnel:               "Verlauf",
			FunnelSummary:        "%d Teilnehmer: %d aktiv, %d abgeschlossen, %d ausgestiegen.",
			Reached:              "Erreicht",
			Sent:                 "Versendet",
			Opened:               "Geöffnet",
			Clicked:              "Geklickt",
			Participants:         "Teilnehmer",
			EnrolEmails:          "Kontakte aufnehmen",
			EnrolHint:            "E-Mail-Adressen vorhandener Kontakte, eine pro Zeile (höchstens 1000).",
			Enrol:                "Aufnehmen",
			Email:                "E-Mail",
			Progress:             "Fortschritt",
			NextSend:             "Nächster Versand",
			DayOf:                "Tag %d von %d",
			DayN:                 "Tag %d",
			Preheader:            "Vorschautext",
			MoveUp:               "Nach oben",
			MoveDown:             "Nach unten",
			DragHint:             "Ziehen, um den Tag zu verschieben",
			Delete:               "Löschen",
			AtTime:               ", um %s Uhr",
			AtEntry:              "Beim Eintritt",
			DaysAfterEntry:       "%d Tage nach dem Eintritt",
			DayAfterEntry:        "%d Tag nach dem Eintritt",
			SameDay:              "Am selben Tag",
			DaysAfter:            "%d Tage später",
			DayAfter:             "%d Tag später",
			TimingSendTime:       "Versand jeweils um %s Uhr (deutsche Zeit).",
			TimingDelay:          "Versand zur Uhrzeit des Eintritts.",
			Enrolled:             "%d aufgenommen, %d übersprungen.",
			OutlineDone:          "%d Tage geschrieben und angehängt.",
			PlanTitle:            "Sequenzen sind nicht in Ihrem Tarif",
			PlanBody:             "Story-Sequenzen gibt es ab dem Tarif Pro.",
			Scheduled:            "Geplant für %s.",
			SentNow:              "Die Story-E-Mail wird verschickt.",
			Edit:                 "Bearbeiten",
			EditStory:            "Story-E-Mail bearbeiten",
			EditStoryLead:        "Betreff, Vorschautext und Inhalt lassen sich ändern, solange die Story-E-Mail ein Entwurf oder geplant ist.",
			StoryLocked:          "Diese Story-E-Mail ist bereits verschickt und kann nicht mehr geändert werden.",
			Preview:              "Vorschau",
			WeekdayNames:         []string{"Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"},
			WeekdayShort:         []string{"Mo", "Di", "Mi", "Do", "Fr", "Sa", "So"},
			Statuses: map[string]string{"draft": "Entwurf", "scheduled": "Geplant", "sending": "Im Versand", "sent": "Versendet",
				"paused": "Pausiert", "failed": "Fehlgeschlagen", "cancelled": "Abgesagt"},
			Triggers:            map[string]string{"manual": "Manuell", "list": "Liste", "tag": "Schlagwort"},
			ParticipantStatuses: map[string]string{"active": "Aktiv", "completed": "Abgeschlossen", "exited": "Ausgestiegen"},
		},
		Webhooks: WebhooksText{
			Title:           "Webhooks",
			Lead:            "Webhooks melden Ereignisse in Rundbrief sofort an Ihre Systeme: als signierte HTTP-POST-Anfrage an eine URL Ihrer Wahl.",
			New:             "Neuer Webhook",
			NewTitle:        "Neuen Webhook anlegen",
			EditTitle:       "Webhook „%s“ bearbeiten",
			Create:          "Webhook anlegen",
			EmptyTitle:      "Noch keine Webhooks",
			EmptyBody:       "Legen Sie einen Webhook an, damit Ihr Shop, CRM oder Automatisierungsdienst von neuen und ausgetragenen Kontakten und von Öffnungen erfährt.",
			Caption:         "Webhooks dieses Kontos",
			URL:             "URL",
			URLHint:         "Eine öffentlich erreichbare https-Adresse, z. B. https://shop.example.com/hooks/rundbrief.",
			Description:     "Beschreibung",
			DescriptionHint: "Optional: wofür der Webhook da ist.",
			Events:          "Ereignisse",
			EventsHint:      "Wählen Sie, welche Ereignisse gesendet werden.",
			AllEvents:       "Alle Ereignisse",
			AllEventsLong:   "Alle Ereignisse, auch künftig hinzukommende",
			EventGroups: map[string]string{
				"contact":  "Kontakte",
				"list":     "Listen",
				"email":    "E-Mails",
				"campaign": "Kampagnen",
				"other":    "Termine, Posteingang, Käufe",
			},
			EventLabels: map[string]string{
				"contact.created":      "Kontakt angelegt",
				"contact.updated":      "Kontakt geändert",
				"contact.deleted":      "Kontakt gelöscht",
				"contact.unsubscribed": "Kontakt ausgetragen",
				"list.joined":          "In Liste aufgenommen",
				"list.left":            "Aus Liste entfernt",
				"email.sent":           "E-Mail versendet",
				"email.opened":         "E-Mail geöffnet",
				"email.clicked":        "Link geklickt",
				"email.bounced":        "E-Mail unzustellbar",
				"newsletter.sent":      "Newsletter fertig versendet",
				"sequence.completed":   "Sequenz abgeschlossen",
				"ab_test.completed":    "A/B-Test entschieden",
				"appointment.booked":   "Termin gebucht",
				"inbox.received":       "Nachricht eingegangen",
				"inbox.replied":        "Nachricht beantwortet",
				"order.completed":      "Kauf abgeschlossen",
			},
			Status:  "Status",
			Active:  "Aktiv",
			Paused:  "Pausiert",
			Created: "Angelegt",
			PauseReasons: map[string]string{
				"manual":   "von Hand pausiert",
				"failures": "nach 20 Fehlversuchen in Folge",
				"gone":     "der Empfänger antwortete 410 Gone",
			},
			Failures:             "%d Fehlversuche in Folge",
			FailuresOne:          "%d Fehlversuch",
			PreviousSecret:       "Der alte Signaturschlüssel signiert noch bis %s",
			Deliveries:           "Zustellungen",
			Pause:                "Pausieren",
			Resume:               "Fortsetzen",
			Rotate:               "Signaturschlüssel erneuern",
			Delete:               "Löschen",
			PausedFlash:          "Der Webhook %s ist pausiert. Neue Ereignisse werden gesammelt und nach dem Fortsetzen zugestellt.",
			ResumedFlash:         "Der Webhook %s ist wieder aktiv.",
			CreatedFlash:         "Der Webhook %s wurde angelegt.",
			UpdatedFlash:         "Der Webhook %s wurde gespeichert.",
			DeletedFlash:         "Der Webhook %s wurde gelöscht.",
			RotateQuestion:       "Signaturschlüssel von %s erneuern?",
			RotateDetail:         "Sie erhalten einen neuen Signaturschlüssel. Der bisherige signiert noch 24 Stunden mit, damit Sie Ihren Empfänger in Ruhe umstellen können.",
			RotateConfirm:        "Signaturschlüssel erneuern",
			DeleteQuestion:       "Webhook %s löschen?",
			DeleteDetail:         "Der Webhook und sein Zustellprotokoll werden gelöscht; ausstehende Zustellungen entfallen.",
			LimitReached:         "Ihr Tarif erlaubt höchstens %d Webhooks. Löschen Sie einen oder wechseln Sie den Tarif.",
			RevealTitle:          "Ihr Signaturschlüssel",
			RevealBody:           "Kopieren Sie den Signaturschlüssel jetzt in Ihren Empfänger. Er wird nur dieses eine Mal angezeigt.",
			RevealLabel:          "Signaturschlüssel für %s",
			RevealUsage:          "Jede Anfrage trägt X-Service-Signature (t=…,v1=…, HMAC-SHA256 wie bei Stripe) und die Standard-Webhooks-Kopfzeilen.",
			DeliveriesTitle:      "Zustellungen",
			BackToList:           "Zurück zu den Webhooks",
			TestTitle:            "Testereignis senden",
			TestLead:             "Sendet sofort ein Beispiel des gewählten Ereignisses (markiert mit \"test\": true), auch an einen pausierten Webhook.",
			TestEvent:            "Ereignis",
			TestSend:             "Testereignis senden",
			TestSentFlash:        "Testereignis gesendet: %s, Antwort %s.",
			TestBadge:            "Test",
			DeliveriesCaption:    "Zustellungen dieses Webhooks, neueste zuerst",
			DeliveriesEmptyTitle: "Noch keine Zustellungen",
			DeliveriesEmptyBody:  "Sobald ein abonniertes Ereignis eintritt oder Sie ein Testereignis senden, erscheint die Zustellung hier.",
			NoMatchBody:          "Für diesen Filter gibt es keine Zustellungen. Ändern oder entfernen Sie den Filter.",
			AnyEvent:             "Alle Ereignisse",
			Time:                 "Zeit",
			Event:                "Ereignis",
			ResponseCode:         "Antwort",
			Duration:             "Dauer",
			Attempts:             "Versuche",
			DeliveryStatuses: map[string]string{
				"pending":   "Ausstehend",
				"retrying":  "Wird wiederholt",
				"succeeded": "Zugestellt",
				"failed":    "Fehlgeschlagen",
			},
			NextAttempt:  "Nächster Versuch %s",
			Resend:       "Erneut senden",
			ResentFlash:  "Erneut gesendet: %s.",
			ShowDetails:  "Inhalt und Antwort anzeigen",
			Payload:      "Gesendeter Inhalt",
			ResponseBody: "Antwort des Empfängers",
			NoResponse:   "Keine Antwort erhalten.",
			AttemptLog:   "Versuche",
			NoStatus:     "keine Antwort",
		},
		Activity: ActivityText{
			Title:       "Aktivitätsprotokoll",
			Lead:        "Wer hat wann was geändert: über das Portal, die API, Formulare oder Rundbrief selbst.",
			Caption:     "Aktivitäten, neueste zuerst",
			EmptyTitle:  "Noch keine Aktivitäten",
			EmptyBody:   "Sobald Kontakte, Listen, Newsletter oder Einstellungen geändert werden, erscheint es hier.",
			NoMatchBody: "Für diese Objektart gibt es keine Einträge. Ändern oder entfernen Sie den Filter.",
			Time:        "Zeit",
			Action:      "Aktion",
			Object:      "Objekt",
			Actor:       "Durch",
			Details:     "Details",
			ObjectType:  "Objektart",
			AnyObject:   "Alle Objekte",
			ObjectTypes: map[string]string{
				"contact":         "Kontakt",
				"list":            "Liste",
				"blocked_address": "Gesperrte Adresse",
				"newsletter":      "Newsletter",
				"email":           "Einzel-E-Mail",
				"form":            "Formular",
				"webhook":         "Webhook",
				"user":            "Benutzer",
				"field":           "Eigenes Feld",
			},
			ActorTypes: map[string]string{
				"key":    "API-Schlüssel",
				"user":   "Benutzer",
				"system": "Rundbrief (automatisch)",
				"public": "Öffentlich (Formular oder Link)",
			},
			KeyActor:    "API-Schlüssel „%s“",
			RemovedUser: "Benutzer #%d (entfernt)",
			Capped:      "Das Protokoll hat mehr Einträge: Hier blättern Sie durch die neuesten %s, ältere liefert die API (GET /v1/logs/activity).",
			Actions: map[string]string{
				"contact.created":           "Kontakt angelegt",
				"contact.updated":           "Kontakt geändert",
				"contact.deleted":           "Kontakt gelöscht",
				"contact.unsubscribed":      "Kontakt ausgetragen",
				"contact.signed_up":         "Über ein Formular angemeldet",
				"contact.confirmation_sent": "Bestätigungs-E-Mail (Double-Opt-in) verschickt",
				"contact.confirmed":         "Anmeldung bestätigt",
				"list.joined":               "In Liste aufgenommen",
				"list.left":                 "Aus Liste entfernt",
				"list.created":              "Liste angelegt",
				"list.updated":              "Liste geändert",
				"list.deleted":              "Liste gelöscht",
				"address.blocked":           "Adresse gesperrt",
				"address.unblocked":         "Adresssperre aufgehoben",
				"email.opened":              "E-Mail geöffnet",
				"email.clicked":             "Link geklickt",
				"email.queued":              "Einzel-E-Mail eingereiht",
				"email.scheduled":           "Einzel-E-Mail geplant",
				"email.cancelled":           "Einzel-E-Mail abgebrochen",
				"email.started":             "Einzel-E-Mail wird versendet",
				"email.finished":            "Einzel-E-Mail versendet",
				"email.failed":              "Einzel-E-Mail fehlgeschlagen",
				"newsletter.created":        "Newsletter angelegt",
				"newsletter.updated":        "Newsletter geändert",
				"newsletter.deleted":        "Newsletter gelöscht",
				"newsletter.duplicated":     "Newsletter dupliziert",
				"newsletter.scheduled":      "Newsletter geplant",
				"newsletter.unscheduled":    "Planung aufgehoben",
				"newsletter.started":        "Versand gestartet",
				"newsletter.finished":       "Versand abgeschlossen",
				"newsletter.failed":         "Versand fehlgeschlagen",
				"newsletter.paused":         "Versand pausiert",
				"newsletter.resumed":        "Versand fortgesetzt",
				"newsletter.retried":        "Fehlgeschlagene erneut versucht",
				"form.created":              "Formular angelegt",
				"form.updated":              "Formular geändert",
				"form.deleted":              "Formular gelöscht",
				"webhook.created":           "Webhook angelegt",
				"webhook.updated":           "Webhook geändert",
				"webhook.deleted":           "Webhook gelöscht",
				"webhook.paused":            "Webhook pausiert",
				"webhook.resumed":           "Webhook fortgesetzt",
				"webhook.secret_rotated":    "Signaturschlüssel des Webhooks erneuert",
				"user.created":              "Benutzer hinzugefügt",
				"user.role_changed":         "Rolle geändert",
				"user.removed":              "Benutzer entfernt",
			},
		},
		Users: UsersText{
			Title:    "Benutzer",
			Lead:     "Wer sich mit eigener E-Mail-Adresse und eigenem Passwort für dieses Konto anmeldet.",
			New:      "Benutzer hinzufügen",
			NewTitle: "Benutzer hinzufügen",
			NewLead:  "Der neue Benutzer meldet sich mit seiner E-Mail-Adresse und dem Anfangspasswort an und kann es danach selbst ändern.",
			Create:   "Benutzer hinzufügen",
			Caption:  "Benutzer dieses Kontos",
			Email:    "E-Mail-Adresse",
			Name:     "Name",
			NameHint: "Optional.",
			Role:     "Rolle",
			RoleOf:   "Rolle von %s",
			Since:    "Dabei seit",
			You:      "Sie",
			Roles: map[string]string{
				"owner":  "Inhaber",
				"admin":  "Administrator",
				"member": "Mitglied",
			},
			RolesHelp: "Inhaber und Administratoren verwalten API-Schlüssel, SMTP-Server, Webhooks, Benutzer sowie Absender und Impressum; " +
				"nur Inhaber vergeben die Rolle „Inhaber“. Mitglieder arbeiten mit Kontakten, Listen und Newslettern.",
			Password:       "Anfangspasswort",
			PasswordHint:   "Mindestens %d Zeichen. Leer lassen: Rundbrief erzeugt ein sicheres Passwort und zeigt es Ihnen einmal an.",
			ChangeRole:     "Rolle ändern",
			Remove:         "Entfernen",
			RemoveQuestion: "%s aus dem Konto entfernen?",
			RemoveDetail:   "Der Zugang endet sofort, auch laufende Sitzungen. Was der Benutzer angelegt hat, bleibt erhalten.",
			CreatedFlash:   "%s wurde hinzugefügt.",
			RoleFlash:      "%s ist jetzt %s.",
			RemovedFlash:   "%s wurde aus dem Konto entfernt.",
			RevealTitle:    "Anfangspasswort",
			RevealBody:     "Geben Sie dieses Passwort sicher weiter. Es wird nur dieses eine Mal angezeigt.",
			RevealLabel:    "Anfangspasswort für %s",
		},
		Outbox: OutboxText{
			ToNewsletters: "Test-E-Mail aus einem Newsletter senden",
			Title:         "Postausgang (Entwicklung)",
			Lead:          "Im Entwicklungsmodus werden E-Mails ohne eigenen SMTP-Server hier gesammelt statt verschickt. Es bleiben die letzten 1.000.",
			Caption:       "Gesammelte E-Mails, neueste zuerst",
			EmptyTitle:    "Der Postausgang ist leer",
			EmptyBody:     "Sobald Rundbrief eine E-Mail verschickt (Test, Newsletter, Double-Opt-in), erscheint sie hier.",
			Time:          "Zeit",
			Subject:       "Betreff",
			From:          "Von",
			To:            "An",
			Size:          "Größe",
			NoSubject:     "(ohne Betreff)",
			MailLead:      "An %s, gesammelt am %s",
			Back:          "Zurück zum Postausgang",
			Headers:       "Kopfzeilen",
			TextPart:      "Textfassung",
			HTMLPart:      "HTML-Fassung",
			HTMLNote:      "Abgeschirmt angezeigt: ohne Skripte und ohne Bilder von außen (die sonst z. B. eine Öffnung zählen würden).",
			ReadError:     "Die E-Mail ließ sich nicht vollständig zerlegen; angezeigt wird, was lesbar war.",
		},
		Unsubscribe: UnsubscribeText{
			Title:        "Abmelden",
			Question:     "Möchten Sie %s wirklich von allen E-Mails dieses Absenders abmelden?",
			Button:       "Ja, abmelden",
			DoneTitle:    "Sie sind abgemeldet",
			Done:         "%s erhält keine E-Mails dieses Absenders mehr.",
			AlreadyTitle: "Bereits abgemeldet",
			Already:      "%s ist bereits abgemeldet.",
			TestTitle:    "Testlink",
			Test:         "Dieser Abmeldelink stammt aus einer Test-E-Mail. Es wurde niemand abgemeldet.",
		},
		Charts: ChartsText{
			NoData:    "Für diesen Zeitraum gibt es noch keine Daten.",
			ShowTable: "Werte als Tabelle",
		},
		Stats: StatsText{
			HoursTitle:    "Die ersten 48 Stunden",
			HoursDesc:     "Erste Öffnungen und Klicks je Stunde nach dem Versandstart",
			Hour:          "Stunde",
			ExportCSV:     "Als CSV herunterladen",
			Title:         "Statistik: %s",
			Lead:          "Betreff: %s",
			Back:          "Zurück zum Newsletter",
			Status:        "Status",
			Started:       "Versand gestartet",
			Finished:      "Versand beendet",
			NotYet:        "noch nicht",
			Recipients:    "Empfänger",
			Sent:          "Versendet",
			Opened:        "Geöffnet",
			Clicked:       "Geklickt",
			Unsubscribed:  "Ausgetragen",
			Bounced:       "Unzustellbar (Bounces)",
			Failed:        "Fehlgeschlagen",
			Skipped:       "Übersprungen (gesperrt oder ausgetragen)",
			Waiting:       "Noch in der Warteschlange",
			OfSent:        "%s der versendeten E-Mails",
			OfOpened:      "%s der Öffnenden",
			OfAttempted:   "%s der Zustellversuche",
			FiguresHead:   "Ergebnis",
			TimelineTitle: "Verlauf pro Tag",
			TimelineDesc:  "Versendete E-Mails, erste Öffnungen und erste Klicks des Newsletters „%s“ pro Tag.",
			Day:           "Tag",
			LinksHead:     "Links",
			LinksCaption:  "Verfolgte Links in der Reihenfolge des Inhalts mit ihren Klicks",
			URL:           "Adresse",
			UniqueClicks:  "Empfänger, die geklickt haben",
			Clicks:        "Klicks",
			ClickRate:     "Klickrate",
			NoLinks:       "Dieser Newsletter enthält keine verfolgten Links.",
			NotSentTitle:  "Noch nicht versendet",
			NotSentBody:   "Sobald der Newsletter versendet wird, erscheinen hier Zustellung, Öffnungen und Klicks.",
			Note:          "Öffnungen und Klicks zählen je Empfänger einmal; automatische Abrufe (Apple Mail Privacy, Link-Scanner) sind herausgefiltert. Raten beziehen sich auf die versendeten E-Mails.",
			StatusLabels:  campaignStatusLabels(),
		},
		Analytics: AnalyticsText{
			ActivityHead:       "Versand und Kontakte",
			ActivityLead:       "Die letzten %d Tage",
			Sent:               "Versendete E-Mails",
			OpenRate:           "Öffnungsrate",
			ClickRate:          "Klickrate",
			NewContacts:        "Neue Kontakte",
			Contacts:           "Kontakte",
			ContactsChartTitle: "Kontakte im Zeitverlauf",
			ContactsChartDesc:  "Anzahl der Kontakte am Ende jedes Tages der letzten %d Tage.",
			Day:                "Tag",
			CampaignsHead:      "Letzte Kampagnen",
			CampaignsLead:      "Newsletter und Einzel-E-Mails mit Öffnungs- und Klickrate",
			CampaignsCaption:   "Die letzten Kampagnen, neueste zuerst",
			RatesChartTitle:    "Öffnungs- und Klickrate der letzten Kampagnen",
			RatesChartDesc:     "Balken je Kampagne: Anteil der versendeten E-Mails, die geöffnet und in denen geklickt wurde.",
			Campaign:           "Kampagne",
			Status:             "Status",
			NoCampaignsTitle:   "Noch keine Kampagnen",
			NoCampaignsBody:    "Sobald Sie einen Newsletter oder eine E-Mail versenden, sehen Sie hier, wie sie ankommt.",
			ShowStats:          "Statistik von „%s“",
			Email:              "E-Mail",
		},
		Integrations: integrationsText(),
		Segments:     segmentsText(),
		Public: PublicText{
			SubscribeTitle: "Newsletter abonnieren",
			SubscribeLead:  "Melden Sie sich für die E-Mails von %s an.",
			FieldLabels: map[string]string{
				"email":      "E-Mail-Adresse",
				"first_name": "Vorname",
				"last_name":  "Nachname",
				"phone":      "Telefon",
				"zip":        "PLZ",
				"city":       "Ort",
			},
			Optional:      "(optional)",
			Honeypot:      "Bitte dieses Feld leer lassen",
			Submit:        "Anmelden",
			Privacy:       "Sie können sich jederzeit mit einem Klick wieder abmelden.",
			PrivacyBefore: "Wie wir Ihre Angaben verarbeiten, steht in unserer",
			PrivacyLink:   "Datenschutzerklärung",
			ThanksTitle:   "Vielen Dank!",
			FieldErrors: map[string]string{
				"email": "Bitte geben Sie eine gültige E-Mail-Adresse an.",
			},
			FieldErrorDefault: "Bitte prüfen Sie diese Angabe (zu lang oder ungültige Zeichen).",
			ErrStamp:          "Ihre Anmeldung konnte nicht geprüft werden. Bitte senden Sie das Formular hier noch einmal ab.",
			ErrProof:          "Die Sicherheitsprüfung ist fehlgeschlagen. Bitte senden Sie das Formular hier noch einmal ab.",
			ErrLimit:          "Gerade gehen sehr viele Anmeldungen ein. Bitte versuchen Sie es später noch einmal.",
			ErrUnavailable:    "Die Anmeldung ist im Moment nicht möglich. Bitte versuchen Sie es später noch einmal.",
			NeedsScript:       "Für die Anmeldung muss JavaScript aktiviert sein (automatische Sicherheitsprüfung).",

			ConfirmAskTitle:       "Anmeldung bestätigen",
			ConfirmAsk:            "Bitte bestätigen Sie mit einem Klick, dass Sie unsere E-Mails an %s erhalten möchten.",
			ConfirmButton:         "Ja, Anmeldung bestätigen",
			ConfirmedTitle:        "Anmeldung bestätigt",
			Confirmed:             "Vielen Dank! Ihre Anmeldung ist bestätigt. Sie erhalten ab jetzt unsere E-Mails an %s.",
			AlreadyConfirmedTitle: "Bereits bestätigt",
			AlreadyConfirmed:      "Ihre Anmeldung war schon bestätigt. Sie müssen nichts weiter tun.",
			ExpiredTitle:          "Link abgelaufen",
			Expired:               "Dieser Bestätigungslink ist abgelaufen (er gilt 7 Tage). Bitte melden Sie sich noch einmal an; Sie erhalten dann einen neuen Link.",
			InvalidTitle:          "Link ungültig",
			Invalid:               "Diesen Bestätigungslink kennen wir nicht. Bitte prüfen Sie, ob Sie ihn vollständig aus der E-Mail übernommen haben, oder melden Sie sich noch einmal an.",
		},
		Templates: TemplatesText{
			NavTemplates:      "Vorlagen",
			NavAttachments:    "Anhänge",
			NavSender:         "Absender & Impressum",
			Title:             "Vorlagen",
			Lead:              "Eigene Vorlagen und Layouts für Ihre E-Mails, dazu fertige Designs zum Kopieren.",
			Mine:              "Ihre Vorlagen",
			None:              "Noch keine Vorlagen. Kopieren Sie ein Design aus der Bibliothek oder legen Sie eine neue an.",
			New:               "Neue Vorlage",
			Library:           "Vorlagenbibliothek",
			LibraryLead:       "Fertige, responsive Designs mit Abmeldelink und Impressum. Eine Kopie landet in Ihren Vorlagen und lässt sich dort anpassen.",
			Copy:              "In meine Vorlagen kopieren",
			CopiedFlash:       "Das Design „%s“ wurde als Vorlage „%s“ kopiert.",
			Name:              "Name",
			Key:               "Schlüssel",
			KeyHint:           "Für die API (template_key): Kleinbuchstaben, Ziffern, _ und -.",
			Kind:              "Art",
			KindLayout:        "Layout",
			KindStart:         "Vorlage",
			Subject:           "Betreff",
			Preheader:         "Vorschautext",
			HTML:              "Inhalt",
			HTMLHint:          "Mit {{inhalt}} wird die Vorlage zum Layout: der Inhalt jeder E-Mail erscheint an dieser Stelle. {{impressum}}, {{firma}} und {{abmelde_link}} werden beim Versand gefüllt.",
			Delete:            "Löschen",
			Save:              "Speichern",
			Create:            "Vorlage anlegen",
			EditTitle:         "Vorlage „%s“",
			NewTitle:          "Neue Vorlage",
			SavedFlash:        "Die Vorlage „%s“ ist gespeichert.",
			DeletedFlash:      "Die Vorlage „%s“ wurde gelöscht.",
			UseInNewsletter:   "Newsletter damit anlegen",
			SampleContent:     "Hier steht später der Inhalt Ihrer E-Mail: Text, Bilder und Links.",
			PreviewOf:         "Vorschau von „%s“",
			Template:          "Vorlage",
			TemplateNone:      "Keine Vorlage",
			TemplateHint:      "Ein Layout umrahmt Ihren Inhalt beim Versand; eine andere Vorlage wird beim Anlegen übernommen.",
			Attachments:       "Anhänge",
			AttachmentsHint:   "Die gewählten Dateien werden jeder E-Mail angehängt.",
			AttachmentsNone:   "Noch keine Dateien hochgeladen.",
			AttTitle:          "Anhänge",
			AttLead:           "Dateien bis 10 MB, die Sie Newslettern und E-Mails anhängen können. Programme und Skripte sind nicht erlaubt.",
			AttUpload:         "Datei hochladen",
			AttFile:           "Datei",
			AttUploading:      "Wird hochgeladen …",
			AttUploadedFlash:  "„%s“ wurde hochgeladen.",
			AttExistsFlash:    "„%s“ ist schon vorhanden; es wurde keine zweite Kopie gespeichert.",
			AttDeletedFlash:   "„%s“ wurde gelöscht.",
			AttTooLarge:       "Die Datei ist größer als 10 MB.",
			AttNoFile:         "Bitte eine Datei auswählen.",
			AttFilename:       "Datei",
			AttSize:           "Größe",
			AttType:           "Typ",
			AttUsedBy:         "Verwendet in",
			AttUsedByCount:    "%d E-Mails",
			AttUsedByOne:      "%d E-Mail",
			AttUploadedAt:     "Hochgeladen",
			AttDownload:       "Herunterladen",
			AttStorage:        "Speicher: %s von %s belegt",
			AttStorageFull:    "Der Speicher Ihres Tarifs (%s) reicht für diese Datei nicht. Löschen Sie nicht mehr benötigte Anhänge oder wechseln Sie den Tarif.",
			SenderTitle:       "Absender & Impressum",
			SenderLead:        "Absender und Impressum erscheinen in jeder Werbe-E-Mail: Das deutsche Recht verlangt ein Impressum, das US-Recht (CAN-SPAM) eine Postanschrift. Die Datenschutzerklärung verlinken Ihre Anmeldeformulare und die Buchungsseite.",
			Company:           "Firma",
			CompanyHint:       "Füllt den Platzhalter {{firma}}.",
			PostalAddress:     "Postanschrift",
			PostalAddressHint: "Straße, Postleitzahl und Ort.",
			Imprint:           "Impressum",
			ImprintHint:       "Füllt {{impressum}}. Leer: Firma und Postanschrift. Enthält eine E-Mail den Platzhalter nicht, wird das Impressum unter der Abmeldezeile angehängt.",
			FromName:          "Absendername (Standard)",
			FromNameHint:      "Für E-Mails ohne eigenen Absendernamen.",
			ReplyTo:           "Antwortadresse (Standard)",
			ReplyToHint:       "Für E-Mails ohne eigene Antwortadresse.",
			PrivacyURL:        "Datenschutzerklärung (Adresse)",
			PrivacyURLHint:    "Zum Beispiel https://example.com/datenschutz. Verlinkt unter jedem Anmeldeformular und auf der Buchungsseite.",
			SenderSavedFlash:  "Absender und Impressum sind gespeichert.",
			SenderReadOnly:    "Nur Inhaber und Administratoren können Absender und Impressum ändern.",
			NoPostalTitle:     "Postanschrift fehlt",
			NoPostal:          "Ihr Konto hat noch keine Postanschrift. Werbe-E-Mails müssen Absender und Anschrift nennen; ohne sie versenden Sie möglicherweise rechtswidrig.",
			NoPostalLink:      "Jetzt eintragen",
			NoPostalAsk:       "Bitten Sie einen Inhaber oder Administrator Ihres Kontos, sie einzutragen.",
		},
	}
}

// languageKey is the context key under which WithLanguage stores the language tag.
type languageKey struct{}

// WithLanguage returns a context in which the views render in the language lang
// (a tag such as "de" or "de-DE"). Languages without strings fall back to German.
func WithLanguage(ctx context.Context, lang string) context.Context {
	return context.WithValue(ctx, languageKey{}, lang)
}

// TextFor returns the interface strings for the language set on ctx with
// WithLanguage; German when none is set or the language has no strings yet.
func TextFor(ctx context.Context) Text {
	lang, _ := ctx.Value(languageKey{}).(string)
	base, _, _ := strings.Cut(strings.ToLower(lang), "-")
	switch base {
	case "de":
		return German()
	default: // the default language until another one has its strings
		return German()
	}
}

// TemplatesText holds the templates and library pages, the attachments
// manager, the sender settings and the notice of a missing postal address.
type TemplatesText struct {
	NavTemplates, NavAttachments, NavSender                                              string
	Title, Lead, Mine, None, New, Library, LibraryLead, Copy, CopiedFlash                string
	Name, Key, KeyHint, Kind, KindLayout, KindStart, Subject, Preheader, HTML            string
	HTMLHint, Delete, Save, Create, EditTitle, NewTitle, SavedFlash                      string
	DeletedFlash, UseInNewsletter, SampleContent, PreviewOf                              string
	Template, TemplateNone, TemplateHint, Attachments, AttachmentsHint                   string
	AttachmentsNone, AttTitle, AttLead, AttUpload, AttFile, AttUploading                 string
	AttUploadedFlash, AttExistsFlash, AttDeletedFlash, AttTooLarge, AttNoFile            string
	AttFilename, AttSize, AttType, AttUsedBy, AttUsedByCount, AttUploadedAt              string
	AttUsedByOne                                                                         string
	AttDownload, AttStorage, AttStorageFull                                              string
	SenderTitle, SenderLead, Company, CompanyHint, PostalAddress, PostalAddressHint      string
	Imprint, ImprintHint, FromName, FromNameHint, ReplyTo, ReplyToHint                   string
	PrivacyURL, PrivacyURLHint                                                           string
	SenderSavedFlash, SenderReadOnly, NoPostalTitle, NoPostal, NoPostalLink, NoPostalAsk string
}

// AppointmentsText holds the appointment book's strings (issue 22).
type AppointmentsText struct {
	// The public booking page.
	DurationLabel string // %d minutes
	NoSlots       string
	PickDay       string
	PickTime      string // %s: the picked day
	YourDetails   string
	Name          string
	Email         string
	Phone         string
	Note          string
	Submit        string
	BookedTitle   string
	BookedBody    string // %s: the address
	ErrTaken      string
	ErrLimit      string
	ErrStart      string
	CancelTitle   string
	CancelAsk     string
	CancelButton  string
	CancelDone    string
	CancelAlready string

	// The portal.
	Title           string
	Week            string
	Month           string
	Previous        string
	Next            string
	Today           string
	BookingLink     string
	BookingLinkHint string
	BookingOff      string
	Copy            string
	OpenBookingPage string
	Settings        string
	NewBooking      string
	NewBookingHint  string
	FreeSlot        string
	Book            string
	Booked          string
	CancelAction    string
	CancelConfirm   string
	Cancelled       string
	StatusLabels    map[string]string
	SourceLabels    map[string]string
	WeekdayNames    map[string]string // mon … sun
	SettingsTitle   string
	Enabled         string
	EnabledHint     string
	FieldTitle      string
	FieldDesc       string
	Duration        string
	Buffer          string
	Notice          string
	DaysAhead       string
	Reminder        string
	ReminderHint    string
	List            string
	NoList          string
	MinFill         string
	Privacy         string
	PrivacyHint     string
	WeeklyHours     string
	WeeklyHint      string
	Blocked         string
	BlockedHint     string
	From            string
	To              string
	Reason          string
	Save            string
	Saved           string
	PlanTitle       string
	PlanBody        string
	NavLabel        string
}

func germanAppointments() AppointmentsText {
	return AppointmentsText{
		DurationLabel: "Dauer: %d Minuten",
		NoSlots:       "Zurzeit sind keine Termine frei. Bitte schauen Sie später noch einmal vorbei.",
		PickDay:       "Tag wählen",
		PickTime:      "Uhrzeit am %s",
		YourDetails:   "Ihre Angaben",
		Name:          "Name",
		Email:         "E-Mail-Adresse",
		Phone:         "Telefon (optional)",
		Note:          "Nachricht (optional)",
		Submit:        "Termin verbindlich buchen",
		BookedTitle:   "Ihr Termin ist gebucht",
		BookedBody:    "Die Bestätigung mit einer Kalendereinladung ist unterwegs an %s. Darin finden Sie auch einen Link, falls Sie absagen müssen.",
		ErrTaken:      "Dieser Termin wurde gerade vergeben. Bitte wählen Sie eine andere Uhrzeit.",
		ErrLimit:      "Zu viele Buchungen in kurzer Zeit. Bitte versuchen Sie es in einer Minute erneut.",
		ErrStart:      "Bitte wählen Sie eine Uhrzeit.",
		CancelTitle:   "Termin absagen",
		CancelAsk:     "Möchten Sie diesen Termin wirklich absagen?",
		CancelButton:  "Termin absagen",
		CancelDone:    "Ihr Termin ist abgesagt. Sie erhalten eine Bestätigung per E-Mail.",
		CancelAlready: "Dieser Termin war bereits abgesagt.",

		Title:           "Termine",
		Week:            "Woche",
		Month:           "Monat",
		Previous:        "Zurück",
		Next:            "Weiter",
		Today:           "Heute",
		BookingLink:     "Ihr Buchungslink",
		BookingLinkHint: "Teilen Sie diesen Link, damit Kundinnen und Kunden selbst einen Termin buchen.",
		BookingOff:      "Die Online-Buchung ist ausgeschaltet. Schalten Sie sie in den Einstellungen ein, damit der Link Buchungen annimmt.",
		Copy:            "Kopieren",
		OpenBookingPage: "Buchungsseite öffnen",
		Settings:        "Einstellungen",
		NewBooking:      "Termin eintragen",
		NewBookingHint:  "Tragen Sie einen Termin für eine Person ein, die telefonisch oder persönlich gebucht hat. Sie erhält die Bestätigung per E-Mail.",
		FreeSlot:        "Freier Termin",
		Book:            "Eintragen",
		Booked:          "Der Termin ist eingetragen.",
		CancelAction:    "Absagen",
		CancelConfirm:   "Diesen Termin absagen? Die Person erhält eine Absage per E-Mail.",
		Cancelled:       "Der Termin ist abgesagt.",
		StatusLabels:    map[string]string{"booked": "Gebucht", "cancelled": "Abgesagt"},
		SourceLabels:    map[string]string{"api": "API", "portal": "Portal", "booking_page": "Buchungsseite"},
		WeekdayNames: map[string]string{"mon": "Montag", "tue": "Dienstag", "wed": "Mittwoch", "thu": "Donnerstag",
			"fri": "Freitag", "sat": "Samstag", "sun": "Sonntag"},
		SettingsTitle: "Terminbuchung einrichten",
		Enabled:       "Online-Buchung aktiv",
		EnabledHint:   "Nur dann nimmt Ihre Buchungsseite Termine an.",
		FieldTitle:    "Titel des Termins",
		FieldDesc:     "Beschreibung",
		Duration:      "Dauer in Minuten",
		Buffer:        "Pause zwischen Terminen (Minuten)",
		Notice:        "Mindestvorlauf (Stunden)",
		DaysAhead:     "Buchbar bis (Tage im Voraus)",
		Reminder:      "Erinnerung (Stunden vorher)",
		ReminderHint:  "0 schaltet die Erinnerung aus.",
		List:          "Buchende in diese Liste aufnehmen",
		NoList:        "Keine Liste",
		MinFill:       "Mindestzeit zum Ausfüllen (Sekunden, Schutz vor Bots)",
		Privacy:       "Text der Einwilligung",
		PrivacyHint:   "Leer lassen für den Standardtext.",
		WeeklyHours:   "Buchbare Zeiten",
		WeeklyHint:    "Je Wochentag Zeiträume wie 09:00-12:00, mehrere durch Komma getrennt, z. B. 09:00-12:00, 13:00-17:00. Leer: kein Termin an diesem Tag.",
		Blocked:       "Gesperrte Tage",
		BlockedHint:   "Urlaub, Feiertage: an diesen Tagen gibt es keine Termine.",
		From:          "Von",
		To:            "Bis",
		Reason:        "Anlass",
		Save:          "Speichern",
		Saved:         "Die Einstellungen sind gespeichert.",
		PlanTitle:     "Terminbuchung ist nicht im Tarif enthalten",
		PlanBody:      "Mit der Terminbuchung buchen Kundinnen und Kunden selbst Termine über Ihren Buchungslink. Sie ist im Tarif Business enthalten.",
		NavLabel:      "Termine",
	}
}

// IntegrationsText holds the payment-provider integration pages: list, form
// with each provider's setup steps, test event and event log (issue 23).
type IntegrationsText struct {
	Nav, Title, Lead, New, NewTitle, EditTitle, Caption    string
	EmptyTitle, EmptyBody                                  string
	PlanTitle, PlanBody                                    string
	Name, NameHint, Provider, ProviderHint                 string
	Secret, SecretHint, SecretKeep, SecretSet, SecretUnset string
	Lists, ListsHint, NoLists, Tags, TagsHint              string
	Active, ActiveHint, Inactive, Status                   string
	InboundURL, InboundHint, InboundAfterSave              string
	Create, Delete, DeleteQuestion, DeleteDetail           string
	CreatedFlash, UpdatedFlash, DeletedFlash               string
	Events, EventsTitle, EventsEmpty, BackToList           string
	Received, EventType, EventID, OrderID, Email           string
	Payload, ShowPayload                                   string
	TestTitle, TestLead, TestSend, TestDone, TestPayPal    string
	SetupTitle                                             string
	ProviderNames                                          map[string]string
	Setup                                                  map[string][]string
	SecretLabels                                           map[string]string
	StatusLabels                                           map[string]string
}

func integrationsText() IntegrationsText {
	return IntegrationsText{
		Nav:              "Integrationen",
		Title:            "Integrationen",
		Lead:             "Zahlungsanbieter melden Käufe an Rundbrief: Käufer werden zu Kontakten, kommen in Ihre Listen und erhalten Schlagwörter – automatisch und ohne Doppelungen.",
		New:              "Neue Integration",
		NewTitle:         "Neue Integration anlegen",
		EditTitle:        "Integration „%s“ bearbeiten",
		Caption:          "Integrationen des Kontos",
		EmptyTitle:       "Noch keine Integration",
		EmptyBody:        "Verbinden Sie Stripe, Digistore24, CopeCart, PayPal oder Ihr eigenes System: Jeder Kauf legt den Käufer als Kontakt an.",
		PlanTitle:        "Integrationen sind nicht in Ihrem Tarif",
		PlanBody:         "Integrationen mit Zahlungsanbietern gibt es ab dem Tarif Business. Unter „Tarif“ sehen Sie, wie Sie wechseln.",
		Name:             "Name",
		NameHint:         "Zur Unterscheidung, z. B. „Stripe Online-Kurse“.",
		Provider:         "Anbieter",
		ProviderHint:     "Lässt sich später nicht ändern: Er ist Teil der Eingangs-URL.",
		Secret:           "Schlüssel",
		SecretHint:       "Wird verschlüsselt gespeichert und nie wieder angezeigt.",
		SecretKeep:       "Leer lassen, um den gespeicherten Schlüssel zu behalten.",
		SecretSet:        "Schlüssel hinterlegt",
		SecretUnset:      "Kein Schlüssel: Aufrufe werden abgewiesen",
		Lists:            "Listen",
		ListsHint:        "Käufer werden in diese Listen eingetragen. Ausgetragene und gesperrte Adressen bleiben ausgetragen.",
		NoLists:          "Noch keine Listen angelegt.",
		Tags:             "Schlagwörter",
		TagsHint:         "Durch Kommas getrennt. Zusätzlich erhält jeder Käufer das Schlagwort product:<Produktname>, nach einer Erstattung refunded.",
		Active:           "Aktiv",
		ActiveHint:       "Inaktive Integrationen prüfen Aufrufe weiter, übernehmen aber nichts (Status „ignoriert“).",
		Inactive:         "Inaktiv",
		Status:           "Status",
		InboundURL:       "Eingangs-URL",
		InboundHint:      "Diese Adresse tragen Sie beim Anbieter als Webhook- bzw. IPN-URL ein.",
		InboundAfterSave: "Die Eingangs-URL erscheint nach dem Speichern; erst dann können Sie sie beim Anbieter eintragen.",
		Create:           "Integration anlegen",
		Delete:           "Löschen",
		DeleteQuestion:   "Integration „%s“ löschen?",
		DeleteDetail:     "Die Eingangs-URL antwortet danach mit 404, Bestellungen und Protokoll werden gelöscht. Angelegte Kontakte bleiben erhalten.",
		CreatedFlash:     "Die Integration „%s“ ist angelegt. Tragen Sie jetzt die Eingangs-URL beim Anbieter ein.",
		UpdatedFlash:     "Die Integration „%s“ wurde gespeichert.",
		DeletedFlash:     "Die Integration „%s“ wurde gelöscht.",
		Events:           "Ereignisse",
		EventsTitle:      "Ereignisse von „%s“",
		EventsEmpty:      "Noch keine Aufrufe. Senden Sie ein Testereignis oder lösen Sie beim Anbieter einen Test aus.",
		BackToList:       "Zurück zu den Integrationen",
		Received:         "Empfangen",
		EventType:        "Ereignis",
		EventID:          "Ereignis-ID",
		OrderID:          "Bestellung",
		Email:            "E-Mail",
		Payload:          "Rohdaten",
		ShowPayload:      "Rohdaten anzeigen",
		TestTitle:        "Testereignis senden",
		TestLead:         "Sendet einen korrekt signierten Beispielkauf an die Eingangs-URL dieser Integration. Er durchläuft dieselbe Prüfung wie ein echter Aufruf und legt den Testkontakt testkauf@example.com mit einer neuen Bestellung an.",
		TestSend:         "Testereignis senden",
		TestDone:         "Testereignis gesendet: Antwort %d, Status „%s“.",
		TestPayPal:       "PayPal signiert seine Aufrufe mit dem eigenen Zertifikat. Testereignisse senden Sie im PayPal-Developer-Dashboard unter „Testing Tools“ → „Webhooks Simulator“ an die Eingangs-URL.",
		SetupTitle:       "So richten Sie es beim Anbieter ein",
		ProviderNames: map[string]string{
			"stripe": "Stripe", "digistore24": "Digistore24", "copecart": "CopeCart", "paypal": "PayPal", "generic": "Eigenes System (generisch)",
		},
		SecretLabels: map[string]string{
			"stripe":      "Signaturgeheimnis (whsec_…)",
			"digistore24": "IPN-Passphrase",
			"copecart":    "IPN-Secret",
			"paypal":      "Webhook-ID",
			"generic":     "HMAC-Schlüssel",
		},
		StatusLabels: map[string]string{
			"processed": "verarbeitet", "duplicate": "Wiederholung", "ignored": "ignoriert", "rejected": "abgewiesen",
		},
		Setup: map[string][]string{
			"stripe": {
				"Öffnen Sie im Stripe-Dashboard „Entwickler“ → „Webhooks“ und klicken Sie auf „Endpunkt hinzufügen“.",
				"Fügen Sie unter „Endpunkt-URL“ die Eingangs-URL von unten ein.",
				"Wählen Sie unter „Zu überwachende Ereignisse“: checkout.session.completed, checkout.session.async_payment_succeeded und charge.refunded. Speichern.",
				"Klicken Sie beim neuen Endpunkt unter „Signaturgeheimnis“ auf „Anzeigen“, kopieren Sie den Wert (beginnt mit whsec_) und fügen Sie ihn hier ins Feld „Schlüssel“ ein.",
				"Damit das Schlagwort product:<Produkt> entsteht: Setzen Sie im Payment Link bzw. in der Checkout-Session unter „Metadaten“ den Schlüssel product mit dem Produktnamen.",
			},
			"digistore24": {
				"Öffnen Sie in Digistore24 „Einstellungen“ → „Integrationen (IPN)“ → „Neue Verbindung hinzufügen“ und wählen Sie den Typ „Generic“.",
				"Fügen Sie als „IPN-URL“ die Eingangs-URL von unten ein.",
				"Tragen Sie bei „IPN-Passphrase“ eine lange, zufällige Passphrase ein und fügen Sie dieselbe hier ins Feld „Schlüssel“ ein.",
				"Aktivieren Sie die Ereignisse „Zahlung“ (on_payment), „Erstattung“ (on_refund) und „Rückbuchung“ (on_chargeback) und wählen Sie die Produkte. Speichern.",
				"Mit „Verbindung testen“ prüfen Sie die Einrichtung: Rundbrief antwortet OK.",
			},
			"copecart": {
				"Öffnen Sie in CopeCart „Einstellungen“ → „IPN / Webhooks“ (oder beim Produkt „Erweitert“ → „IPN-URL“) und legen Sie eine neue IPN-URL an.",
				"Fügen Sie die Eingangs-URL von unten ein.",
				"Kopieren Sie das angezeigte IPN-Secret und fügen Sie es hier ins Feld „Schlüssel“ ein. CopeCart signiert jeden Aufruf im Header X-Copecart-Signature.",
				"Übernommen werden Käufe (payment.made) sowie Erstattungen und Rückbuchungen (payment.refunded, payment.charged_back).",
			},
			"paypal": {
				"Öffnen Sie im PayPal-Developer-Dashboard (developer.paypal.com) „Apps & Credentials“ und dort die App Ihres Shops (Live oder Sandbox).",
				"Klicken Sie unter „Webhooks“ auf „Add Webhook“ und fügen Sie bei „Webhook URL“ die Eingangs-URL von unten ein.",
				"Wählen Sie die Ereignisse „Checkout order completed“ (CHECKOUT.ORDER.COMPLETED) und „Payment capture refunded“ (PAYMENT.CAPTURE.REFUNDED). Speichern.",
				"Kopieren Sie die angezeigte „Webhook ID“ und fügen Sie sie hier ins Feld „Schlüssel“ ein. PayPal signiert mit seinem Zertifikat; Rundbrief prüft die Signatur zusammen mit dieser Webhook-ID.",
				"Testereignisse senden Sie mit dem „Webhooks Simulator“ unter „Testing Tools“ im Developer-Dashboard.",
			},
			"generic": {
				"Erzeugen Sie einen langen, zufälligen Schlüssel, tragen Sie ihn hier ins Feld „Schlüssel“ ein und hinterlegen Sie ihn in Ihrem System.",
				"Ihr System sendet je Kauf einen POST an die Eingangs-URL mit JSON: {\"event\":\"order.completed\",\"order_id\":\"A-1001\",\"email\":\"kunde@example.com\",\"first_name\":\"Erika\",\"last_name\":\"Mustermann\",\"product\":\"Online-Kurs\",\"amount\":49.0,\"currency\":\"EUR\"}. Eine Erstattung sendet \"event\":\"order.refunded\" mit derselben order_id.",
				"Signieren Sie den unveränderten Körper: Header X-Signature: sha256=<HMAC-SHA256 des Körpers mit dem Schlüssel, als Hex>.",
				"Antwort 200: angenommen (Wiederholungen sind unschädlich); 401: Signatur falsch; 404: unbekannte URL.",
			},
		},
	}
}

// InboxText holds the inbox pages (views/inbox.templ).
type InboxText struct {
	Title, Lead, SyncNow, Rules, Metrics, Settings, Connect             string
	NotConnectedTitle, NotConnectedBody, SyncError                      string
	Folders, LabelsHead, ListLabel, ReadingLabel, Search, Empty         string
	UnreadMark, Replied, PickMessage, Back, MarkUnread, Archive         string
	Unarchive, Contact, YourReply, DraftHead, DraftText, DraftHint      string
	DraftApprove, DraftDiscard, ReplyHead, ReplyTo, Send, AIDraft       string
	StatusLabels, SourceLabels, EncryptionLabels, ActionLabels          map[string]string
	SettingsTitle, SettingsLead, LastSync, Host, HostHint, PortHint     string
	Folder, FolderHint, ReplyRoute, ReplyRouteHint, DefaultRoute        string
	FromHint, Signature, AutoDraft, SaveAndTest, TestStored, TestOK     string
	RulesTitle, RulesLead, RulesEmpty, RuleName, RuleMatch, RuleAction  string
	FromContains, SubjectContains, BodyContains, MatchAll, NewRule      string
	RuleValue, RuleValueHint, RuleText, RuleTextHint, AddRule, Delete   string
	MetricsTitle, MetricsLead, Received, Unread, RepliedCount           string
	AvgResponse, AIDrafts, AIDraftsApproved, MinutesFmt, ChartTitle     string
	ChartDesc, ChartDay, ChartReceived, ChartReplied                    string
	PlanTitle, PlanBody, SavedFlash, SyncFlash, RepliedFlash            string
	DraftFlash, ApprovedFlash, DiscardedFlash, RuleFlash, RuleGoneFlash string
	LabelsField, SaveLabels, LabelsSaved                                string
}

func germanInbox() InboxText {
	return InboxText{
		Title: "Posteingang", Lead: "Ihr verbundenes Postfach: lesen, sortieren, beantworten – auf Wunsch mit KI-Entwurf.",
		SyncNow: "Jetzt abrufen", Rules: "Regeln", Metrics: "Kennzahlen", Settings: "Verbindung", Connect: "Postfach verbinden",
		NotConnectedTitle: "Noch kein Postfach verbunden",
		NotConnectedBody:  "Verbinden Sie Ihr IMAP-Postfach, dann erscheinen Ihre E-Mails hier und werden alle fünf Minuten abgeglichen.",
		SyncError:         "Der letzte Abgleich ist fehlgeschlagen:",
		Folders:           "Ordner und Labels", LabelsHead: "Labels", ListLabel: "Nachrichten", ReadingLabel: "Nachricht",
		Search: "Betreff, Absender oder Text suchen", Empty: "Keine Nachrichten.",
		UnreadMark: "Ungelesen:", Replied: "beantwortet", PickMessage: "Wählen Sie links eine Nachricht aus.", Back: "← Zurück zur Liste",
		MarkUnread: "Als ungelesen markieren", Archive: "Archivieren", Unarchive: "Zurück in den Posteingang", Contact: "Kontakt ansehen",
		YourReply: "Ihre Antwort", DraftHead: "KI-Entwurf", DraftText: "Entwurf (vor dem Senden bearbeitbar)",
		DraftHint: "Die Signatur wird beim Senden angehängt.", DraftApprove: "Freigeben und senden", DraftDiscard: "Verwerfen",
		ReplyHead: "Antworten", ReplyTo: "Antwort an %s", Send: "Senden", AIDraft: "KI-Entwurf erstellen",
		StatusLabels:     map[string]string{"open": "Posteingang", "unread": "Ungelesen", "archived": "Archiv", "all": "Alle"},
		SourceLabels:     map[string]string{"user": "von Hand", "ai": "KI-Entwurf", "rule": "automatisch (Regel)"},
		EncryptionLabels: map[string]string{"tls": "TLS (Port 993)", "starttls": "STARTTLS (Port 143)", "none": "Keine (nur im internen Netz)"},
		ActionLabels: map[string]string{"label": "Label vergeben", "archive": "Archivieren", "mark_read": "Als gelesen markieren",
			"reply": "Automatisch antworten", "ai_draft": "KI-Entwurf erstellen"},
		SettingsTitle: "Postfach-Verbindung",
		SettingsLead:  "Die Verbindung wird vor dem Speichern getestet. Das Passwort wird verschlüsselt gespeichert und nie wieder angezeigt.",
		LastSync:      "Zuletzt abgeglichen:", Host: "IMAP-Server", HostHint: "z. B. imap.example.com", PortHint: "Leer: 993 bei TLS, sonst 143.",
		Folder: "Ordner", FolderHint: "Leer: INBOX.", ReplyRoute: "Antworten senden über",
		ReplyRouteHint: "Der SMTP-Server für Antworten; sonst der Standardweg des Kontos.", DefaultRoute: "Standardweg des Kontos",
		FromHint: "Absender der Antworten; leer: der des SMTP-Wegs.", Signature: "Signatur",
		AutoDraft:   "Für jede neue Nachricht, die keine Regel beantwortet, einen KI-Entwurf erstellen (kostet KI-Guthaben)",
		SaveAndTest: "Testen und speichern", TestStored: "Gespeicherte Verbindung testen", TestOK: "Verbindung erfolgreich: Anmeldung und Ordner in Ordnung.",
		RulesTitle: "Regeln", RulesLead: "Regeln gelten der Reihe nach für jede neue Nachricht; alle ausgefüllten Bedingungen müssen passen. Automatische Antworten gehen höchstens einmal am Tag an denselben Absender und nie an noreply-Adressen, Mailinglisten oder automatische E-Mails.",
		RulesEmpty: "Noch keine Regeln.", RuleName: "Name", RuleMatch: "Bedingungen", RuleAction: "Aktion",
		FromContains: "Absender enthält", SubjectContains: "Betreff enthält", BodyContains: "Text enthält", MatchAll: "jede Nachricht",
		NewRule: "Neue Regel", RuleValue: "Label", RuleValueHint: "Nur bei „Label vergeben“.", RuleText: "Antworttext",
		RuleTextHint: "Nur bei „Automatisch antworten“; die Signatur wird angehängt.", AddRule: "Regel hinzufügen", Delete: "Löschen",
		MetricsTitle: "Posteingang: Kennzahlen", MetricsLead: "Nachrichten vom %s bis %s.", Received: "Eingegangen", Unread: "Ungelesen",
		RepliedCount: "Beantwortet", AvgResponse: "Ø erste Antwort", AIDrafts: "KI-Entwürfe", AIDraftsApproved: "KI-Entwürfe gesendet",
		MinutesFmt: "%s Min.", ChartTitle: "Eingang und Antworten pro Tag",
		ChartDesc: "Eingegangene Nachrichten und gesendete Antworten je Tag im gewählten Zeitraum.", ChartDay: "Tag",
		ChartReceived: "Eingegangen", ChartReplied: "Antworten",
		PlanTitle: "Posteingang nicht im Tarif", PlanBody: "Der Posteingang gehört zu den Tarifen Pro und Business.",
		SavedFlash: "Verbindung getestet und gespeichert. Der Abgleich beginnt gleich.", SyncFlash: "Der Abgleich wurde angestoßen.",
		RepliedFlash: "Antwort gesendet.", DraftFlash: "KI-Entwurf erstellt.", ApprovedFlash: "Entwurf gesendet.", DiscardedFlash: "Entwurf verworfen.",
		RuleFlash: "Regel hinzugefügt.", RuleGoneFlash: "Regel gelöscht.",
		LabelsField: "Labels (durch Kommas getrennt)", SaveLabels: "Labels speichern", LabelsSaved: "Labels gespeichert.",
	}
}

// FieldsText holds the custom field definitions (settings page), the
// formatting of their values and the placeholder picker's custom fields.
type FieldsText struct {
	Nav, Title, Lead, NewHead, Key, KeyHint, Label, LabelHint, Type, TypeHint string
	Create, Save, Delete, Caption, EmptyTitle, EmptyBody, Placeholder         string
	CreatedFlash, SavedFlash, DeletedFlash                                    string // %s: the label
	Types                                                                     map[string]string
	Yes, No                                                                   string
	PickerCustom, PickerManage                                                string
	NotOfType                                                                 string // %s: the type's name; title of a value that does not fit it
	DateLayout                                                                string // time layout of a date field, e.g. "02.01.2006"
}

func germanFields() FieldsText {
	return FieldsText{
		Nav:          "Eigene Felder",
		Title:        "Eigene Felder",
		Lead:         "Die eigenen Felder Ihrer Kontakte mit Bezeichnung und Typ. Jedes Feld ist in E-Mails ein Platzhalter; neue Felder aus Importen, Formularen und der API erscheinen hier von selbst.",
		NewHead:      "Feld anlegen",
		Key:          "Schlüssel",
		KeyHint:      "Wie das Feld in Importen, der API und im Platzhalter heißt: a–z, 0–9, _ und -, z. B. kundennummer.",
		Label:        "Bezeichnung",
		LabelHint:    "So heißt das Feld im Portal, z. B. „Kundennummer“.",
		Type:         "Typ",
		TypeHint:     "Bestimmt die Anzeige: Zahlen als 1.234,5, Datumsangaben (2026-12-24) als 24.12.2026.",
		Create:       "Feld anlegen",
		Save:         "Speichern",
		Delete:       "Löschen",
		Caption:      "Eigene Felder der Kontakte",
		EmptyTitle:   "Noch keine eigenen Felder",
		EmptyBody:    "Legen Sie ein Feld an, oder importieren Sie Kontakte mit weiteren Spalten: Deren Felder erscheinen dann hier.",
		Placeholder:  "Platzhalter",
		CreatedFlash: "Das Feld „%s“ ist angelegt.",
		SavedFlash:   "Das Feld „%s“ ist gespeichert.",
		DeletedFlash: "Das Feld „%s“ ist gelöscht. Die Werte der Kontakte bleiben erhalten.",
		Types: map[string]string{
			"text":    "Text",
			"number":  "Zahl",
			"date":    "Datum",
			"boolean": "Ja/Nein",
		},
		Yes:          "Ja",
		No:           "Nein",
		PickerCustom: "Eigene Felder",
		PickerManage: "Felder verwalten",
		NotOfType:    "Passt nicht zum Typ „%s“; so gespeichert.",
		DateLayout:   "02.01.2006",
	}
}

// ChangesText holds the activity log's readable sentences: what changed, with
// field names in German and old → new where the entry recorded both.
type ChangesText struct {
	Changed     string // %s: the changed fields' names
	And         string
	FromTo      string // %s: field, %s: old, %s: new
	Empty       string
	Named       string // %s: object type, %s: its name
	Numbered    string // %s: object type, %d: its id
	Gone        string // title of an object that no longer exists
	Names       map[string]string
	Actions     map[string]string // actions the activity log's own map lacks
	FieldOfKey  string            // %s: a field's key
	Roles       map[string]string
	ListMembers string            // %d: members of a deleted list
	List        string            // %s: the list a contact joined or left
	ObjectTypes map[string]string // object types the activity log's own map lacks
}

func germanChanges() ChangesText {
	return ChangesText{
		Changed:    "Geändert: %s.",
		And:        " und ",
		FromTo:     "%s: %s → %s",
		Empty:      "leer",
		Named:      "%s „%s“",
		Numbered:   "%s #%d",
		Gone:       "Existiert nicht mehr",
		FieldOfKey: "Feld %s",
		Names: map[string]string{
			"email": "E-Mail-Adresse", "first_name": "Vorname", "last_name": "Nachname", "address": "Adresse",
			"zip": "PLZ", "city": "Ort", "phone": "Telefon", "note": "Notiz", "status": "Status", "source": "Quelle",
			"tags": "Schlagwörter", "lists": "Listen", "list_ids": "Listen", "custom_fields": "eigene Felder",
			"name": "Name", "color": "Farbe", "description": "Beschreibung", "double_opt_in": "Double-Opt-in",
			"subject": "Betreff", "preheader": "Vorschautext", "html": "HTML-Inhalt", "markdown": "Inhalt",
			"text": "Textfassung", "from_name": "Absendername", "reply_to": "Antwortadresse",
			"smtp_server_id": "SMTP-Server", "track_opens": "Öffnungsmessung", "track_clicks": "Klickmessung",
			"template_key": "Vorlage", "attachment_ids": "Anhänge", "url": "URL", "events": "Ereignisse",
			"active": "Aktiv", "secret": "Signaturschlüssel", "fields": "Formularfelder",
			"success_message": "Erfolgsmeldung", "success_redirect": "Weiterleitung nach der Anmeldung",
			"min_fill_seconds": "Mindest-Ausfüllzeit", "proof_of_work": "Bot-Schutz", "trigger": "Auslöser",
			"trigger_list_id": "Auslöser-Liste", "trigger_tag": "Auslöser-Schlagwort", "send_time": "Versandzeit",
			"sender": "Absender", "key": "Schlüssel", "label": "Bezeichnung", "type": "Typ", "role": "Rolle",
		},
		Actions: map[string]string{
			"field.created":                 "Eigenes Feld angelegt",
			"field.updated":                 "Eigenes Feld geändert",
			"field.deleted":                 "Eigenes Feld gelöscht",
			"template.created":              "Vorlage angelegt",
			"template.updated":              "Vorlage geändert",
			"template.deleted":              "Vorlage gelöscht",
			"template.copied":               "Vorlage aus der Bibliothek kopiert",
			"attachment.uploaded":           "Anhang hochgeladen",
			"attachment.deleted":            "Anhang gelöscht",
			"account.settings_updated":      "Absender und Impressum geändert",
			"sequence.created":              "Sequenz angelegt",
			"sequence.updated":              "Sequenz geändert",
			"sequence.deleted":              "Sequenz gelöscht",
			"sequence.activated":            "Sequenz aktiviert",
			"sequence.deactivated":          "Sequenz deaktiviert",
			"sequence.participant_removed":  "Teilnehmer aus der Sequenz entfernt",
			"story_email.created":           "Story-E-Mail angelegt",
			"story_email.updated":           "Story-E-Mail geändert",
			"story_email.deleted":           "Story-E-Mail gelöscht",
			"story_email.started":           "Story-E-Mail wird versendet",
			"story_email.scheduled":         "Story-E-Mail geplant",
			"story_settings.updated":        "Einstellungen der Story-E-Mails geändert",
			"integration.created":           "Integration angelegt",
			"integration.updated":           "Integration geändert",
			"integration.deleted":           "Integration gelöscht",
			"appointments.settings_updated": "Termineinstellungen geändert",
		},
		Roles:       map[string]string{"owner": "Inhaber", "admin": "Administrator", "member": "Mitglied"},
		ListMembers: "%d Mitglieder",
		List:        "Liste „%s“.",
		ObjectTypes: map[string]string{
			"template": "Vorlage", "attachment": "Anhang", "sequence": "Sequenz", "story_email": "Story-E-Mail",
			"ab_test": "A/B-Test", "integration": "Integration", "appointment": "Termin", "account": "Konto",
		},
	}
}

// SMTPErrorsText holds SMTP replies and connection errors in German; the
// server's own reply stays available under Detail.
type SMTPErrorsText struct {
	Auth, Relay, Mailbox, MailboxFull, Sender, Policy, TooBig, Temporary, Rejected string
	Refused, DNS, Timeout, Unreachable, Closed, TLS, Certificate, Failed           string
	Detail                                                                         string
}

func germanSMTPErrors() SMTPErrorsText {
	return SMTPErrorsText{
		Auth:        "Die Anmeldung am SMTP-Server ist fehlgeschlagen: Benutzername oder Passwort ist falsch, oder der Zugang ist gesperrt.",
		Relay:       "Der SMTP-Server nimmt keine E-Mail an fremde Adressen an (Relaying verweigert): Meist fehlt die Anmeldung, oder die Absenderadresse gehört nicht zu diesem Zugang.",
		Mailbox:     "Die Empfängeradresse gibt es nicht: Der Server kennt dieses Postfach nicht.",
		MailboxFull: "Das Postfach des Empfängers ist voll.",
		Sender:      "Der SMTP-Server lehnt die Absenderadresse ab: Sie muss zu diesem Zugang gehören.",
		Policy:      "Der SMTP-Server hat die E-Mail abgelehnt (Spam-Verdacht, Sperrliste oder Richtlinie des Servers).",
		TooBig:      "Die E-Mail ist für den SMTP-Server zu groß: Anhänge verkleinern.",
		Temporary:   "Der SMTP-Server ist vorübergehend nicht bereit; später erneut versuchen.",
		Rejected:    "Der SMTP-Server hat die E-Mail endgültig abgelehnt.",
		Refused:     "Verbindung abgelehnt: Auf diesem Port nimmt kein SMTP-Server Verbindungen an. Host und Port prüfen.",
		DNS:         "Der Hostname des SMTP-Servers ist unbekannt (DNS): Schreibweise prüfen.",
		Timeout:     "Zeitüberschreitung: Der SMTP-Server antwortet nicht (Firewall, falscher Port oder falsche Verschlüsselung?).",
		Unreachable: "Der SMTP-Server ist nicht erreichbar (kein Netzweg zu dieser Adresse).",
		Closed:      "Der SMTP-Server hat die Verbindung unerwartet beendet. Ist die Verschlüsselung richtig gewählt (Port 465 = tls, 587 = starttls)?",
		TLS:         "Die verschlüsselte Verbindung (TLS) zum SMTP-Server ist fehlgeschlagen: Port und Verschlüsselung prüfen.",
		Certificate: "Das Zertifikat des SMTP-Servers ist nicht gültig (abgelaufen, selbst signiert oder für einen anderen Namen).",
		Failed:      "Der Versand ist fehlgeschlagen.",
		Detail:      "Antwort des Servers",
	}
}

// SegmentsText holds saved filters (segments), bulk actions on contacts and
// the contact table's sortable columns.
type SegmentsText struct {
	Title, Lead, Empty, EmptyBody, Name, Conditions, Contacts, ShowContacts, Delete, Caption  string
	SaveTitle, SaveName, SaveButton, SavedFlash, DeletedFlash, AllContacts, ActiveSegment     string
	CondList, CondStatus, CondTag, CondQuery, CondField, CondCreated, CondUpdated             string
	FieldOps                                                                                  map[string]string
	Audience, AudienceNone, AudienceHint                                                      string
	SortBy, Updated, UnknownSegment                                                           string
	BulkTitle, BulkSelect, BulkSelectAll, BulkAll, BulkAction, BulkTag, BulkList, BulkStart   string
	BulkActions                                                                               map[string]string
	BulkQueued, BulkRunning, BulkProgress, BulkDoneTitle, BulkDone, BulkFailedTitle, BulkBack string
	BulkDoneOne                                                                               string // BulkDone of one contact
}

func segmentsText() SegmentsText {
	return SegmentsText{
		Title: "Segmente", Lead: "Gespeicherte Filter: als Ansicht der Kontakte, für Massenaktionen und als Zielgruppe eines Newsletters.",
		Empty: "Noch keine Segmente", EmptyBody: "Filtern Sie die Kontakte und speichern Sie den Filter mit „Als Segment speichern“.",
		Name: "Name", Conditions: "Bedingungen", Contacts: "Kontakte", ShowContacts: "Kontakte ansehen", Delete: "Löschen",
		Caption:   "Segmente des Kontos",
		SaveTitle: "Als Segment speichern", SaveName: "Name des Segments", SaveButton: "Als Segment speichern",
		SavedFlash: "Segment „%s“ gespeichert.", DeletedFlash: "Segment „%s“ gelöscht.", AllContacts: "alle Kontakte",
		ActiveSegment: "Segment: %s",
		CondList:      "Liste %s", CondStatus: "Status %s", CondTag: "Schlagwort „%s“", CondQuery: "Suche „%s“",
		CondField: "%s %s", CondCreated: "angelegt %s", CondUpdated: "geändert %s",
		FieldOps: map[string]string{"equals": "ist „%s“", "contains": "enthält „%s“", "set": "ist gesetzt", "gt": "größer als %s", "lt": "kleiner als %s"},
		Audience: "Segment", AudienceNone: "Kein Segment (nur die Listen)",
		AudienceHint: "Mit Segment: dessen angemeldete Kontakte beim Versandstart; mit Listen nur die, die in einer der Listen sind.",
		SortBy:       "Sortieren nach %s", Updated: "Geändert", UnknownSegment: "Dieses Segment gibt es nicht.",
		BulkTitle: "Massenaktion", BulkSelect: "Kontakt %s auswählen", BulkSelectAll: "Alle Kontakte dieser Seite auswählen",
		BulkAll: "alle %s Treffer des Filters", BulkAction: "Aktion", BulkTag: "Schlagwort", BulkList: "Liste", BulkStart: "Ausführen",
		BulkActions: map[string]string{"add_tag": "Schlagwort hinzufügen", "remove_tag": "Schlagwort entfernen",
			"add_to_list": "Zur Liste hinzufügen", "remove_from_list": "Aus der Liste entfernen", "unsubscribe": "Austragen", "delete": "Löschen"},
		BulkQueued: "Die Aktion wartet auf ihren Start …", BulkRunning: "Die Aktion läuft …", BulkProgress: "%s von %s Kontakten bearbeitet",
		BulkDoneTitle: "Massenaktion abgeschlossen", BulkDone: "%s Kontakte bearbeitet, %s davon geändert.",
		BulkDoneOne:     "%s Kontakt bearbeitet, %s davon geändert.",
		BulkFailedTitle: "Massenaktion abgebrochen", BulkBack: "Zu den Kontakten",
	}
}

// EditorText holds the shared mail editor (issue 24): the rich-text mode,
// its image upload, and the AI assistant.
type EditorText struct {
	FormatRichText, HintRichText, NeedsJS, ImageOnly, UploadFailed string
	// Trix is the wording of the rich-text editor's toolbar and dialogs,
	// keyed as Trix.config.lang.
	Trix map[string]string
	AI   EditorAIText
}

// EditorAIText holds the editor's AI assistant.
type EditorAIText struct {
	Title, Lead, SubjectIdeas, PreheaderIdeas, Improve, Shorten, Fix string
	Credit, Cost, Apply, ApplyContent, Suggestion, NoContent         string
	NoCredit, Unavailable                                            string
	// RateLimited refuses a request over the account's AI budget of the
	// minute (store.AIRateLimit); %d is the seconds to wait.
	RateLimited, RateLimitedOne string
}

func germanEditor() EditorText {
	return EditorText{
		FormatRichText: "Formatierter Text",
		HintRichText:   "Schreiben wie in einer Textverarbeitung: Überschriften, Listen, Links und Bilder über die Werkzeugleiste. Bilder werden als Anhang gespeichert und über eine feste Adresse gezeigt.",
		NeedsJS:        "Der formatierte Text braucht JavaScript. Ohne JavaScript schreiben Sie in Markdown oder HTML.",
		ImageOnly:      "Nur Bilder im Format PNG, JPEG, GIF oder WebP können eingefügt werden.",
		UploadFailed:   "Das Bild konnte nicht hochgeladen werden.",
		Trix: map[string]string{
			"attachFiles": "Bild einfügen", "bold": "Fett", "bullets": "Aufzählung", "byte": "Byte", "bytes": "Bytes",
			"captionPlaceholder": "Bildunterschrift hinzufügen …", "code": "Code", "heading1": "Überschrift", "indent": "Einzug vergrößern",
			"italic": "Kursiv", "link": "Link", "numbers": "Nummerierung", "outdent": "Einzug verkleinern", "quote": "Zitat",
			"redo": "Wiederholen", "remove": "Entfernen", "strike": "Durchgestrichen", "undo": "Rückgängig", "unlink": "Link entfernen",
			"url": "Adresse", "urlPlaceholder": "Adresse eingeben, z. B. https://…",
		},
		AI: EditorAIText{
			Title:          "KI-Assistent",
			Lead:           "Vorschläge für Betreff und Vorschautext, oder den Inhalt verbessern, kürzen, korrigieren. Jede Anfrage kostet KI-Guthaben.",
			SubjectIdeas:   "Betreffideen",
			PreheaderIdeas: "Vorschautext-Ideen",
			Improve:        "Verbessern",
			Shorten:        "Kürzen",
			Fix:            "Rechtschreibung korrigieren",
			Credit:         "Verbleibendes KI-Guthaben: %s",
			Cost:           "Kosten dieser Anfrage: %s · verbleibendes Guthaben: %s",
			Apply:          "Übernehmen",
			ApplyContent:   "Vorschlag in den Inhalt übernehmen",
			Suggestion:     "Vorschlag",
			NoContent:      "Schreiben Sie zuerst einen Inhalt, den der Assistent bearbeiten kann.",
			NoCredit:       "Das KI-Guthaben ist aufgebraucht. Laden Sie es auf, um den Assistenten weiter zu nutzen.",
			Unavailable:    "Der KI-Dienst ist gerade nicht erreichbar. Es wurde nichts berechnet.",
			RateLimited:    "Zu viele KI-Anfragen in dieser Minute. Bitte versuchen Sie es in %d Sekunden noch einmal. Es wurde nichts berechnet.",
			RateLimitedOne: "Zu viele KI-Anfragen in dieser Minute. Bitte versuchen Sie es in %d Sekunde noch einmal. Es wurde nichts berechnet.",
		},
	}
}

// LinkCheckText holds the send confirmation's link check (mailer.CheckLinks):
// which links of the content do not answer, and why.
type LinkCheckText struct {
	Loading, None, AllOK, Failed, Omitted string // AllOK %d; Failed %d of %d; Omitted %d
	AllOKOne, FailedOne, OmittedOne       string // AllOKOne: the only link; FailedOne: one of %d… %d; OmittedOne %d
	Reasons                               map[string]string
	Status                                string // Status %d: the HTTP status
}

func germanLinkCheck() LinkCheckText {
	return LinkCheckText{
		Loading:    "Links werden geprüft …",
		None:       "Keine Links zum Prüfen im Inhalt.",
		AllOK:      "Alle %d Links antworten.",
		AllOKOne:   "Der Link antwortet.",
		Failed:     "%d von %d Links antworten nicht:",
		FailedOne:  "%d von %d Links antwortet nicht:",
		Omitted:    "%d weitere Links wurden nicht geprüft (höchstens 20 pro Prüfung).",
		OmittedOne: "%d weiterer Link wurde nicht geprüft (höchstens 20 pro Prüfung).",
		Reasons: map[string]string{
			"dns":       "Der Hostname lässt sich nicht auflösen.",
			"refused":   "Die Verbindung wurde abgelehnt.",
			"timeout":   "Keine Antwort innerhalb von 5 Sekunden.",
			"redirects": "Mehr als 5 Weiterleitungen.",
			"blocked":   "Die Adresse ist nicht öffentlich erreichbar (localhost oder privates Netz).",
			"failed":    "Die Verbindung ist fehlgeschlagen.",
		},
		Status: "Der Server antwortet mit dem Fehler %d.",
	}
}
