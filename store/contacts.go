package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Contact statuses (api-v1.md "Contact status").
const (
	StatusSubscribed   = "subscribed"
	StatusUnsubscribed = "unsubscribed"
	StatusPending      = "pending"
)

// Contact sources: where a contact came from.
const (
	SourceApp         = "app"
	SourceImport      = "import"
	SourceAPI         = "api"
	SourceForm        = "form"
	SourceIntegration = "integration"
	SourceBooking     = "booking" // a booker of the appointment book
)

// Limits of a contact's fields.
const (
	maxTags           = 100
	maxTagLen         = 100
	maxCustomFields   = 100
	maxCustomKeyLen   = 50
	maxCustomValueLen = 5000
	maxListsPerInput  = 100
)

// Contact is a row of contacts with the lists it belongs to.
type Contact struct {
	ID             int64          `db:"id"`
	AccountID      int64          `db:"account_id"`
	Email          string         `db:"email"`
	FirstName      string         `db:"first_name"`
	LastName       string         `db:"last_name"`
	Address        string         `db:"address"`
	Zip            string         `db:"zip"`
	City           string         `db:"city"`
	Phone          string         `db:"phone"`
	Note           string         `db:"note"`
	Tags           pq.StringArray `db:"tags"`
	Status         string         `db:"status"`
	Source         string         `db:"source"`
	CustomFields   CustomFields   `db:"custom_fields"`
	DOIConfirmedAt *time.Time     `db:"doi_confirmed_at"`
	UnsubscribedAt *time.Time     `db:"unsubscribed_at"`
	CreatedAt      time.Time      `db:"created_at"`
	UpdatedAt      time.Time      `db:"updated_at"`
	Lists          ListRefs       `db:"lists"`
}

// ListRef is a list as a contact shows it.
type ListRef struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Color string `json:"color"`
}

// ListRefs is a contact's lists, read from the text array of contactLists.
type ListRefs []ListRef

// Scan reads the array contactLists builds: one "id,color,name" element per
// list. (A JSON aggregate cost PostgreSQL a sort per contact and Go a
// reflective decode per list; colors are #rrggbb, so the name is what follows
// the second comma, whatever it holds.)
func (l *ListRefs) Scan(src any) error {
	if src == nil {
		*l = nil
		return nil
	}
	if b, ok := src.([]byte); ok {
		if refs, ok := scanListRefs(b); ok {
			*l = refs
			return nil
		}
	}
	refs, err := listRefsViaPQ(src)
	if err != nil {
		return err
	}
	*l = refs
	return nil
}

// listRefsViaPQ reads contactLists' array through lib/pq's general array
// parser, then cuts each element: whatever scanListRefs does not read.
func listRefsViaPQ(src any) (ListRefs, error) {
	var elems pq.StringArray
	if err := elems.Scan(src); err != nil {
		return nil, fmt.Errorf("store: lists: %w", err)
	}
	refs := make(ListRefs, len(elems))
	for i, e := range elems {
		id, rest, ok1 := strings.Cut(e, ",")
		color, name, ok2 := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(id, 10, 64)
		if !ok1 || !ok2 || err != nil {
			return nil, fmt.Errorf("store: lists: malformed element %q", e)
		}
		refs[i] = ListRef{ID: n, Name: name, Color: color}
	}
	return refs, nil
}

// scanListRefs reads contactLists' array as PostgreSQL prints it, in one
// pass and without an intermediate []string: every element holds commas, so
// it is quoted, with " and \ escaped by a backslash. A contact page reads
// some 100 of these arrays, and lib/pq's general array parser was a tenth of
// the page's CPU. ok is false for anything else, which Scan hands to it.
func scanListRefs(b []byte) (_ ListRefs, ok bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	refs := make(ListRefs, 0, 1+bytes.Count(b, []byte(`","`)))
	if len(b) == 2 {
		return refs, true
	}
	var unescaped []byte
	for i := 1; ; {
		if b[i] != '"' {
			return nil, false
		}
		start, escaped := i+1, false
		for i++; i < len(b)-1 && b[i] != '"'; i++ {
			if b[i] == '\\' {
				escaped = true
				i++
			}
		}
		if i >= len(b)-1 {
			return nil, false
		}
		elem := b[start:i]
		if escaped {
			unescaped = unescaped[:0]
			for k := 0; k < len(elem); k++ {
				if elem[k] == '\\' {
					k++ // the scan above saw the escaped byte inside the element
				}
				unescaped = append(unescaped, elem[k])
			}
			elem = unescaped
		}
		ref, ok := parseListRef(elem)
		if !ok {
			return nil, false
		}
		refs = append(refs, ref)
		switch i++; {
		case b[i] == ',':
			i++
		case i == len(b)-1:
			return refs, true
		default:
			return nil, false
		}
	}
}

// parseListRef reads one "id,color,name" element.
func parseListRef(e []byte) (ListRef, bool) {
	var id int64
	i := 0
	for ; i < len(e) && '0' <= e[i] && e[i] <= '9'; i++ {
		d := int64(e[i] - '0')
		if id > (math.MaxInt64-d)/10 {
			return ListRef{}, false
		}
		id = id*10 + d
	}
	if i == 0 || i == len(e) || e[i] != ',' {
		return ListRef{}, false
	}
	color, name, ok := bytes.Cut(e[i+1:], []byte{','})
	if !ok {
		return ListRef{}, false
	}
	return ListRef{ID: id, Color: string(color), Name: string(name)}, true
}

// CustomFields maps a contact's own field names to values: string, json.Number or
// bool. Each key is usable as a placeholder in mails.
type CustomFields map[string]any

// Scan reads jsonb, keeping numbers exact.
func (c *CustomFields) Scan(src any) error {
	b, ok := src.([]byte)
	if !ok {
		return fmt.Errorf("store: custom fields: unexpected %T", src)
	}
	if string(b) == "{}" {
		*c = CustomFields{}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	m := map[string]any{}
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("store: custom fields: %w", err)
	}
	*c = m
	return nil
}

// Value writes jsonb.
func (c CustomFields) Value() (driver.Value, error) {
	if c == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]any(c))
}

// Strings returns the values as text, the form placeholders use.
func (c CustomFields) Strings() map[string]string {
	out := make(map[string]string, len(c))
	for k, v := range c {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool:
			out[k] = strconv.FormatBool(v)
		}
	}
	return out
}

func (c CustomFields) clone() CustomFields {
	out := make(CustomFields, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// equalCustomValue compares two custom field values by meaning: 1.0 equals 1.
func equalCustomValue(a, b any) bool {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	if aNum && bNum {
		ra, ok1 := new(big.Rat).SetString(na.String())
		rb, ok2 := new(big.Rat).SetString(nb.String())
		return ok1 && ok2 && ra.Cmp(rb) == 0
	}
	return a == b
}

// ContactData is a contact as event payloads carry it: exactly the Contact
// resource of the API.
type ContactData struct {
	ID             int64        `json:"id"`
	Email          string       `json:"email"`
	FirstName      string       `json:"first_name"`
	LastName       string       `json:"last_name"`
	Address        string       `json:"address"`
	Zip            string       `json:"zip"`
	City           string       `json:"city"`
	Phone          string       `json:"phone"`
	Note           string       `json:"note"`
	Tags           []string     `json:"tags"`
	Status         string       `json:"status"`
	Source         string       `json:"source"`
	CustomFields   CustomFields `json:"custom_fields"`
	DOIConfirmedAt *EventTime   `json:"doi_confirmed_at"`
	CreatedAt      EventTime    `json:"created_at"`
	UpdatedAt      EventTime    `json:"updated_at"`
	Lists          []ListRef    `json:"lists"`
}

// Data returns the contact as event payloads carry it.
func (c Contact) Data() ContactData {
	cf := c.CustomFields
	if cf == nil {
		cf = CustomFields{}
	}
	lists := []ListRef(c.Lists)
	if lists == nil {
		lists = []ListRef{}
	}
	return ContactData{
		ID: c.ID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Address: c.Address,
		Zip: c.Zip, City: c.City, Phone: c.Phone, Note: c.Note, Tags: nonNil(c.Tags), Status: c.Status,
		Source: c.Source, CustomFields: cf, DOIConfirmedAt: eventTimePtr(c.DOIConfirmedAt),
		CreatedAt: EventTime(c.CreatedAt), UpdatedAt: EventTime(c.UpdatedAt), Lists: lists,
	}
}

// ContactInput is what a caller may write of a contact. Nil pointers are not
// given and leave the field alone.
type ContactInput struct {
	Email     string
	FirstName *string
	LastName  *string
	Address   *string
	Zip       *string
	City      *string
	Phone     *string
	Note      *string
	// Tags are added to the contact's tags (never removed by an upsert).
	Tags []string
	// CustomFields are merged into the contact's; a nil value removes the key.
	CustomFields map[string]any
	// ListIDs are lists the contact joins (never left by an upsert).
	ListIDs []int64
	// Source is the origin (app, import, api, form, integration); default api.
	Source *string
	// Status asks for subscribed, unsubscribed or pending (pending sends a
	// confirmation mail). A blocked address stays unsubscribed.
	Status *string
	// DoubleOptIn asks for a confirmation even if no target list requires one
	// (a sign-up form with its own double opt-in flag).
	DoubleOptIn bool
	// SignUp marks the person's own sign-up on a public form. Only such a sign-up
	// with double opt-in sends a confirmation to a blocked or unsubscribed
	// address; its confirmation (ConfirmContact) lifts the block.
	SignUp bool
}

// ContactPatch is a partial change of a contact (PATCH): given fields are set,
// Tags and ListIDs replace the current ones, CustomFields are merged (nil value
// removes a key).
type ContactPatch struct {
	Email        *string
	FirstName    *string
	LastName     *string
	Address      *string
	Zip          *string
	City         *string
	Phone        *string
	Note         *string
	Tags         *[]string
	CustomFields map[string]any
	ListIDs      *[]int64
	Source       *string
	Status       *string
}

// builtinPlaceholder reports whether name is a built-in placeholder, which a
// custom field could never override.
func builtinPlaceholder(name string) bool {
	switch name {
	case "vorname", "first_name", "nachname", "last_name", "name", "full_name", "email",
		"adresse", "address", "plz", "zip", "ort", "city", "telefon", "phone", "notiz", "note",
		"datum", "date", "abmelde_link", "unsubscribe_url":
		return true
	}
	return false
}

func validCustomKey(k string) bool {
	if k == "" || len(k) > maxCustomKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// normText trims a given text field and checks its length.
func normText(errs Errs, field string, v *string, max int) {
	if v == nil {
		return
	}
	*v = strings.TrimSpace(*v)
	switch {
	case strings.ContainsRune(*v, 0):
		errs.Add(field, "Der Text enthält ein ungültiges Zeichen.")
	case len([]rune(*v)) > max:
		errs.Add(field, fmt.Sprintf("Höchstens %d Zeichen.", max))
	}
}

// normTags trims, checks and de-duplicates tags (first occurrence wins).
func normTags(errs Errs, field string, tags []string) []string {
	if tags == nil {
		return nil
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			errs.Add(field, "Ein Schlagwort darf nicht leer sein.")
			continue
		case strings.ContainsRune(t, 0):
			errs.Add(field, "Ein Schlagwort enthält ein ungültiges Zeichen.")
			continue
		case len([]rune(t)) > maxTagLen:
			errs.Add(field, fmt.Sprintf("Ein Schlagwort darf höchstens %d Zeichen lang sein.", maxTagLen))
			continue
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) > maxTags {
		errs.Add(field, fmt.Sprintf("Höchstens %d Schlagwörter pro Kontakt.", maxTags))
	}
	return out
}

// normCustomFields checks keys and values and brings values to string,
// json.Number, bool or nil (remove).
func normCustomFields(errs Errs, cf map[string]any) {
	if len(cf) > maxCustomFields {
		errs.Add("custom_fields", fmt.Sprintf("Höchstens %d eigene Felder pro Kontakt.", maxCustomFields))
		return
	}
	for k, v := range cf {
		field := "custom_fields." + k
		switch {
		case !validCustomKey(k):
			errs.Add("custom_fields", fmt.Sprintf("Der Feldname %q ist ungültig: 1 bis %d Zeichen aus a–z, 0–9, _ und -.", k, maxCustomKeyLen))
			continue
		case builtinPlaceholder(k):
			errs.Add(field, fmt.Sprintf("%q ist ein eingebauter Platzhalter und kann kein eigenes Feld sein.", k))
			continue
		}
		switch x := v.(type) {
		case nil, bool, json.Number:
		case string:
			if strings.ContainsRune(x, 0) {
				errs.Add(field, "Der Text enthält ein ungültiges Zeichen.")
			} else if len([]rune(x)) > maxCustomValueLen {
				errs.Add(field, fmt.Sprintf("Höchstens %d Zeichen.", maxCustomValueLen))
			}
		case float64:
			cf[k] = json.Number(strconv.FormatFloat(x, 'f', -1, 64))
		case int:
			cf[k] = json.Number(strconv.Itoa(x))
		case int64:
			cf[k] = json.Number(strconv.FormatInt(x, 10))
		default:
			errs.Add(field, "Erlaubt sind Text, Zahl, true/false oder null (entfernt das Feld).")
		}
	}
}

func normListIDs(errs Errs, field string, ids []int64) []int64 {
	if ids == nil {
		return nil
	}
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if id < 1 {
			errs.Add(field, "Listen-IDs sind positive ganze Zahlen.")
			continue
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) > maxListsPerInput {
		errs.Add(field, fmt.Sprintf("Höchstens %d Listen auf einmal.", maxListsPerInput))
	}
	return out
}

func validStatus(s string) bool {
	return s == StatusSubscribed || s == StatusUnsubscribed || s == StatusPending
}

func validSource(s string) bool {
	switch s {
	case SourceApp, SourceImport, SourceAPI, SourceForm, SourceIntegration, SourceBooking:
		return true
	}
	return false
}

// normStatusSource checks the optional status and source.
func normStatusSource(errs Errs, status, source *string) {
	if status != nil {
		*status = strings.TrimSpace(*status)
		if !validStatus(*status) {
			errs.Add("status", "Erlaubt sind subscribed, unsubscribed und pending.")
		}
	}
	if source != nil {
		*source = strings.TrimSpace(*source)
		if !validSource(*source) {
			errs.Add("source", "Erlaubt sind app, import, api, form und integration.")
		}
	}
}

// Normalize trims, lower-cases and checks the input; it returns a
// *ValidationError naming every invalid field.
func (in *ContactInput) Normalize() error {
	errs := Errs{}
	normEmail(errs, "email", &in.Email)
	in.normFields(errs)
	in.Tags = normTags(errs, "tags", in.Tags)
	normCustomFields(errs, in.CustomFields)
	in.ListIDs = normListIDs(errs, "list_ids", in.ListIDs)
	normStatusSource(errs, in.Status, in.Source)
	return errs.Err()
}

func (in *ContactInput) normFields(errs Errs) {
	normText(errs, "first_name", in.FirstName, 200)
	normText(errs, "last_name", in.LastName, 200)
	normText(errs, "address", in.Address, 300)
	normText(errs, "zip", in.Zip, 20)
	normText(errs, "city", in.City, 200)
	normText(errs, "phone", in.Phone, 50)
	normText(errs, "note", in.Note, 10000)
}

// Normalize checks a patch like ContactInput.Normalize.
func (p *ContactPatch) Normalize() error {
	errs := Errs{}
	if p.Email != nil {
		normEmail(errs, "email", p.Email)
	}
	in := p.input()
	in.normFields(errs)
	if p.Tags != nil {
		t := normTags(errs, "tags", *p.Tags)
		if t == nil {
			t = []string{}
		}
		p.Tags = &t
	}
	normCustomFields(errs, p.CustomFields)
	if p.ListIDs != nil {
		ids := normListIDs(errs, "list_ids", *p.ListIDs)
		if ids == nil {
			ids = []int64{}
		}
		p.ListIDs = &ids
	}
	normStatusSource(errs, p.Status, p.Source)
	return errs.Err()
}

// input is the patch as a ContactInput (text pointers shared, so normalising one
// normalises the other).
func (p *ContactPatch) input() ContactInput {
	in := ContactInput{
		FirstName: p.FirstName, LastName: p.LastName, Address: p.Address, Zip: p.Zip, City: p.City,
		Phone: p.Phone, Note: p.Note, CustomFields: p.CustomFields, Source: p.Source, Status: p.Status,
	}
	if p.Email != nil {
		in.Email = *p.Email
	}
	if p.Tags != nil {
		in.Tags = *p.Tags
	}
	if p.ListIDs != nil {
		in.ListIDs = *p.ListIDs
	}
	return in
}

const contactColumns = `c.id, c.account_id, c.email, c.first_name, c.last_name, c.address, c.zip, c.city, c.phone, c.note,
  c.tags, c.status, c.source, c.custom_fields, c.doi_confirmed_at, c.unsubscribed_at, c.created_at, c.updated_at`

// contactLists collects a contact's lists (ListRefs.Scan reads them) in list
// id order, which the index list_members_contact_idx yields without a sort.
const contactLists = `ARRAY(SELECT l.id::text || ',' || l.color || ',' || l.name
  FROM list_members m JOIN lists l ON l.id = m.list_id WHERE m.contact_id = c.id ORDER BY m.list_id) AS lists`

// appendContactDest appends the scan destinations of contactColumns, in order.
func appendContactDest(dest []any, c *Contact) []any {
	return append(dest, &c.ID, &c.AccountID, &c.Email, &c.FirstName, &c.LastName, &c.Address, &c.Zip, &c.City, &c.Phone, &c.Note,
		&c.Tags, &c.Status, &c.Source, &c.CustomFields, &c.DOIConfirmedAt, &c.UnsubscribedAt, &c.CreatedAt, &c.UpdatedAt)
}

// queryContacts runs a query whose columns are the before columns, then
// contactColumns, then (withLists) the contactLists column, and scans its rows
// without reflection (the listing's hot path). before are scanned anew on every
// row; callers keep the last values.
func queryContacts(ctx context.Context, q sqlx.QueryerContext, before []any, withLists bool, query string, args ...any) ([]Contact, error) {
	return appendContacts(ctx, nil, q, before, withLists, query, args...)
}

// appendContacts is queryContacts appending to out. Given room for the rows
// expected (a page), it allocates them once: appended one by one, 100
// contacts took 255 contacts' worth of allocations (some 85 KB per page).
func appendContacts(ctx context.Context, out []Contact, q sqlx.QueryerContext, before []any, withLists bool, query string, args ...any) ([]Contact, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// Rows are scanned in place into out, through one destination slice: a
	// page of 100 contacts allocated some 60 KB more when every row had its
	// own Contact and destinations.
	dest := make([]any, 0, len(before)+19)
	for rows.Next() {
		out = append(out, Contact{})
		c := &out[len(out)-1]
		dest = appendContactDest(append(dest[:0], before...), c)
		if withLists {
			dest = append(dest, &c.Lists)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// Contact returns one contact with its lists. Concurrent calls of an account
// share their statements (contacts_read.go); the look-up is prepared on the
// generic-plan pool: one round trip and no planning, where an unnamed
// statement took two (parse and describe, then bind and execute) and a plan
// each time.
func (db *DB) Contact(ctx context.Context, accountID, id int64) (Contact, error) {
	return db.readCombined(ctx, accountID, id)
}

const selectContactByEmail = `SELECT ` + contactColumns + `, ` + contactLists + ` FROM contacts c WHERE c.account_id = $1 AND c.email = $2`

// ContactByEmail returns the contact with an address (compared normalised).
func (db *DB) ContactByEmail(ctx context.Context, accountID int64, email string) (Contact, error) {
	var c Contact
	if err := db.GetContext(ctx, &c, selectContactByEmail, accountID, NormalizeEmail(email)); err != nil {
		return Contact{}, notFound("contact by email", err)
	}
	return c, nil
}

const selectContactsByID = `SELECT ` + contactColumns + `, ` + contactLists + ` FROM contacts c WHERE c.account_id = $1 AND c.id = ANY($2)`

// readContacts reads contacts with their lists inside tx, by id.
func readContacts(ctx context.Context, tx *sqlx.Tx, accountID int64, ids []int64) (map[int64]Contact, error) {
	out := make(map[int64]Contact, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := queryContacts(ctx, tx, nil, true, selectContactsByID, accountID, pq.Int64Array(ids))
	if err != nil {
		return nil, fmt.Errorf("store: read contacts: %w", err)
	}
	for _, c := range rows {
		out[c.ID] = c
	}
	return out, nil
}

// contactPageSQL reads one page of the contacts matching cond in order, with
// their lists; its parameters $limit and $limit+1 are LIMIT and OFFSET. The ids
// come first (an index-only scan of the sort index, also for deep offsets),
// then the rows they name, in the ids' order. The ids are collected into an
// array, so the plan of the rows does not depend on how many the planner
// expects: with LIMIT and OFFSET unknown, as in a generic plan, it expects a
// tenth of the account and would join them by hashing the whole table.
func contactPageSQL(cond, order string, limit int) string {
	return pageByIDs(fmt.Sprintf(`SELECT c.id FROM contacts c WHERE %s ORDER BY %s LIMIT $%d OFFSET $%d`, cond, order, limit, limit+1))
}

// pageByIDs reads the contacts whose ids the query ids returns, in its order.
func pageByIDs(ids string) string {
	return fmt.Sprintf(`SELECT %s, %s
FROM unnest(ARRAY(%s)) WITH ORDINALITY AS page(id, n)
JOIN contacts c ON c.id = page.id ORDER BY page.n`, contactColumns, contactLists, ids)
}

// memberPageSQL is contactPageSQL for a list's members sorted by creation
// ($2 the list, $3 and $4 LIMIT and OFFSET): the ids come from the list's own
// index (list_members_created_idx, migration 00017), whatever share of the
// account the list holds and wherever its members lie in the account's order.
func memberPageSQL(desc bool) string {
	order := "m.contact_created_at, m.contact_id"
	if desc {
		order = "m.contact_created_at DESC, m.contact_id DESC"
	}
	return pageByIDs(`SELECT m.contact_id FROM list_members m WHERE m.list_id = $2 AND m.account_id = $1
ORDER BY ` + order + ` LIMIT $3 OFFSET $4`)
}

// A list's members in another order than creation (updated_*, email_asc) have
// no index of their own: their ids come either from walking the account's sort
// index and keeping the members (about 1 µs a contact), or from reading all the
// list's members and sorting them (about 1.5 µs a member). The planner picks
// the walk whenever the list is a good share of the account, expecting its
// members spread evenly; but members imported together lie together, and in
// an account of a million contacts a list of 20,000 of them 880,000 deep in
// the order took 370 ms a page to walk to, a list of the 200,000 at the far
// end 1.1 s. So the walk gets a budget (memberWalkSQL), and a page the budget
// could not fill is read from the members (memberSortSQL): a page then costs
// in proportion to the list's size, not the account's (45 and 285 ms for
// those two lists), and an evenly spread list is still walked (3 ms). The
// price: a list clustered at a middling depth, which the walk would have
// reached a little sooner, pays the budget on top (74 against 59 ms for
// 20,000 members 100,000 deep).

// memberWalkBudget is how many contacts memberWalkSQL walks at most: four
// times what a page at this depth needs if the members ($2) are spread evenly
// over the account, at least the page's depth, and no more than the list has
// members, so that the walk never costs more than reading the members.
const memberWalkBudget = `coalesce((SELECT greatest($3::bigint + $4::bigint, least(m.n,
  4 * ($3::bigint + $4::bigint) * ` + contactTotal + ` / greatest(m.n, 1)))
  FROM (SELECT ` + listMembers + ` AS n FROM lists l WHERE l.account_id = $1 AND l.id = $2) m), 0)`

// memberWalkSQL is the ids query of a member page in order ($1 the account,
// $2 the list, $3 and $4 LIMIT and OFFSET) that walks the sort index within
// memberWalkBudget; a page shorter than LIMIT may have missed members beyond
// the budget. cols are the sort's columns, which the walk reads off the index.
func memberWalkSQL(cols, order string) string {
	return fmt.Sprintf(`SELECT c.id FROM (SELECT %s FROM contacts c WHERE c.account_id = $1 ORDER BY %s LIMIT %s) c
WHERE EXISTS (SELECT 1 FROM list_members m WHERE m.list_id = $2 AND m.contact_id = c.id)
ORDER BY %s LIMIT $3 OFFSET $4`, cols, order, memberWalkBudget, order)
}

// memberSortSQL is the ids query of a member page in order that reads all of
// the list's members and sorts them. The lateral subquery, which the planner
// may not flatten (OFFSET 0), looks each member up by its id, where a join was
// planned as a hash join over the whole account.
func memberSortSQL(cols, order string) string {
	return fmt.Sprintf(`SELECT c.id FROM list_members m
CROSS JOIN LATERAL (SELECT %s FROM contacts c WHERE c.account_id = $1 AND c.id = m.contact_id OFFSET 0) c
WHERE m.list_id = $2 AND m.account_id = $1 ORDER BY %s LIMIT $3 OFFSET $4`, cols, order)
}

// firstPageSQL is contactPageSQL for a page at offset 0 of a range of the sort
// index that cond takes whole (no condition rejects rows inside it): the rows
// are read straight off the index scan, which cost PostgreSQL 40 % less than
// looking up the ids one by one (274 against 458 us for 100 rows). Only at
// offset 0: rows an OFFSET skips would be read and projected too, lists and
// all, and a filter that rejects rows would fetch each rejected row's heap
// tuple where the id scan reads the index only. $limit is LIMIT.
func firstPageSQL(cond, order string, limit int) string {
	return fmt.Sprintf(`SELECT %s, %s FROM contacts c WHERE %s ORDER BY %s LIMIT $%d`, contactColumns, contactLists, cond, order, limit)
}

// Sort orders of the contact listing.
const (
	SortUpdatedAsc  = "updated_asc"
	SortUpdatedDesc = "updated_desc"
	SortCreatedAsc  = "created_asc"
	SortCreatedDesc = "created_desc"
	SortEmailAsc    = "email_asc"
	SortEmailDesc   = "email_desc"
	SortNameAsc     = "name_asc"
	SortNameDesc    = "name_desc"
)

// ContactFilter narrows and orders the contact listing; zero fields do not filter.
//
// Its JSON form is a segment's conditions (store/segments.go), so the portal's
// filter, segments, bulk actions and newsletter audiences share it.
type ContactFilter struct {
	ListID int64  `json:"list_id,omitempty"`
	Status string `json:"status,omitempty"`
	Tag    string `json:"tag,omitempty"`
	// Query searches email, first and last name (case-insensitive substring).
	Query string `json:"q,omitempty"`
	// Fields are conditions on custom fields; all must hold.
	Fields []FieldCondition `json:"fields,omitempty"`
	// CreatedFrom and CreatedTo keep contacts created in [from, to); the
	// Updated pair the same for the last change.
	CreatedFrom *time.Time `json:"created_from,omitempty"`
	CreatedTo   *time.Time `json:"created_to,omitempty"`
	UpdatedFrom *time.Time `json:"updated_from,omitempty"`
	UpdatedTo   *time.Time `json:"updated_to,omitempty"`
	// UpdatedAfter keeps contacts changed after this time (exclusive).
	UpdatedAfter *time.Time `json:"-"`
	// AfterID continues an updated_after sync behind the contact (UpdatedAfter,
	// AfterID): it keeps contacts with (updated_at, id) > (UpdatedAfter, AfterID).
	AfterID int64 `json:"-"`
	// Sort is one of the Sort constants; default created_desc, or updated_asc
	// with UpdatedAfter.
	Sort string `json:"-"`
}

// Validate checks the filter and fills in the default sort.
func (f *ContactFilter) Validate() error {
	errs := Errs{}
	if f.Sort == "" {
		f.Sort = SortCreatedDesc
		if f.UpdatedAfter != nil {
			f.Sort = SortUpdatedAsc
		}
	}
	if _, ok := sortOrder(f.Sort); !ok {
		errs.Add("sort", "Erlaubt sind updated_asc, updated_desc, created_asc, created_desc, email_asc, email_desc, name_asc und name_desc.")
	}
	if f.Status != "" && !validStatus(f.Status) {
		errs.Add("status", "Erlaubt sind subscribed, unsubscribed und pending.")
	}
	if f.AfterID != 0 {
		if f.UpdatedAfter == nil {
			errs.Add("after_id", "after_id gilt nur zusammen mit updated_after.")
		} else if f.Sort != SortUpdatedAsc {
			errs.Add("after_id", "after_id gilt nur mit sort=updated_asc.")
		}
	}
	if f.ListID < 0 {
		errs.Add("list_id", "Muss eine positive ganze Zahl sein.")
	}
	if strings.ContainsRune(f.Query+f.Tag, 0) {
		errs.Add("q", "Die Suche enthält ein ungültiges Zeichen.")
	}
	f.validateConditions(errs)
	return errs.Err()
}

func sortOrder(s string) (string, bool) {
	switch s {
	case SortUpdatedAsc:
		return "c.updated_at, c.id", true
	case SortUpdatedDesc:
		return "c.updated_at DESC, c.id DESC", true
	case SortCreatedAsc:
		return "c.created_at, c.id", true
	case SortCreatedDesc:
		return "c.created_at DESC, c.id DESC", true
	case SortEmailAsc:
		return "c.email", true
	case SortEmailDesc:
		return "c.email DESC", true
	case SortNameAsc:
		return "c.last_name, c.first_name, c.id", true
	case SortNameDesc:
		return "c.last_name DESC, c.first_name DESC, c.id DESC", true
	}
	return "", false
}

// sortColumns are the columns of a sort order (sortOrder), the id last.
func sortColumns(s string) string {
	switch s {
	case SortUpdatedAsc, SortUpdatedDesc:
		return "c.updated_at, c.id"
	case SortCreatedAsc, SortCreatedDesc:
		return "c.created_at, c.id"
	case SortNameAsc, SortNameDesc:
		return "c.last_name, c.first_name, c.id"
	}
	return "c.email, c.id"
}

// contactSearch is the condition of a contact search for q, a format whose
// %[1]d (and %[2]d) number its arguments. The first part is what the trigram
// index contacts_search_idx answers (every match of the per-field test after
// it is a substring of it); the second keeps the search to one field at a
// time. A domain written in Unicode is also searched in its stored ASCII form
// (asciiSearch), so "müller.de" finds info@xn--mller-kva.de.
func contactSearch(q string) (string, []any) {
	const all = "(c.email || ' ' || lower(c.first_name) || ' ' || lower(c.last_name))"
	const names = "lower(c.first_name) LIKE $%[1]d OR lower(c.last_name) LIKE $%[1]d OR lower(c.first_name || ' ' || c.last_name) LIKE $%[1]d"
	if a := asciiSearch(q); a != "" {
		return "(" + all + " LIKE $%[1]d OR " + all + " LIKE $%[2]d) AND (c.email LIKE $%[1]d OR c.email LIKE $%[2]d OR " + names + ")",
			[]any{likePattern(q), likePattern(a)}
	}
	return all + " LIKE $%[1]d AND (c.email LIKE $%[1]d OR " + names + ")", []any{likePattern(q)}
}

// Contacts lists one page of an account's contacts and the exact number of
// contacts the filter matches. The total costs nothing for the unfiltered and
// the per-list listing (maintained counters); an updated_after sync counts the
// smaller side of the cut; other filters count.
func (db *DB) Contacts(ctx context.Context, accountID int64, f ContactFilter, p Page) ([]Contact, int, error) {
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	order, _ := sortOrder(f.Sort)
	where := []string{"c.account_id = $1"}
	args := []any{accountID}
	add := func(cond string, v ...any) { where, args = addCond(where, args, cond, v...) }
	if f.ListID != 0 {
		add("EXISTS (SELECT 1 FROM list_members m WHERE m.list_id = $%d AND m.contact_id = c.id)", f.ListID)
	}
	if f.Status != "" {
		add("c.status = $%d", f.Status)
	}
	if f.Tag != "" {
		add("c.tags @> ARRAY[$%d]::text[]", strings.TrimSpace(f.Tag))
	}
	if strings.TrimSpace(f.Query) != "" {
		cond, v := contactSearch(f.Query)
		add(cond, v...)
	}
	if f.UpdatedAfter != nil {
		if f.AfterID != 0 {
			// The row comparison alone is estimated to match a good part of
			// the account, and the sync count (syncTotal) was then planned as
			// a parallel scan whose workers took 30 to 50 ms to start; the
			// redundant bound on updated_at gives the planner the range.
			add("(c.updated_at, c.id) > ($%[1]d, $%[2]d) AND c.updated_at >= $%[1]d", *f.UpdatedAfter, f.AfterID)
		} else {
			add("c.updated_at > $%d", *f.UpdatedAfter)
		}
	}
	where, args = filterConds(f, where, args)
	cond := strings.Join(where, " AND ")
	onlyList := f.ListID != 0 && f.Status == "" && f.Tag == "" && strings.TrimSpace(f.Query) == "" && f.UpdatedAfter == nil && !f.hasConditions()
	unfiltered := len(where) == 1
	sync := len(where) == 2 && f.UpdatedAfter != nil
	// A sync's range is whole in the sort index when it is sorted by updated_at.
	syncRange := sync && (f.Sort == SortUpdatedAsc || f.Sort == SortUpdatedDesc)
	memberPage := onlyList && (f.Sort == SortCreatedDesc || f.Sort == SortCreatedAsc)
	memberWalk := onlyList && !memberPage

	pageArgs := append(slices.Clone(args), p.PerPage, p.Offset())
	pageSQL := contactPageSQL(cond, order, len(pageArgs)-1)
	switch {
	case p.Offset() == 0 && (unfiltered || syncRange):
		pageArgs = pageArgs[:len(pageArgs)-1]
		pageSQL = firstPageSQL(cond, order, len(pageArgs))
	case memberPage:
		pageSQL = memberPageSQL(f.Sort == SortCreatedDesc)
	case memberWalk:
		pageSQL = pageByIDs(memberWalkSQL(sortColumns(f.Sort), order))
	}

	// One statement reads the page and its total, so both come from one
	// snapshot, in one round trip: the unfiltered and the per-list listing
	// read a maintained counter, an updated_after sync counts from the hourly
	// counts, any other filter counts its matches.
	total := contactTotal
	switch {
	case unfiltered:
	case onlyList:
		total = `(SELECT ` + listMembers + ` FROM lists l WHERE l.account_id = $1 AND l.id = $2)`
	case sync:
		total = syncTotal(cond)
	default:
		total = `(SELECT count(*) FROM contacts c WHERE ` + cond + `)`
	}
	if f.ListID != 0 && !onlyList {
		if _, err := db.List(ctx, accountID, f.ListID); err != nil {
			return nil, 0, err
		}
	}
	// The unfiltered listing has one query text per sort, and its plan does
	// not depend on the values: prepared on the generic-plan pool, a page
	// costs one round trip and no planning. So has a list's member page in
	// creation order, read off the list's own index. (A filter's values
	// matter to the plan of a filtered listing, as does a list's size when
	// its members are found by walking the account's contacts.)
	prepared := unfiltered || memberPage
	rows, n, err := db.contactPage(ctx, prepared, total, pageSQL, p, pageArgs, args)
	if err != nil || !memberWalk || len(rows) == p.PerPage || n <= p.Offset()+len(rows) {
		return rows, n, err
	}
	// The walk's budget ran out before it found the page's members.
	return db.contactPage(ctx, false, total, pageByIDs(memberSortSQL(sortColumns(f.Sort), order)), p, pageArgs, args)
}

// contactPage runs a page query of Contacts with the total as its first
// column (asked alone when the page is empty) and returns the page and the
// total; ErrNotFound when the total is NULL (the list does not exist).
func (db *DB) contactPage(ctx context.Context, prepared bool, total, pageSQL string, p Page, pageArgs, args []any) ([]Contact, int, error) {
	var t *int64
	q := strings.Replace(pageSQL, "SELECT ", "SELECT "+total+" AS total, ", 1)
	var qr sqlx.QueryerContext = db
	if prepared {
		if err := db.prepare(ctx, db.generic, q); err != nil {
			return nil, 0, err
		}
		qr = preparedDB{db}
	}
	rows, err := appendContacts(ctx, make([]Contact, 0, p.capacity()), qr, []any{&t}, true, q, pageArgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: contacts: %w", err)
	}
	if len(rows) > 0 {
		if t == nil {
			return nil, 0, ErrNotFound // the list does not exist
		}
		return rows, int(*t), nil
	}
	// No row to carry the total: ask for it alone.
	if err := db.GetContext(ctx, &t, `SELECT `+total, args...); err != nil {
		return nil, 0, fmt.Errorf("store: contacts: %w", err)
	}
	if t == nil {
		return nil, 0, ErrNotFound
	}
	return nil, int(*t), nil
}

// readSnapshot runs fn in a read-only repeatable-read transaction.
func (db *DB) readSnapshot(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// syncTotal counts the contacts behind an updated_after cut (cond: $1 is the
// account, $2 the cut's time) exactly without reading them all: the whole hours
// after the cut's hour from the counts the triggers of migration 00015 keep,
// and the contacts of the cut's own hour from the index.
func syncTotal(cond string) string {
	return `(SELECT coalesce((SELECT sum(h.contacts) FROM contact_update_hours h
  WHERE h.account_id = $1 AND h.hour > date_trunc('hour', $2::timestamptz AT TIME ZONE 'UTC')), 0)::bigint
  + (SELECT count(*) FROM contacts c WHERE ` + cond + `
    AND c.updated_at < (date_trunc('hour', $2::timestamptz AT TIME ZONE 'UTC') + interval '1 hour') AT TIME ZONE 'UTC'))`
}

// Tag is a tag and the number of contacts that carry it.
type Tag struct {
	Name  string `db:"name"`
	Count int64  `db:"count"`
}

const selectTags = `SELECT tag AS name, sum(contacts)::bigint AS count FROM contact_tag_counts
WHERE account_id = $1 GROUP BY tag HAVING sum(contacts) > 0 ORDER BY tag LIMIT $2 OFFSET $3`

const countTags = `SELECT count(*) FROM (SELECT 1 FROM contact_tag_counts
WHERE account_id = $1 GROUP BY tag HAVING sum(contacts) > 0) t`

// Tags lists an account's tags by name with the number of contacts per tag,
// from the counts every contact change maintains (contact_tag_counts): the
// cost grows with the number of tags, not of contacts.
func (db *DB) Tags(ctx context.Context, accountID int64, p Page) ([]Tag, int, error) {
	var out []Tag
	var total int
	err := db.readSnapshot(ctx, func(tx *sqlx.Tx) error {
		if err := tx.SelectContext(ctx, &out, selectTags, accountID, p.PerPage, p.Offset()); err != nil {
			return fmt.Errorf("store: tags: %w", err)
		}
		if err := tx.GetContext(ctx, &total, countTags, accountID); err != nil {
			return fmt.Errorf("store: tags: %w", err)
		}
		return nil
	})
	return out, total, err
}

const lockContactsForDelete = `SELECT ` + contactColumns + `, ` + contactLists + ` FROM contacts c
WHERE c.account_id = $1 AND c.id = ANY($2) ORDER BY c.id FOR UPDATE OF c`

const deleteContacts = `DELETE FROM contacts WHERE account_id = $1 AND id = ANY($2)`

// decrementListMembers counts deleted contacts off their lists ($2, sorted:
// $3 fewer members each), in this connection's stripe of each
// (list_member_counts).
const decrementListMembers = `INSERT INTO list_member_counts AS s (list_id, stripe, account_id, members)
SELECT l.id, pg_backend_pid() % 32, $1, -x.n FROM unnest($2::bigint[], $3::bigint[]) AS x(id, n)
JOIN lists l ON l.account_id = $1 AND l.id = x.id
ORDER BY l.id
ON CONFLICT (list_id, stripe) DO UPDATE SET members = s.members + excluded.members`

// contactTotal is the number of contacts of account $1: the base in
// account_usage plus the stripes of account_contact_counts (migration 00012).
const contactTotal = `(SELECT u.contacts + coalesce((SELECT sum(s.contacts) FROM account_contact_counts s
  WHERE s.account_id = u.account_id), 0)::bigint FROM account_usage u WHERE u.account_id = $1)`

// removeContactCounts takes deleted contacts ($6 of them) off the contact
// counter, off the days they were created ($4, sorted: $5 fewer each;
// contact_days) and their tags ($2, sorted) off the tag counts ($3, negative),
// like addTagCounts.
const removeContactCounts = `WITH tags AS (
  INSERT INTO contact_tag_counts AS t (account_id, tag, stripe, contacts)
  SELECT $1, x.tag, pg_backend_pid() % 32, x.d FROM unnest($2::text[], $3::bigint[]) AS x(tag, d)
  ORDER BY x.tag
  ON CONFLICT (account_id, tag, stripe) DO UPDATE SET contacts = t.contacts + excluded.contacts
), days AS (
  INSERT INTO contact_days AS d (account_id, day, stripe, contacts)
  SELECT $1, x.day, pg_backend_pid() % 32, -x.n FROM unnest($4::date[], $5::bigint[]) AS x(day, n)
  ORDER BY x.day
  ON CONFLICT (account_id, day, stripe) DO UPDATE SET contacts = d.contacts + excluded.contacts
)
SELECT add_account_contacts($1, -$6::bigint)`

// DeleteContact deletes a contact, its memberships and confirmation tokens, and
// emits contact.deleted. A blocked address stays blocked.
func (db *DB) DeleteContact(ctx context.Context, accountID int64, actor Actor, id int64) error {
	if err := actor.valid(); err != nil {
		return err
	}
	return db.retryTx(ctx, func(tx *sqlx.Tx) error { return deleteContactTx(ctx, tx, accountID, actor, id) })
}

// deleteContactTx is DeleteContact inside tx.
func deleteContactTx(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, id int64) error {
	n, err := deleteContactsTx(ctx, tx, accountID, actor, []int64{id})
	if err == nil && n == 0 {
		err = fmt.Errorf("store: delete contact: %w", ErrNotFound)
	}
	return err
}

// deleteContactsTx deletes contacts of an account inside tx, in ascending id
// order, with one contact.deleted event and one activity each, their lists,
// tags, days and the account's total counted down: the one delete path of
// single and bulk deletes (store/bulk.go). Ids that name no contact (deleted
// meanwhile) are skipped; it returns how many it deleted. However many
// contacts, it takes the same six statements.
func deleteContactsTx(ctx context.Context, tx *sqlx.Tx, accountID int64, actor Actor, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	cs, err := queryContacts(ctx, tx, nil, true, lockContactsForDelete, accountID, pq.Int64Array(ids))
	if err != nil {
		return 0, fmt.Errorf("store: delete contacts: %w", err)
	}
	if len(cs) == 0 {
		return 0, nil
	}
	gone := make(pq.Int64Array, len(cs))
	events := make([]Event, len(cs))
	acts := make([]ActivityEntry, len(cs))
	lists, days, tags := map[int64]int64{}, map[string]int64{}, tagDeltas{}
	for i, c := range cs {
		gone[i] = c.ID
		events[i] = Event{Name: EventContactDeleted, Data: ContactEventData{Contact: c.Data()}}
		acts[i] = ActivityEntry{Action: "contact.deleted", ObjectType: ObjectContact, ObjectID: c.ID, Details: map[string]any{"email": c.Email}}
		for _, l := range c.Lists {
			lists[l.ID]++
		}
		days[Day(c.CreatedAt)]++
		tags.change(c.Tags, nil)
	}
	if _, err := tx.ExecContext(ctx, deleteContacts, accountID, gone); err != nil {
		return 0, fmt.Errorf("store: delete contacts: %w", err)
	}
	if len(lists) > 0 {
		listIDs, counts := sortedCounts(lists)
		if _, err := tx.ExecContext(ctx, decrementListMembers, accountID, pq.Int64Array(listIDs), counts); err != nil {
			return 0, fmt.Errorf("store: delete contacts: %w", err)
		}
	}
	if _, err := EmitAll(ctx, tx, accountID, events); err != nil {
		return 0, err
	}
	if err := LogActivities(ctx, tx, accountID, actor, acts); err != nil {
		return 0, err
	}
	dayList, dayCounts := sortedCounts(days)
	names, counts := tags.args()
	if _, err := tx.ExecContext(ctx, removeContactCounts, accountID, names, counts, pq.StringArray(dayList), dayCounts, len(cs)); err != nil {
		return 0, fmt.Errorf("store: delete contacts: %w", err)
	}
	return int64(len(cs)), nil
}

// sortedCounts returns the keys of m in order, and their counts in the same
// order: counter updates take their rows in one order, so that concurrent
// ones cannot deadlock.
func sortedCounts[K cmp.Ordered](m map[K]int64) ([]K, pq.Int64Array) {
	keys := slices.Sorted(maps.Keys(m))
	counts := make(pq.Int64Array, len(keys))
	for i, k := range keys {
		counts[i] = m[k]
	}
	return keys, counts
}

// retryTx runs fn in a transaction and repeats it (up to three times in all)
// when PostgreSQL aborted it for a deadlock or a serialization failure, which
// concurrent bulk changes of overlapping contacts can cause.
func (db *DB) retryTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return retryTxOn(ctx, db.DB, fn)
}

// retryTxOn is retryTx on one of the pools.
func retryTxOn(ctx context.Context, pool *sqlx.DB, fn func(tx *sqlx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := withTxOn(ctx, pool, fn)
		var pqErr *pq.Error
		if err == nil || attempt == 3 || !errors.As(err, &pqErr) || (pqErr.Code != "40P01" && pqErr.Code != "40001") {
			return err
		}
	}
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "23505"
}
