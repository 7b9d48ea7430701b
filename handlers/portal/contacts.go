package portal

import (
	"encoding/csv"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// The contact pages call the same store services as the API's /contacts
// endpoints: Contacts, Contact, UpsertContact, UpdateContact, UnsubscribeContact,
// DeleteContact, AddTags, RemoveTag, AddListMembers, RemoveListMember and
// ContactActivities, always with the signed-in account and user.

// contactsPerPage is the number of contacts per page of the table.
const contactsPerPage = 25

// activitiesShown is the number of timeline entries on a contact's page.
const activitiesShown = 30

// customRowsBlank is the number of empty custom field rows the form offers.
const customRowsBlank = 3

// accountLists are the account's lists for choices (filters, checkboxes): the
// first 100, which the plans' list limits keep within.
func (p *Portal) accountLists(r *http.Request) ([]store.List, error) {
	lists, _, err := p.db.Lists(r.Context(), accountID(r), store.Page{Page: 1, PerPage: 100})
	return lists, err
}

// readContactFilter reads the table's filter from the query; f.Errors holds what
// cannot be a filter.
func readContactFilter(r *http.Request) (views.ContactFilter, store.ContactFilter) {
	t := views.TextFor(r.Context())
	q := r.URL.Query()
	f := views.ContactFilter{
		Q:      strings.TrimSpace(q.Get("q")),
		ListID: strings.TrimSpace(q.Get("list_id")),
		Tag:    strings.TrimSpace(q.Get("tag")),
		Status: strings.TrimSpace(q.Get("status")),
		Sort:   strings.TrimSpace(q.Get("sort")),
		Errors: map[string]string{},
	}
	sf := store.ContactFilter{Query: f.Q, Tag: f.Tag, Status: f.Status, Sort: f.Sort}
	if f.ListID != "" {
		id, err := strconv.ParseInt(f.ListID, 10, 64)
		if err != nil || id < 1 {
			f.Errors["list_id"] = t.Contacts.UnknownList
		}
		sf.ListID = id
	}
	if err := sf.Validate(); err != nil {
		fieldErrors(err, f.Errors)
	}
	if v := strings.TrimSpace(q.Get("segment_id")); v != "" {
		f.SegmentID = v
		if id, err := strconv.ParseInt(v, 10, 64); err != nil || id < 1 {
			f.Errors["segment_id"] = t.Segments.UnknownSegment
		}
	}
	return f, sf
}

// segmentFilter replaces the table's filter by the segment the query names
// (segment_id), keeping the sort: a segment's contacts are the table under
// its conditions, through the same ContactFilter.
func (p *Portal) segmentFilter(r *http.Request, f *views.ContactFilter, sf *store.ContactFilter) error {
	if f.SegmentID == "" || len(f.Errors) > 0 {
		return nil
	}
	id, _ := strconv.ParseInt(f.SegmentID, 10, 64)
	s, err := p.db.Segment(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	sort := sf.Sort
	*sf = s.Filter
	sf.Sort = sort
	f.SegmentName = s.Name
	return nil
}

// contactCountCap is how far the contact table counts the matches of a filter
// before it renders; the exact number follows through htmx (countContacts).
const contactCountCap = 1000

// contactExactCap is how far countContacts counts a filter no counter is
// maintained for (store.CountContacts): beyond, it says "more than" this
// many, which at a million contacts keeps the count under 100 ms (issue 24).
const contactExactCap = 10_000

// listContacts is the contact table: search, filter, pages. htmx requests get
// views.ContactSection alone. A filter's matches are counted up to
// contactCountCap only, so that the page renders fast for any account; the
// pagination then loads the exact count after the page.
// tagSuggestions bounds the tags the filter suggests.
const tagSuggestions = 500

func (p *Portal) listContacts(w http.ResponseWriter, r *http.Request) error {
	t := views.TextFor(r.Context())
	f, sf := readContactFilter(r)
	if err := p.segmentFilter(r, &f, &sf); err != nil {
		return err
	}
	page := queryPage(r)
	lists, err := p.accountLists(r)
	if err != nil {
		return err
	}
	l := views.ContactList{Lists: lists, Filter: f, CanSave: f.Active() && f.SegmentID == ""}
	// The tag filter suggests the account's tags (from the maintained counts:
	// the cost grows with the tags, not the contacts).
	if l.Tags, _, err = p.db.Tags(r.Context(), accountID(r), store.Page{Page: 1, PerPage: tagSuggestions}); err != nil {
		return err
	}
	if len(f.Errors) == 0 {
		var res store.ContactPage
		res, err = p.db.ContactsUpTo(r.Context(), accountID(r), sf, store.Page{Page: page, PerPage: contactsPerPage}, contactCountCap)
		if err == nil && len(res.Contacts) == 0 && page > 1 {
			// A page past the end (contacts were deleted, or a hand-edited URL):
			// show the last one.
			var total int
			if _, total, err = p.db.Contacts(r.Context(), accountID(r), sf, store.Page{Page: 1, PerPage: 1}); err == nil {
				page = max(1, (total+contactsPerPage-1)/contactsPerPage)
				res, err = p.db.ContactsUpTo(r.Context(), accountID(r), sf, store.Page{Page: page, PerPage: contactsPerPage}, contactCountCap)
			}
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			f.Errors["list_id"] = t.Contacts.UnknownList
			l.Filter = f
		case fieldErrors(err, f.Errors):
		case err != nil:
			return err
		}
		l.Contacts, l.Pager.Total, l.Pager.AtLeast, l.Pager.Shown, l.Pager.More = res.Contacts, res.Total, res.AtLeast, len(res.Contacts), res.More
		if res.AtLeast {
			l.Pager.CountURL = f.URL("/contacts/count", page)
		}
	}
	l.Pager.Page, l.Pager.PerPage, l.Pager.Target = page, contactsPerPage, "#contacts"
	l.Pager.URL = func(n int) string { return f.URL("/contacts", n) }
	s := p.shell(r, t.Contacts.Title, views.NavContacts)
	p.page(w, r, http.StatusOK, views.ContactsPage(s, l), views.ContactSection(l))
	return nil
}

// countContacts is the contact table's pagination with the exact number of
// matches, which the table loads after a filtered page (views.Pager.CountURL).
func (p *Portal) countContacts(w http.ResponseWriter, r *http.Request) error {
	f, sf := readContactFilter(r)
	if len(f.Errors) > 0 {
		return store.ErrNotFound
	}
	if err := p.segmentFilter(r, &f, &sf); err != nil {
		return err
	}
	page := queryPage(r)
	// Counted at least past the page, so that a "more than" still knows
	// the page's rows and whether a next one follows.
	n, err := p.db.CountContacts(r.Context(), accountID(r), sf, max(contactExactCap, page*contactsPerPage+1))
	if err != nil {
		return err
	}
	pager := views.Pager{Page: page, PerPage: contactsPerPage, Total: n.N, AtLeast: n.AtLeast, Target: "#contacts",
		URL: func(n int) string { return f.URL("/contacts", n) }}
	if n.AtLeast {
		pager.Shown, pager.More = min(contactsPerPage, max(n.N-(page-1)*contactsPerPage, 0)), n.N > page*contactsPerPage
	}
	p.render(w, r, http.StatusOK, views.Pagination(pager))
	return nil
}

// showContact is a contact's page.
func (p *Portal) showContact(w http.ResponseWriter, r *http.Request) error {
	c, err := p.contact(r)
	if err != nil {
		return err
	}
	d, err := p.contactDetail(r, c)
	if err != nil {
		return err
	}
	p.render(w, r, http.StatusOK, views.ContactPage(p.shell(r, store.DisplayEmail(c.Email), views.NavContacts), d))
	return nil
}

func (p *Portal) contactDetail(r *http.Request, c store.Contact) (views.ContactDetail, error) {
	d := views.ContactDetail{Contact: c}
	var err error
	if d.Lists, err = p.accountLists(r); err != nil {
		return d, err
	}
	d.Activities, d.ActivityTotal, err = p.db.ContactActivities(r.Context(), accountID(r), c.ID, store.Page{Page: 1, PerPage: activitiesShown})
	if err != nil {
		return d, err
	}
	if d.Fields, err = p.db.ContactFieldsFor(r.Context(), accountID(r), slices.Collect(maps.Keys(c.CustomFields))); err != nil {
		return d, err
	}
	d.Campaigns, err = p.db.CampaignRefs(r.Context(), accountID(r), views.ActivityCampaignIDs(d.Activities))
	return d, err
}

// contact is the route's contact; another account's id is not found.
func (p *Portal) contact(r *http.Request) (store.Contact, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return store.Contact{}, err
	}
	return p.db.Contact(r.Context(), accountID(r), id)
}

func (p *Portal) newContactForm(w http.ResponseWriter, r *http.Request) error {
	f, err := p.blankContactForm(r)
	if err != nil {
		return err
	}
	p.renderContactForm(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) blankContactForm(r *http.Request) (views.ContactForm, error) {
	t := views.TextFor(r.Context()).Contacts
	lists, err := p.accountLists(r)
	f := views.ContactForm{Title: t.NewTitle, Action: "/contacts/new", Submit: t.Create, Cancel: "/contacts", New: true, Lists: lists}
	f.Custom = make([]views.CustomFieldRow, customRowsBlank)
	return f, err
}

// createContact creates a contact with UpsertContact. An address that already
// has a contact is reported at the field (with a link to it) instead of silently
// changing that contact, which is what the upsert would do.
func (p *Portal) createContact(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, err := p.blankContactForm(r)
	if err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	f = readContactForm(r, f, nil)
	in := store.ContactInput{
		Email: f.Email, FirstName: &f.FirstName, LastName: &f.LastName, Address: &f.Address, Zip: &f.Zip, City: &f.City,
		Phone: &f.Phone, Note: &f.Note, Tags: splitTags(f.Tags), CustomFields: formCustomFields(f.Custom, nil),
		ListIDs: formIDs(f.ListIDs), Source: ptr(store.SourceApp),
	}
	fieldErrors(in.Normalize(), f.Errors)
	if len(f.Errors) > 0 {
		p.renderContactForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if existing, err := p.db.ContactByEmail(r.Context(), accountID(r), in.Email); err == nil {
		f.Errors["email"], f.Existing = t.Contacts.Exists, existing.ID
		p.renderContactForm(w, r, http.StatusConflict, f)
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	res, err := p.db.UpsertContact(r.Context(), accountID(r), actor(r), in)
	if p.contactFormError(r, err, &f) {
		p.renderContactForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(t.Contacts.Created1, store.DisplayEmail(res.Contact.Email)))
	p.redirect(w, r, "/contacts/"+strconv.FormatInt(res.Contact.ID, 10))
	return nil
}

// contactFormError puts a store error that belongs to the form into it: field
// errors next to their fields, a conflict at its field, the plan's limit above
// the form. It reports whether it did.
func (p *Portal) contactFormError(r *http.Request, err error, f *views.ContactForm) bool {
	t := views.TextFor(r.Context())
	var ce *store.ConflictError
	var le *store.LimitError
	switch {
	case err == nil:
		return false
	case fieldErrors(err, f.Errors):
		return true
	case errors.As(err, &ce):
		switch ce.Reason {
		case "email_taken":
			f.Errors["email"] = ce.Message
		default:
			f.Alert = ce.Message
		}
		return true
	case errors.As(err, &le):
		f.Alert = sprintf(t.Contacts.LimitReached, le.Max)
		return true
	}
	return false
}

func (p *Portal) editContactForm(w http.ResponseWriter, r *http.Request) error {
	c, err := p.contact(r)
	if err != nil {
		return err
	}
	f, err := p.editContactFormFor(r, c)
	if err != nil {
		return err
	}
	p.renderContactForm(w, r, http.StatusOK, f)
	return nil
}

func (p *Portal) editContactFormFor(r *http.Request, c store.Contact) (views.ContactForm, error) {
	t := views.TextFor(r.Context())
	lists, err := p.accountLists(r)
	f := views.ContactForm{
		Title: sprintf(t.Contacts.EditTitle, store.DisplayEmail(c.Email)), Action: "/contacts/" + strconv.FormatInt(c.ID, 10) + "/edit",
		Submit: t.Common.Save, Cancel: "/contacts/" + strconv.FormatInt(c.ID, 10), Lists: lists,
		Email: store.DisplayEmail(c.Email), FirstName: c.FirstName, LastName: c.LastName, Address: c.Address, Zip: c.Zip, City: c.City,
		Phone: c.Phone, Note: c.Note, Tags: strings.Join(c.Tags, ", "),
	}
	for _, l := range c.Lists {
		f.ListIDs = append(f.ListIDs, strconv.FormatInt(l.ID, 10))
	}
	keys := make([]string, 0, len(c.CustomFields))
	for k := range c.CustomFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	strs := c.CustomFields.Strings()
	for _, k := range keys {
		f.Custom = append(f.Custom, views.CustomFieldRow{Orig: k, Key: k, Value: strs[k]})
	}
	f.Custom = append(f.Custom, make([]views.CustomFieldRow, customRowsBlank)...)
	return f, err
}

// updateContact saves the edit form with UpdateContact: tags and lists as
// checked replace the current ones, custom fields are merged (a cleared name
// removes its field), and the status is left alone (it has its own actions).
func (p *Portal) updateContact(w http.ResponseWriter, r *http.Request) error {
	c, err := p.contact(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f, err := p.editContactFormFor(r, c)
	if err != nil {
		return err
	}
	f = readContactForm(r, f, c.CustomFields)
	tags := splitTags(f.Tags)
	ids := formIDs(f.ListIDs)
	patch := store.ContactPatch{
		Email: &f.Email, FirstName: &f.FirstName, LastName: &f.LastName, Address: &f.Address, Zip: &f.Zip, City: &f.City,
		Phone: &f.Phone, Note: &f.Note, Tags: &tags, CustomFields: formCustomFields(f.Custom, c.CustomFields), ListIDs: &ids,
	}
	if len(f.Errors) > 0 {
		p.renderContactForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	res, err := p.db.UpdateContact(r.Context(), accountID(r), actor(r), c.ID, patch)
	if p.contactFormError(r, err, &f) {
		p.renderContactForm(w, r, http.StatusUnprocessableEntity, f)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Contacts.Updated1, store.DisplayEmail(res.Contact.Email)))
	p.redirect(w, r, "/contacts/"+strconv.FormatInt(c.ID, 10))
	return nil
}

// readContactForm reads the posted form into f, as typed. old are the contact's
// custom fields (nil for a new contact): their rows are kept in the form even if
// cleared, so that the form shows again what was posted.
func readContactForm(r *http.Request, f views.ContactForm, old store.CustomFields) views.ContactForm {
	form := r.PostForm
	f.Email = strings.TrimSpace(form.Get("email"))
	f.FirstName = form.Get("first_name")
	f.LastName = form.Get("last_name")
	f.Address = form.Get("address")
	f.Zip = form.Get("zip")
	f.City = form.Get("city")
	f.Phone = form.Get("phone")
	f.Note = form.Get("note")
	f.Tags = form.Get("tags")
	f.ListIDs = form["list_ids"]
	f.Errors = map[string]string{}
	f.Custom = nil
	for i := 0; ; i++ {
		k, kok := form["cf_key_"+strconv.Itoa(i)]
		v, vok := form["cf_val_"+strconv.Itoa(i)]
		if !kok && !vok {
			break
		}
		row := views.CustomFieldRow{Orig: strings.TrimSpace(form.Get("cf_orig_" + strconv.Itoa(i)))}
		if _, stored := old[row.Orig]; !stored {
			row.Orig = "" // only a stored field can be removed
		}
		if len(k) > 0 {
			row.Key = strings.ToLower(strings.TrimSpace(k[0]))
		}
		if len(v) > 0 {
			row.Value = v[0]
		}
		f.Custom = append(f.Custom, row)
	}
	// A new value without a name cannot be stored: say so at the custom fields.
	for _, row := range f.Custom {
		if row.Key == "" && row.Orig == "" && strings.TrimSpace(row.Value) != "" {
			f.Errors["custom_fields"] = views.TextFor(r.Context()).Contacts.CustomKeyMissing
		}
	}
	if len(f.Custom) < customRowsBlank {
		f.Custom = append(f.Custom, make([]views.CustomFieldRow, customRowsBlank-len(f.Custom))...)
	}
	return f
}

// formCustomFields is the change of custom fields the form asks for: named rows
// whose value differs from the stored one are set (as text), stored fields whose
// name is no longer in the form are removed (nil).
func formCustomFields(rows []views.CustomFieldRow, old store.CustomFields) map[string]any {
	out := map[string]any{}
	named := map[string]bool{}
	oldStr := old.Strings()
	for _, row := range rows {
		if row.Key == "" {
			continue
		}
		named[row.Key] = true
		if cur, ok := oldStr[row.Key]; ok && cur == row.Value {
			continue // unchanged: keep its type (a number stays a number)
		}
		if row.Value == "" {
			if _, ok := old[row.Key]; ok {
				out[row.Key] = nil
			}
			continue
		}
		out[row.Key] = row.Value
	}
	for k := range old {
		if !named[k] {
			out[k] = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// splitTags splits a comma-separated tag field; empty entries are dropped.
func splitTags(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// formIDs reads checked ids; anything but a number is skipped (it was no choice
// of the form).
func formIDs(vals []string) []int64 {
	out := []int64{}
	for _, v := range vals {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			out = append(out, id)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func (p *Portal) renderContactForm(w http.ResponseWriter, r *http.Request, status int, f views.ContactForm) {
	p.render(w, r, status, views.ContactFormPage(p.shell(r, f.Title, views.NavContacts), f))
}

// confirmContact asks before unsubscribing or deleting a contact.
func (p *Portal) confirmContact(action string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		c, err := p.contact(r)
		if err != nil {
			return err
		}
		p.render(w, r, http.StatusOK, views.ContactConfirmPage(p.shell(r, store.DisplayEmail(c.Email), views.NavContacts), c, action))
		return nil
	}
}

// unsubscribeContact unsubscribes a contact and blocks its address (source
// manual), as POST /contacts/{id}/unsubscribe does.
func (p *Portal) unsubscribeContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := p.db.UnsubscribeContact(r.Context(), accountID(r), actor(r), id, store.Unsubscribe{Source: store.UnsubManual})
	if err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Contacts.UnsubscribedFlash, store.DisplayEmail(c.Email)))
	p.redirect(w, r, "/contacts/"+strconv.FormatInt(id, 10))
	return nil
}

func (p *Portal) deleteContact(w http.ResponseWriter, r *http.Request) error {
	c, err := p.contact(r)
	if err != nil {
		return err
	}
	if err := p.db.DeleteContact(r.Context(), accountID(r), actor(r), c.ID); err != nil {
		return err
	}
	p.flash(r.Context(), "success", sprintf(views.TextFor(r.Context()).Contacts.DeletedFlash, store.DisplayEmail(c.Email)))
	p.redirect(w, r, "/contacts")
	return nil
}

// addContactTags adds the typed tags; htmx gets the tags section back, a
// browser without JavaScript the contact's page.
func (p *Portal) addContactTags(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	typed := r.PostForm.Get("tags")
	c, err := p.db.AddTags(r.Context(), accountID(r), actor(r), id, splitTags(typed))
	errs := map[string]string{}
	if fieldErrors(err, errs) {
		c, err = p.db.Contact(r.Context(), accountID(r), id)
		if err != nil {
			return err
		}
		return p.contactPart(w, r, c, http.StatusUnprocessableEntity, func(d *views.ContactDetail) {
			d.TagError, d.TagValue = errs["tags"], typed
		}, views.ContactTags)
	}
	if err != nil {
		return err
	}
	return p.contactPart(w, r, c, http.StatusOK, nil, views.ContactTags)
}

func (p *Portal) removeContactTag(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	c, err := p.db.RemoveTag(r.Context(), accountID(r), actor(r), id, r.PostForm.Get("tag"))
	if errors.Is(err, store.ErrNotFound) {
		// The tag is gone already (another tab): show the contact as it is.
		c, err = p.db.Contact(r.Context(), accountID(r), id)
	}
	if err != nil {
		return err
	}
	return p.contactPart(w, r, c, http.StatusOK, nil, views.ContactTags)
}

// joinContactList adds the contact to a list with AddListMembers.
func (p *Portal) joinContactList(w http.ResponseWriter, r *http.Request) error {
	c, err := p.contact(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	t := views.TextFor(r.Context())
	listID, _ := strconv.ParseInt(r.PostForm.Get("list_id"), 10, 64)
	res, err := p.db.AddListMembers(r.Context(), accountID(r), actor(r), listID, []int64{c.ID}, nil)
	msg := ""
	switch {
	case errors.Is(err, store.ErrNotFound):
		msg = t.Contacts.UnknownList
	case err != nil:
		return err
	case res.Failed > 0:
		msg = entryMessage(res.Entries[0].Err)
	}
	if c, err = p.db.Contact(r.Context(), accountID(r), c.ID); err != nil {
		return err
	}
	status := http.StatusOK
	if msg != "" {
		status = http.StatusUnprocessableEntity
	}
	return p.contactPart(w, r, c, status, func(d *views.ContactDetail) { d.ListError = msg }, views.ContactLists)
}

func (p *Portal) leaveContactList(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	listID, err := pathID(r, "list_id")
	if err != nil {
		return err
	}
	err = p.db.RemoveListMember(r.Context(), accountID(r), actor(r), listID, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	c, err := p.db.Contact(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return p.contactPart(w, r, c, http.StatusOK, nil, views.ContactLists)
}

// contactPart answers a change on a contact's page: htmx gets the changed
// section (part), a browser without JavaScript the whole page again (with the
// error, if any) or, after a success, a redirect to it.
func (p *Portal) contactPart(w http.ResponseWriter, r *http.Request, c store.Contact, status int,
	edit func(*views.ContactDetail), part func(views.ContactDetail) templ.Component) error {
	d, err := p.contactDetail(r, c)
	if err != nil {
		return err
	}
	if edit != nil {
		edit(&d)
	}
	switch {
	case isHTMX(r):
		// The changed section, and the timeline that now tells of the change.
		p.render(w, r, status, templ.Join(part(d), views.ContactActivity(d, true)))
	case status != http.StatusOK:
		p.render(w, r, status, views.ContactPage(p.shell(r, store.DisplayEmail(c.Email), views.NavContacts), d))
	default:
		p.redirect(w, r, "/contacts/"+strconv.FormatInt(c.ID, 10))
	}
	return nil
}

// entryMessage is the German message of one failed entry of a batch.
func entryMessage(err error) string {
	var ve *store.ValidationError
	var le *store.LimitError
	var ce *store.ConflictError
	switch {
	case errors.As(err, &ve):
		msgs := make([]string, 0, len(ve.Fields))
		for _, m := range ve.Fields {
			msgs = append(msgs, m)
		}
		slices.Sort(msgs)
		return strings.Join(msgs, " ")
	case errors.As(err, &le):
		return sprintf("Das Kontaktlimit Ihres Tarifs (%d) ist erreicht.", le.Max)
	case errors.As(err, &ce):
		return ce.Message
	case errors.Is(err, store.ErrNotFound):
		return "Nicht gefunden."
	}
	return "Fehlgeschlagen."
}

// exportContacts streams the contacts of the table's filter as CSV: every field,
// the custom fields as columns of their own, tags and lists. The store reads
// them a batch at a time, so the export's memory does not grow with the account.
func (p *Portal) exportContacts(w http.ResponseWriter, r *http.Request) error {
	f, sf := readContactFilter(r)
	if len(f.Errors) > 0 {
		return store.ErrNotFound
	}
	if err := p.segmentFilter(r, &f, &sf); err != nil {
		return err
	}
	keys, err := p.db.ExportCustomKeys(r.Context(), accountID(r), sf)
	if err != nil {
		return err
	}
	header := []string{"email", "first_name", "last_name", "address", "zip", "city", "phone", "note", "status", "source",
		"tags", "lists", "created_at", "updated_at"}
	for _, k := range keys {
		header = append(header, "custom:"+k)
	}
	started := false
	var cw *csv.Writer
	err = p.db.ExportContacts(r.Context(), accountID(r), sf, func(batch []store.Contact) error {
		if !started {
			started = true
			name := "kontakte-" + p.now().In(store.Berlin).Format("2006-01-02") + ".csv"
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write([]byte("\xef\xbb\xbf")) // a BOM, so that spreadsheet programs read UTF-8
			cw = csv.NewWriter(w)
			if err := cw.Write(header); err != nil {
				return err
			}
		}
		for _, c := range batch {
			lists := make([]string, len(c.Lists))
			for i, l := range c.Lists {
				lists[i] = l.Name
			}
			rec := []string{c.Email, c.FirstName, c.LastName, c.Address, c.Zip, c.City, c.Phone, c.Note, c.Status, c.Source,
				strings.Join(c.Tags, ", "), strings.Join(lists, ", "), c.CreatedAt.UTC().Format(time.RFC3339), c.UpdatedAt.UTC().Format(time.RFC3339)}
			strs := c.CustomFields.Strings()
			for _, k := range keys {
				rec = append(rec, strs[k])
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		return cw.Error()
	})
	if err != nil {
		if started {
			// The download has begun: it can only be cut off, which the browser
			// reports as a failed download.
			p.log.Error("export contacts", "account", accountID(r), "err", err)
			panic(http.ErrAbortHandler)
		}
		return err
	}
	if !started { // no contacts: the header alone
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="kontakte.csv"`)
		_, _ = w.Write([]byte("\xef\xbb\xbf"))
		cw = csv.NewWriter(w)
		_ = cw.Write(header)
		cw.Flush()
	}
	return nil
}
