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
