package views

import "slices"

// Page ids of the sidebar. A page passes its id to the shell (Shell.Active) to be
// marked as the current one; tests find an entry as data-testid="nav-<id>".
const (
	NavDashboard   = "dashboard"
	NavNewsletters = "newsletters"
	NavForms       = "forms"
	NavContacts    = "contacts"
	NavLists       = "lists"
	NavAPIKeys     = "api-keys"
	NavAPILog      = "api-log"
	NavPassword    = "password"
	NavSMTP        = "smtp-servers"
	NavWebhooks    = "webhooks"
	NavActivity    = "activity-log"
	NavUsers       = "users"
	NavABTests     = "ab-tests"
	NavPlan        = "plan"
	NavBlocked     = "blocked"
	NavDevOutbox   = "dev-outbox"
	NavAIUsage     = "ai-usage"
	NavEmails      = "emails"
	NavCampaigns   = "campaigns"
	NavTemplates   = "templates"
	NavAttachments = "attachments"
	NavSender      = "sender"
	// NavFields is the custom field definitions (issue 24).
	NavFields = "fields"
	// NavAppointments is the appointment book (issue 22).
	NavAppointments = "appointments"
	// NavIntegrations is the payment-provider integrations (issue 23).
	NavIntegrations = "integrations"
	NavInbox        = "inbox"
	// Story emails and sequences (issue 20).
	NavStoryEmails = "story-emails"
	NavSequences   = "sequences"
)

// NavItem is one entry of the sidebar.
type NavItem struct {
	ID      string
	Href    string
	Label   string
	Section string   // heading the entry is listed under; "" for the top group
	Roles   []string // roles that see the entry; empty: every signed-in user
	Icon    string   // name of an icon in navIcon; "" for none
	// DevOutbox: shown only while the development outbox collects mail
	// (no operator relay), to every role, since everyone's test mails land there.
	DevOutbox bool
}

// Navigation is the portal's sidebar, top to bottom: the one place that lists its
// pages. List only pages whose routes exist; a new feature adds its entry here
// (entries of one section stay together).
func Navigation(t Text) []NavItem {
	admins := []string{"owner", "admin"}
	return []NavItem{
		{ID: NavDashboard, Href: "/dashboard", Label: t.Nav.Dashboard, Icon: "home"},
		{ID: NavContacts, Href: "/contacts", Label: t.Nav.Contacts, Icon: "users"},
		{ID: NavLists, Href: "/lists", Label: t.Nav.Lists, Icon: "lists"},
		{ID: NavNewsletters, Href: "/newsletters", Label: t.Nav.Newsletters, Icon: "mail"},
		{ID: NavEmails, Href: "/emails", Label: t.Nav.Emails, Icon: "mail"},
		{ID: NavCampaigns, Href: "/campaigns", Label: t.Nav.Campaigns, Icon: "activity"},
		{ID: NavStoryEmails, Href: "/story-emails", Label: t.Sequences.StoryTitle, Icon: "mail"},
		{ID: NavSequences, Href: "/sequences", Label: t.Sequences.Title, Icon: "mail"},
		{ID: NavForms, Href: "/forms", Label: t.Nav.Forms, Icon: "form"},
		{ID: NavBlocked, Href: "/blocked", Label: t.Nav.Blocked, Icon: "block"},
		{ID: NavABTests, Href: "/ab-tests", Label: t.Nav.ABTests, Icon: "split"},
		{ID: NavTemplates, Href: "/templates", Label: t.Templates.NavTemplates, Icon: "form"},
		{ID: NavAttachments, Href: "/attachments", Label: t.Templates.NavAttachments, Icon: "lists"},
		{ID: NavAppointments, Href: "/appointments", Label: t.Appointments.NavLabel, Icon: "activity"},
		{ID: NavIntegrations, Href: "/integrations", Label: t.Integrations.Nav, Roles: admins, Icon: "webhook"},
		{ID: NavInbox, Href: "/inbox", Label: t.Nav.Inbox, Icon: "mail"},
		{ID: NavAPIKeys, Href: "/api-keys", Label: t.Nav.APIKeys, Section: t.Nav.SectionDev, Roles: admins, Icon: "key"},
		{ID: NavWebhooks, Href: "/webhooks", Label: t.Nav.Webhooks, Section: t.Nav.SectionDev, Roles: admins, Icon: "webhook"},
		{ID: NavDevOutbox, Href: "/dev/outbox", Label: t.Nav.DevOutbox, Section: t.Nav.SectionDev, Icon: "mail", DevOutbox: true},
		{ID: NavAPILog, Href: "/logs/api", Label: t.Nav.APILog, Section: t.Nav.SectionDev, Icon: "log"},
		{ID: NavActivity, Href: "/logs/activity", Label: t.Nav.Activity, Section: t.Nav.SectionDev, Icon: "activity"},
		{ID: NavSMTP, Href: "/smtp-servers", Label: t.Nav.SMTP, Section: t.Nav.SectionSettings, Roles: admins, Icon: "mail"},
		{ID: NavUsers, Href: "/users", Label: t.Nav.Users, Section: t.Nav.SectionSettings, Roles: admins, Icon: "users"},
		{ID: NavSender, Href: "/settings/sender", Label: t.Templates.NavSender, Section: t.Nav.SectionSettings, Icon: "mail"},
		{ID: NavFields, Href: "/settings/fields", Label: t.Fields.Nav, Section: t.Nav.SectionSettings, Icon: "form"},
		{ID: NavPlan, Href: "/settings/plan", Label: t.Nav.Plan, Section: t.Nav.SectionAccount, Icon: "activity"},
		{ID: NavAIUsage, Href: "/ai/usage", Label: t.Nav.AIUsage, Section: t.Nav.SectionAccount, Icon: "spark"},
		{ID: NavPassword, Href: "/account/password", Label: t.Nav.Password, Section: t.Nav.SectionAccount, Icon: "lock"},
	}
}

// navSection is a heading of the sidebar with its entries.
type navSection struct {
	Title string
	Items []NavItem
}

// navSections keeps the entries role may see, grouped by section in the order the
// sections first appear.
func navSections(items []NavItem, role string, devOutbox bool) []navSection {
	var out []navSection
	for _, it := range items {
		if len(it.Roles) > 0 && !slices.Contains(it.Roles, role) || it.DevOutbox && !devOutbox {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Title == it.Section {
			out[n-1].Items = append(out[n-1].Items, it)
			continue
		}
		out = append(out, navSection{Title: it.Section, Items: []NavItem{it}})
	}
	return out
}

// iconPath is the SVG path of a sidebar icon (20×20, stroked); "" for an unknown name.
func iconPath(name string) string {
	switch name {
	case "home":
		return "M3 9.5 10 3.5l7 6V17a1 1 0 0 1-1 1h-3.5v-5h-5v5H4a1 1 0 0 1-1-1z"
	case "lists":
		return "M7 5h10M7 10h10M7 15h10M3 5h.01M3 10h.01M3 15h.01"
	case "key":
		return "M12.5 3.5a4 4 0 1 1-3.3 6.3L3.5 15.5V17h2.5v-1.5h1.5V14H9l1.2-1.2A4 4 0 0 1 12.5 3.5zM13.5 6.5h.01"
	case "log":
		return "M4 4.5h12M4 8.5h12M4 12.5h8M4 16.5h5"
	case "mail":
		return "M3 5h14v10H3zM3.5 5.5 10 11l6.5-5.5"
	case "form":
		return "M4 3.5h12v13H4zM7 7.5h6M7 10.5h6M7 13.5h3"
	case "webhook":
		return "M7 13.5a3 3 0 1 1 1.5-5.6L11 4M13 13.5h-5M13 13.5a3 3 0 1 0 0-.01M10 4a3 3 0 1 1 .01 0"
	case "activity":
		return "M2.5 10h3l2-5 5 10 2-5h3"
	case "users":
		return "M7.5 9a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM2 17c0-3 2.5-5 5.5-5s5.5 2 5.5 5M13 3.3a3 3 0 0 1 0 5.4M15 12.3c1.8.7 3 2.4 3 4.7"
	case "split":
		return "M3 16V9h4v7M8 16V4h4v12M13 16v-5h4v5M2 16.5h16"
	case "spark":
		return "M10 2.5v4M10 13.5v4M2.5 10h4M13.5 10h4M5 5l2.5 2.5M12.5 12.5 15 15M15 5l-2.5 2.5M7.5 12.5 5 15"
	case "block":
		return "M10 17a7 7 0 1 0 0-14 7 7 0 0 0 0 14zM5 5l10 10"
	case "menu":
		return "M3 5.5h14M3 10h14M3 14.5h14"
	case "lock":
		return "M5 9h10v8H5zM7 9V6.5a3 3 0 0 1 6 0V9M10 12.5v1.5"
	}
	return ""
}
