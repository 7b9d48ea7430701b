package views

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rundbrief/rundbrief/store"
)

// activityObjectURL is the portal page of an activity's object, "" for a type
// without one. Field definitions have no id: their page is the settings list.
func activityObjectURL(typ string, id int64) string {
	n := itoa64(id)
	switch typ {
	case store.ObjectContact:
		return "/contacts/" + n
	case store.ObjectList:
		return "/lists/" + n
	case store.ObjectNewsletter:
		return "/newsletters/" + n
	case store.ObjectEmail:
		return "/emails/" + n
	case store.ObjectStoryEmail:
		return "/story-emails/" + n
	case store.ObjectForm:
		return "/forms/" + n + "/edit"
	case store.ObjectWebhook:
		return "/webhooks/" + n + "/edit"
	case store.ObjectTemplate:
		return "/templates/" + n
	case store.ObjectSequence:
		return "/sequences/" + n
	case store.ObjectABTest:
		return "/ab-tests/" + n
	case store.ObjectIntegration:
		return "/integrations/" + n + "/edit"
	case store.ObjectUser:
		return "/users"
	}
	return ""
}

// activityLink is where the entry's object column links to: its page while
// the object exists (l.Existing), "" otherwise.
func activityLink(a store.Activity, existing map[store.ObjectRef]bool) string {
	if a.ObjectType == store.ObjectField {
		return "/settings/fields"
	}
	if a.ObjectID == nil || !existing[store.ObjectRef{Type: a.ObjectType, ID: *a.ObjectID}] {
		return ""
	}
	return activityObjectURL(a.ObjectType, *a.ObjectID)
}

// activityObjectName names the entry's object in German: its type with the
// name, address, key or file the entry recorded, else with its id.
func activityObjectName(t Text, a store.Activity) string {
	typ := t.Activity.ObjectTypes[a.ObjectType]
	if typ == "" {
		typ = t.Changes.ObjectTypes[a.ObjectType]
	}
	if typ == "" {
		typ = a.ObjectType
	}
	d := activityDetailMap(a)
	// Only names of the object itself: a contact's list.joined records the
	// list's name (list_name), which ActivitySentence shows.
	for _, k := range []string{"name", "email", "label", "key", "filename", "url"} {
		if s, ok := d[k].(string); ok && s != "" {
			if k == "email" {
				s = store.DisplayEmail(s)
			}
			return sprintf(t.Changes.Named, typ, s)
		}
	}
	if a.ObjectID != nil {
		return sprintf(t.Changes.Numbered, typ, *a.ObjectID)
	}
	return typ
}

// activityDetailMap decodes an entry's details; nil for none or not an object.
func activityDetailMap(a store.Activity) map[string]any {
	var d map[string]any
	if len(a.Details) == 0 || json.Unmarshal(a.Details, &d) != nil {
		return nil
	}
	return d
}

// ActivitySentence says in German what an entry changed: the changed
// fields by their German names ("Geändert: Vorname und Ort."), and old → new
// where the entry recorded both (a field's label, a user's role). "" when the
// entry recorded nothing of the kind.
func ActivitySentence(t Text, a store.Activity) string {
	d := activityDetailMap(a)
	if d == nil {
		return ""
	}
	var parts []string
	if changed, ok := d["changed"].([]any); ok && len(changed) > 0 {
		names := make([]string, 0, len(changed))
		for _, c := range changed {
			if s, ok := c.(string); ok {
				names = append(names, changeName(t, s))
			}
		}
		parts = append(parts, sprintf(t.Changes.Changed, joinGerman(t, names)))
	}
	if changes, ok := d["changes"].(map[string]any); ok {
		keys := make([]string, 0, len(changes))
		for k := range changes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var ft []string
		for _, k := range keys {
			c, _ := changes[k].(map[string]any)
			ft = append(ft, sprintf(t.Changes.FromTo, changeName(t, k), changeValue(t, k, c["from"]), changeValue(t, k, c["to"])))
		}
		parts = append(parts, strings.Join(ft, "; ")+".")
	}
	if from, ok := d["from"]; ok {
		if to, ok := d["to"]; ok && a.Action == "user.role_changed" {
			parts = append(parts, sprintf(t.Changes.FromTo, changeName(t, "role"), changeValue(t, "role", from), changeValue(t, "role", to))+".")
		}
	}
	if l, ok := d["list_name"].(string); ok && l != "" {
		parts = append(parts, sprintf(t.Changes.List, l))
	}
	if n, ok := d["members"].(float64); ok && a.Action == "list.deleted" {
		parts = append(parts, sprintf(t.Changes.ListMembers, int64(n))+".")
	}
	return strings.Join(parts, " ")
}

// changeName is a changed field's German name; a custom field's key (with
// its prefix) or an unknown name stays as it is.
func changeName(t Text, name string) string {
	if n := t.Changes.Names[name]; n != "" {
		return n
	}
	if k, ok := strings.CutPrefix(name, "custom_fields."); ok {
		return sprintf(t.Changes.FieldOfKey, k)
	}
	return name
}

// changeValue writes an old or new value: types and roles by their German
// names, empty as "leer", text quoted.
func changeValue(t Text, field string, v any) string {
	switch x := v.(type) {
	case nil:
		return t.Changes.Empty
	case string:
		if x == "" {
			return t.Changes.Empty
		}
		switch field {
		case "type":
			if l := t.Fields.Types[x]; l != "" {
				return l
			}
		case "role":
			if l := t.Changes.Roles[x]; l != "" {
				return l
			}
		case "email":
			x = store.DisplayEmail(x)
		}
		return "„" + x + "“"
	case bool:
		if x {
			return t.Fields.Yes
		}
		return t.Fields.No
	}
	return fmt.Sprint(v)
}

// joinGerman joins names as German lists them: "a, b und c".
func joinGerman(t Text, names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + t.Changes.And + names[len(names)-1]
}
