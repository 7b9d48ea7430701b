package api

import (
	"encoding/json"
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

type activityActor struct {
	Type string `json:"type"`
	ID   *int64 `json:"id"`
}

type activityObject struct {
	Type string `json:"type"`
	ID   *int64 `json:"id"`
}

// activityResponse is an entry of the activity log: who (actor) did what
// (action, label) to which object, when.
type activityResponse struct {
	ID        int64           `json:"id"`
	Action    string          `json:"action"`
	Label     string          `json:"label"`
	Actor     activityActor   `json:"actor"`
	Object    activityObject  `json:"object"`
	Details   json.RawMessage `json:"details"`
	CreatedAt Time            `json:"created_at"`
}

// activityLabel is the German display text of an action.
func activityLabel(action string) string {
	switch action {
	case "contact.created":
		return "Kontakt angelegt"
	case "contact.updated":
		return "Kontakt geändert"
	case "contact.deleted":
		return "Kontakt gelöscht"
	case "contact.unsubscribed":
		return "Abgemeldet"
	case "contact.signed_up":
		return "Über ein Formular angemeldet"
	case "contact.confirmation_sent":
		return "Bestätigungs-E-Mail (Double-Opt-In) verschickt"
	case "contact.confirmed":
		return "Anmeldung bestätigt"
	case "list.joined":
		return "In Liste aufgenommen"
	case "list.left":
		return "Aus Liste entfernt"
	case "list.created":
		return "Liste angelegt"
	case "list.updated":
		return "Liste geändert"
	case "list.deleted":
		return "Liste gelöscht"
	case "address.blocked":
		return "Adresse gesperrt"
	case "address.unblocked":
		return "Adresssperre aufgehoben"
	case "email.sent":
		return "E-Mail verschickt"
	case "email.opened":
		return "E-Mail geöffnet"
	case "email.clicked":
		return "Link in E-Mail geklickt"
	case "email.bounced":
		return "E-Mail unzustellbar"
	}
	return action
}

func writeActivities(w http.ResponseWriter, r *http.Request, acts []store.Activity, page store.Page, total int) error {
	out := make([]activityResponse, len(acts))
	for i, a := range acts {
		details := a.Details
		if len(details) == 0 {
			details = json.RawMessage("{}")
		}
		out[i] = activityResponse{ID: a.ID, Action: a.Action, Label: activityLabel(a.Action),
			Actor: activityActor{Type: a.ActorType, ID: a.ActorID}, Object: activityObject{Type: a.ObjectType, ID: a.ObjectID},
			Details: details, CreatedAt: Time(a.CreatedAt)}
	}
	return writeList(w, r, out, page, total)
}

func (a *API) listActivityLog(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	errs := store.Errs{}
	if ve, ok := err.(*store.ValidationError); ok {
		for k, v := range ve.Fields {
			errs.Add(k, v)
		}
	}
	q := r.URL.Query()
	f := store.ActivityFilter{ObjectType: q.Get("object_type"), ObjectID: queryInt(r, "object_id", errs), Action: q.Get("action")}
	if err := errs.Err(); err != nil {
		return err
	}
	acts, total, err := a.db.ActivityLog(r.Context(), accountID(r), f, page)
	if err != nil {
		return err
	}
	return writeActivities(w, r, acts, page, total)
}
