package views

import "github.com/rundbrief/rundbrief/store"

// CampaignStatusLabel is the German label of a newsletter's or single email's
// status (store.Campaign…): the portal's newsletter list and statistics and
// the API's status_label all read it here. An unknown status names itself.
func CampaignStatusLabel(status string) string {
	switch status {
	case store.CampaignDraft:
		return "Entwurf"
	case store.CampaignScheduled:
		return "Geplant"
	case store.CampaignSending:
		return "Wird versendet"
	case store.CampaignSent:
		return "Versendet"
	case store.CampaignPaused:
		return "Pausiert"
	case store.CampaignFailed:
		return "Fehlgeschlagen"
	case store.CampaignCancelled:
		return "Abgebrochen"
	}
	return status
}

// campaignStatusLabels are the labels of every campaign status, for the texts
// that look them up by status.
func campaignStatusLabels() map[string]string {
	m := make(map[string]string, 7)
	for _, s := range []string{store.CampaignDraft, store.CampaignScheduled, store.CampaignSending, store.CampaignSent,
		store.CampaignPaused, store.CampaignFailed, store.CampaignCancelled} {
		m[s] = CampaignStatusLabel(s)
	}
	return m
}

// PlanLabel is the display name of a plan: what a user reads, where the
// database and the API keep the short name. An operator's own plan names
// itself.
func PlanLabel(name string) string {
	switch name {
	case "free":
		return "Kostenlos"
	case "starter":
		return "Starter"
	case "pro":
		return "Pro"
	case "business":
		return "Business"
	}
	return name
}

// membersLead says how many contacts a list has, in the singular for one.
func membersLead(t Text, n int64) string {
	if n == 1 {
		return t.Lists.MembersLeadOne
	}
	return sprintf(t.Lists.MembersLead, formatInt(t, n))
}

// FeatureLabel is the German name of a plan feature (plans.features).
func FeatureLabel(t Text, f string) string {
	if l := t.Dashboard.FeatureLabels[f]; l != "" {
		return l
	}
	return f
}
