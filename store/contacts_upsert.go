package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// This file holds the one write path of contacts: every change of a contact's
// fields, tags, lists or status (upsert, bulk, patch, unsubscribe, tags, list
// members, blocking) is a batch of contactOps applied by applyOps. It is
// set-based: a batch of 1000 contacts costs the same dozen statements as one.

// Payloads of the contact events (api-v1.md "Event kinds with payloads").
type (
	// ContactEventData is the data of contact.created and contact.deleted.
	ContactEventData struct {
		Contact ContactData `json:"contact"`
	}
	// ContactUpdatedData is the data of contact.updated.
	ContactUpdatedData struct {
		Contact ContactData `json:"contact"`
		Changed []string    `json:"changed"`
	}
	// ContactUnsubscribedData is the data of contact.unsubscribed.
	ContactUnsubscribedData struct {
		Contact    ContactData `json:"contact"`
		Email      string      `json:"email"`
		Source     string      `json:"source"`
		Reason     *string     `json:"reason"`
		CampaignID *int64      `json:"campaign_id"`
	}
	// ListEventData is the data of list.joined and list.left.
	ListEventData struct {
		List    ListEventRef `json:"list"`
		Contact ContactData  `json:"contact"`
	}
	// ListEventRef is the list in list.joined and list.left.
	ListEventRef struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
)

// Unsubscribe says how a contact unsubscribed or an address was blocked.
type Unsubscribe struct {
	// Source: link, one_click, manual, api, import, bounce or complaint.
	Source     string
	Reason     string // optional free text
	CampaignID int64  // optional: the campaign whose link was used
}

// Unsubscribe sources.
const (
	UnsubLink      = "link"
	UnsubOneClick  = "one_click"
	UnsubManual    = "manual"
	UnsubAPI       = "api"
	UnsubImport    = "import"
	UnsubBounce    = "bounce"
	UnsubComplaint = "complaint"
)

func validUnsubSource(s string) bool {
	switch s {
	case UnsubLink, UnsubOneClick, UnsubManual, UnsubAPI, UnsubImport, UnsubBounce, UnsubComplaint:
		return true
	}
	return false
}

// UpsertResult is the outcome of one upsert.
type UpsertResult struct {
	Contact Contact
	Created bool
	// Changed names the fields an existing contact changed (empty: nothing did).
	Changed []string
	// Joined are the lists the contact newly joined.
	Joined []int64
}

// contactOp is one requested change of one contact.
type contactOp struct {
	in        ContactInput // normalised; Email "" keeps the address of a byID op
	byID      int64        // match the contact by id instead of by address
	setTags   bool         // in.Tags replace the tags
	setLists  bool         // in.ListIDs replace the memberships
	rmTags    []string     // tags to remove (each must be present)
	rmLists   []int64      // lists to leave (each must be a member)
	noCreate  bool         // a missing contact is ErrNotFound, not created
	newSource string       // source of a created contact when in.Source is not given
	strict    bool         // a status the contact cannot take is a conflict, not ignored
	unsub     Unsubscribe  // how, when the op unsubscribes the contact
	inputErr  error        // validation error found before the transaction
	formID    int64        // a sign-up through this form: counted with the change

	// Set by applyOps (reset on a retry).
	err       error
	primary   *contactOp // an earlier op of the batch for the same address
	cur       *lockedContact
	next      Contact
	created   bool
	changed   []string
	join      []int64
	leave     []int64
	needDOI   bool
	unsubNow  bool // became unsubscribed: contact.unsubscribed
	block     bool // make sure the address is blocked
	final     Contact
	emailDiff bool
}

func (op *contactOp) reset() {
	*op = contactOp{in: op.in, byID: op.byID, setTags: op.setTags, setLists: op.setLists,
		rmTags: op.rmTags, rmLists: op.rmLists, noCreate: op.noCreate, newSource: op.newSource, strict: op.strict, unsub: op.unsub, inputErr: op.inputErr,
		formID: op.formID}
}

func (op *contactOp) failed() bool { return op.inputErr != nil || op.err != nil }

// lockedContact is a contact locked for change, with its current list ids.
type lockedContact struct {
	Contact
	ListIDs []int64
}

// listInfo is what applyOps needs to know of a target list.
type listInfo struct {
	ID          int64  `db:"id"`
	Name        string `db:"name"`
	Color       string `db:"color"`
	DoubleOptIn bool   `db:"double_opt_in"`
}

const lockLists = `SELECT id, name, color, double_opt_in FROM lists WHERE account_id = $1 AND id = ANY($2) ORDER BY id FOR KEY SHARE`

const lockContacts = `SELECT ` + contactColumns + `, ` + contactLists + `
FROM contacts c WHERE c.account_id = $1 AND (c.email = ANY($2) OR c.id = ANY($3)) ORDER BY c.email FOR UPDATE OF c`

// lockContactsBlockedSQL is lockContacts and selectBlocked (for the addresses
// asked for and those of the contacts asked for by id) in one round trip: the
// blocked addresses come as extra rows with id 0 and only the email set.
const lockContactsBlockedSQL = `WITH l AS (
  SELECT ` + contactColumns + `, ` + contactLists + `
  FROM contacts c WHERE c.account_id = $1 AND (c.email = ANY($2) OR c.id = ANY($3)) ORDER BY c.email FOR UPDATE OF c
)
SELECT l.* FROM l
UNION ALL
SELECT 0, $1, b.email, '', '', '', '', '', '', '', '{}'::text[], '', '', '{}'::jsonb, NULL::timestamptz, NULL::timestamptz,
  now(), now(), '{}'::text[]
FROM blocked_addresses b WHERE b.account_id = $1 AND b.email = ANY($2::text[] || ARRAY(SELECT l.email FROM l))`

const selectContactHeadroom = `SELECT p.max_contacts - ` + contactTotal + ` FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = $1`

const insertContacts = `INSERT INTO contacts AS c (account_id, email, first_name, last_name, address, zip, city, phone, note,
  tags, status, source, custom_fields, unsubscribed_at)
SELECT $1, x.email, x.first_name, x.last_name, x.address, x.zip, x.city, x.phone, x.note,
  x.tags, x.status, x.source, x.custom_fields, CASE WHEN x.status = 'unsubscribed' THEN now() END
FROM jsonb_to_recordset($2::jsonb) AS x(email text, first_name text, last_name text, address text, zip text, city text,
  phone text, note text, tags text[], status text, source text, custom_fields jsonb)
ORDER BY x.email
ON CONFLICT (account_id, email) DO NOTHING
RETURNING ` + contactColumns

const updateContacts = `UPDATE contacts c SET email = x.email, first_name = x.first_name, last_name = x.last_name,
  address = x.address, zip = x.zip, city = x.city, phone = x.phone, note = x.note, tags = x.tags,
  status = x.status, source = x.source, custom_fields = x.custom_fields,
  unsubscribed_at = CASE WHEN x.status = 'unsubscribed' THEN coalesce(c.unsubscribed_at, now()) END,
  updated_at = now()
FROM jsonb_to_recordset($2::jsonb) AS x(id bigint, email text, first_name text, last_name text, address text, zip text,
  city text, phone text, note text, tags text[], status text, source text, custom_fields jsonb)
WHERE c.account_id = $1 AND c.id = x.id
RETURNING ` + contactColumns

const insertMembers = `INSERT INTO list_members (list_id, contact_id, account_id)
SELECT x.l, x.c, $1 FROM unnest($2::bigint[], $3::bigint[]) AS x(l, c) ORDER BY x.l, x.c
ON CONFLICT DO NOTHING RETURNING list_id`

const deleteMembers = `DELETE FROM list_members m USING unnest($2::bigint[], $3::bigint[]) AS x(l, c)
WHERE m.account_id = $1 AND m.list_id = x.l AND m.contact_id = x.c RETURNING m.list_id`

// updateMemberCounts adds member count changes ($3) of lists ($2, sorted: rows
// are locked in one order) to this connection's stripe (list_member_counts,
// migration 00030), not to the list's row, which every writer would queue on.
const updateMemberCounts = `INSERT INTO list_member_counts AS s (list_id, stripe, account_id, members)
SELECT x.id, pg_backend_pid() % 32, $1, x.d FROM unnest($2::bigint[], $3::bigint[]) AS x(id, d)
ORDER BY x.id
ON CONFLICT (list_id, stripe) DO UPDATE SET members = s.members + excluded.members`

const insertBlocks = `WITH ins AS (
  INSERT INTO blocked_addresses (account_id, email, source, reason, campaign_id)
  SELECT $1, x.e, x.s, nullif(x.r, ''), nullif(x.c, 0) FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS x(e, s, r, c)
  ORDER BY x.e ON CONFLICT (account_id, email) DO NOTHING RETURNING email, source, campaign_id
), ` + countUnsubscribes + `
SELECT count(*) FROM ins`

// contactRow is a contact as the insert and update statements read it.
type contactRow struct {
	ID           int64        `json:"id,omitempty"`
	Email        string       `json:"email"`
	FirstName    string       `json:"first_name"`
	LastName     string       `json:"last_name"`
	Address      string       `json:"address"`
	Zip          string       `json:"zip"`
	City         string       `json:"city"`
	Phone        string       `json:"phone"`
	Note         string       `json:"note"`
	Tags         []string     `json:"tags"`
	Status       string       `json:"status"`
	Source       string       `json:"source"`
	CustomFields CustomFields `json:"custom_fields"`
}

func rowOf(c Contact) contactRow {
	cf := c.CustomFields
	if cf == nil {
		cf = CustomFields{}
	}
	return contactRow{ID: c.ID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Address: c.Address,
		Zip: c.Zip, City: c.City, Phone: c.Phone, Note: c.Note, Tags: nonNil(c.Tags), Status: c.Status,
		Source: c.Source, CustomFields: cf}
}

// applyOps applies a batch of contact changes inside tx: it locks what it
// changes, decides every op (op.err for an op that fails alone), writes the rows,
// memberships, confirmation mails and blocks set-based, and records events,
// activities and the contact counter. An error return fails the whole batch.
//
// In a batch (bulk, list import) a new contact over the plan limit fails alone; a
// single op over the limit fails the call.
func applyOps(ctx context.Context, tx querier, accountID int64, actor Actor, ops []*contactOp, batch bool) error {
	live := liveOps(ops)
	if len(live) == 0 {
		return nil
	}
	primaries := mergeSameContact(live)
	lists, err := lockTargetLists(ctx, tx, accountID, primaries)
	if err != nil {
		return err
	}
	emails, ids := contactKeys(primaries)
	locked, blocked, err := lockContactsAndBlocked(ctx, tx, accountID, emails, ids)
	if err != nil {
		return err
	}
	primaries, creates := decideOps(primaries, locked, blocked, lists)

	// A batch takes as many new contacts as the plan has room for; the rest fail
	// alone. (The counter update at the end re-checks under its row lock.)
	if batch && len(creates) > 0 {
		var headroom int64
		if err := tx.GetContext(ctx, &headroom, selectContactHeadroom, accountID); err != nil {
			return fmt.Errorf("store: upsert contacts: %w", err)
		}
		if int64(len(creates)) > headroom {
			plan, err := accountPlan(ctx, tx, accountID)
			if err != nil {
				return err
			}
			for i, op := range creates {
				if int64(i) >= max(headroom, 0) {
					op.err = &LimitError{Limit: "contacts", Max: plan.MaxContacts, UpgradeURL: plan.UpgradeURL}
				}
			}
		}
	}

	insert := insertNew
	if batch {
		insert = insertNewCopy
	}
	inserted, err := insert(ctx, tx, accountID, creates, blocked, lists)
	if err != nil {
		return err
	}
	if err := writeUpdates(ctx, tx, accountID, primaries); err != nil {
		return err
	}
	if err := writeMemberships(ctx, tx, accountID, primaries); err != nil {
		return err
	}
	if err := skipRecentConfirmations(ctx, tx, accountID, primaries); err != nil {
		return err
	}
	if err := queueConfirmations(ctx, plainTx(tx), accountID, primaries); err != nil {
		return err
	}
	if err := writeBlocks(ctx, tx, accountID, primaries); err != nil {
		return err
	}

	for _, op := range primaries {
		if op.err == nil && op.formID != 0 {
			if _, err := tx.ExecContext(ctx, countFormSubmission, accountID, op.formID); err != nil {
				return fmt.Errorf("store: count form submission: %w", err)
			}
		}
	}

	var events []Event
	var acts []ActivityEntry
	tags := tagDeltas{}
	for _, op := range primaries {
		if op.err != nil {
			continue
		}
		var before []string
		if op.cur != nil && !op.created {
			before = op.cur.Tags
		}
		tags.change(before, op.final.Tags)
		finalLists(op, lists)
		if events, acts, err = appendOpRecords(events, acts, op, lists); err != nil {
			return err
		}
	}
	for _, op := range live {
		if p := op.primary; p != nil {
			op.err, op.final = p.err, p.final
		}
	}
	// Events, activities and the contact counter in one statement, the last of
	// the transaction, so that the account's counter row is locked only until
	// commit.
	write := writeRecords
	if batch {
		write = writeRecordsCopy
	}
	ok, err := write(ctx, tx, accountID, actor, events, acts, tags, inserted)
	if err != nil {
		return err
	}
	if !ok {
		plan, err := accountPlan(ctx, tx, accountID)
		if err != nil {
			return err
		}
		return &LimitError{Limit: "contacts", Max: plan.MaxContacts, UpgradeURL: plan.UpgradeURL}
	}
	return nil
}

// liveOps are the ops that have not failed yet.
func liveOps(ops []*contactOp) []*contactOp {
	live := make([]*contactOp, 0, len(ops))
	for _, op := range ops {
		if !op.failed() {
			live = append(live, op)
		}
	}
	return live
}

// mergeSameContact makes several ops for one address (or one id) act as one,
// in order: the first is the primary, the later ones are merged into it. It
// returns the primaries.
func mergeSameContact(live []*contactOp) []*contactOp {
	byKey := map[string]*contactOp{}
	primaries := make([]*contactOp, 0, len(live))
	for _, op := range live {
		key := op.in.Email
		if op.byID != 0 {
			key = "#" + strconv.FormatInt(op.byID, 10)
		}
		if p := byKey[key]; p != nil {
			op.primary = p
			mergeInto(p, op)
			continue
		}
		byKey[key] = op
		primaries = append(primaries, op)
	}
	return primaries
}

// contactKeys are the addresses and ids the ops name.
func contactKeys(ops []*contactOp) (emails []string, ids []int64) {
	emails = make([]string, 0, len(ops))
	for _, op := range ops {
		if op.in.Email != "" {
			emails = append(emails, op.in.Email)
		}
		if op.byID != 0 {
			ids = append(ids, op.byID)
		}
	}
	return emails, ids
}

// decideOps resolves each op to its contact (an op naming a contact an
// earlier op already names, once by id and once by address, joins that op),
// then plans each change. It returns the primaries left and the planned new
// contacts.
func decideOps(primaries []*contactOp, locked lockedSet, blocked map[string]bool, lists map[int64]listInfo) (kept, creates []*contactOp) {
	claimed := map[int64]*contactOp{}
	curOf := map[*contactOp]*lockedContact{}
	kept = primaries[:0:0]
	for _, op := range primaries {
		if op.err != nil {
			kept = append(kept, op)
			continue
		}
		cur := locked.byEmail[op.in.Email]
		if op.byID != 0 {
			cur = locked.byID[op.byID]
			if cur != nil && op.in.Email != "" && op.in.Email != cur.Email {
				if other := locked.byEmail[op.in.Email]; other != nil && other.ID != cur.ID {
					op.err = &ConflictError{Reason: "email_taken", Message: "Ein anderer Kontakt hat schon diese E-Mail-Adresse."}
					kept = append(kept, op)
					continue
				}
			}
		}
		if cur != nil {
			if p := claimed[cur.ID]; p != nil {
				op.primary = p
				mergeInto(p, op)
				continue
			}
			claimed[cur.ID] = op
		}
		curOf[op] = cur
		kept = append(kept, op)
	}
	for _, op := range kept {
		if op.err != nil {
			continue
		}
		cur := curOf[op]
		switch {
		case cur != nil:
			planUpdate(op, cur, blocked, lists)
		case op.byID != 0 || op.noCreate:
			op.err = ErrNotFound
		default:
			planCreate(op, blocked, lists)
			creates = append(creates, op)
		}
	}
	return kept, creates
}

// countFormSubmission counts a sign-up on its form, in the sign-up's transaction.
const countFormSubmission = `UPDATE forms SET submissions = submissions + 1 WHERE account_id = $1 AND id = $2`

// ConfirmationCooldown is how long after a confirmation mail a contact gets no
// other one: signing up again and again with a pending address must not turn
// the service into a mail cannon against that address.
const ConfirmationCooldown = 10 * time.Minute

const selectRecentConfirmations = `SELECT DISTINCT contact_id FROM doi_tokens
WHERE account_id = $1 AND contact_id = ANY($2) AND created_at > now() - $3 * interval '1 second'`

// skipRecentConfirmations drops the confirmation mail of existing contacts
// that got one within ConfirmationCooldown (the earlier link still works).
func skipRecentConfirmations(ctx context.Context, tx querier, accountID int64, ops []*contactOp) error {
	var ids []int64
	for _, op := range ops {
		if op.err == nil && op.needDOI && op.cur != nil {
			ids = append(ids, op.cur.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var recent []int64
	if err := tx.SelectContext(ctx, &recent, selectRecentConfirmations, accountID, pq.Int64Array(ids),
		int64(ConfirmationCooldown/time.Second)); err != nil {
		return fmt.Errorf("store: recent confirmations: %w", err)
	}
	for _, op := range ops {
		if op.err == nil && op.needDOI && op.cur != nil && slices.Contains(recent, op.cur.ID) {
			op.needDOI = false
		}
	}
	return nil
}

// mergeInto folds a later op for the same address into the first one: given
// fields override, tags, lists and custom fields accumulate.
func mergeInto(p, op *contactOp) {
	for _, f := range []struct{ dst, src **string }{
		{&p.in.FirstName, &op.in.FirstName}, {&p.in.LastName, &op.in.LastName}, {&p.in.Address, &op.in.Address},
		{&p.in.Zip, &op.in.Zip}, {&p.in.City, &op.in.City}, {&p.in.Phone, &op.in.Phone}, {&p.in.Note, &op.in.Note},
		{&p.in.Source, &op.in.Source}, {&p.in.Status, &op.in.Status},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	for _, t := range op.in.Tags {
		if !slices.Contains(p.in.Tags, t) {
			p.in.Tags = append(p.in.Tags, t)
		}
	}
	for _, id := range op.in.ListIDs {
		if !slices.Contains(p.in.ListIDs, id) {
			p.in.ListIDs = append(p.in.ListIDs, id)
		}
	}
	if len(op.in.CustomFields) > 0 && p.in.CustomFields == nil {
		p.in.CustomFields = map[string]any{}
	}
	for k, v := range op.in.CustomFields {
		p.in.CustomFields[k] = v
	}
	p.in.DoubleOptIn = p.in.DoubleOptIn || op.in.DoubleOptIn
	p.in.SignUp = p.in.SignUp || op.in.SignUp
}

func lockTargetLists(ctx context.Context, tx querier, accountID int64, ops []*contactOp) (map[int64]listInfo, error) {
	var ids []int64
	for _, op := range ops {
		for _, id := range slices.Concat(op.in.ListIDs, op.rmLists) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	lists := make(map[int64]listInfo, len(ids))
	if len(ids) == 0 {
		return lists, nil
	}
	var rows []listInfo
	if err := tx.SelectContext(ctx, &rows, lockLists, accountID, pq.Int64Array(ids)); err != nil {
		return nil, fmt.Errorf("store: lists of contacts: %w", err)
	}
	for _, l := range rows {
		lists[l.ID] = l
	}
	for _, op := range ops {
		for _, id := range op.in.ListIDs {
			if _, ok := lists[id]; !ok {
				op.err = Invalid("list_ids", fmt.Sprintf("Die Liste %d gibt es nicht.", id))
				break
			}
		}
		for _, id := range op.rmLists {
			if _, ok := lists[id]; !ok {
				op.err = ErrNotFound
			}
		}
	}
	return lists, nil
}

type lockedSet struct {
	byEmail map[string]*lockedContact
	byID    map[int64]*lockedContact
}

// add files a contact read under its address and id, with its list ids.
func (s lockedSet) add(r *lockedContact) {
	r.ListIDs = make([]int64, len(r.Lists))
	for j, l := range r.Lists {
		r.ListIDs[j] = l.ID
	}
	s.byEmail[r.Email], s.byID[r.ID] = r, r
}

func lockContactRows(ctx context.Context, tx querier, accountID int64, emails []string, ids []int64) (lockedSet, error) {
	s := lockedSet{byEmail: map[string]*lockedContact{}, byID: map[int64]*lockedContact{}}
	cs, err := queryContacts(ctx, tx, nil, true, lockContacts, accountID, pq.StringArray(emails), pq.Int64Array(ids))
	if err != nil {
		return s, fmt.Errorf("store: lock contacts: %w", err)
	}
	rows := make([]lockedContact, len(cs))
	for i := range rows {
		r := &rows[i]
		r.Contact = cs[i]
		s.add(r)
	}
	return s, nil
}

// lockContactsAndBlocked locks the contacts with the given addresses or ids
// and reports which of their addresses (and of the given ones) are blocked.
func lockContactsAndBlocked(ctx context.Context, tx querier, accountID int64, emails []string, ids []int64) (lockedSet, map[string]bool, error) {
	s := lockedSet{byEmail: map[string]*lockedContact{}, byID: map[int64]*lockedContact{}}
	blocked := map[string]bool{}
	cs, err := queryContacts(ctx, tx, nil, true, lockContactsBlockedSQL, accountID, pq.StringArray(emails), pq.Int64Array(ids))
	if err != nil {
		return s, nil, fmt.Errorf("store: lock contacts: %w", err)
	}
	rows := make([]lockedContact, 0, len(cs))
	for _, c := range cs {
		if c.ID == 0 { // a blocked address
			blocked[c.Email] = true
			continue
		}
		rows = append(rows, lockedContact{Contact: c})
	}
	for i := range rows {
		r := &rows[i]
		s.add(r)
	}
	return s, blocked, nil
}

// anyDOI reports whether one of the lists asks for double opt-in.
func anyDOI(ids []int64, lists map[int64]listInfo) bool {
	for _, id := range ids {
		if lists[id].DoubleOptIn {
			return true
		}
	}
	return false
}

func setText(changed *[]string, name string, dst *string, v *string) {
	if v != nil && *dst != *v {
		*dst = *v
		*changed = append(*changed, name)
	}
}

// planCreate decides the row of a new contact (contact-status table, rows "(none)").
func planCreate(op *contactOp, blocked map[string]bool, lists map[int64]listInfo) {
	in := op.in
	n := Contact{Email: in.Email, Source: SourceAPI, Tags: nonNil(in.Tags), CustomFields: CustomFields{}}
	var ignore []string
	setText(&ignore, "first_name", &n.FirstName, in.FirstName)
	setText(&ignore, "last_name", &n.LastName, in.LastName)
	setText(&ignore, "address", &n.Address, in.Address)
	setText(&ignore, "zip", &n.Zip, in.Zip)
	setText(&ignore, "city", &n.City, in.City)
	setText(&ignore, "phone", &n.Phone, in.Phone)
	setText(&ignore, "note", &n.Note, in.Note)
	if in.Source != nil {
		n.Source = *in.Source
	} else if op.newSource != "" {
		n.Source = op.newSource
	}
	for k, v := range in.CustomFields {
		if v != nil {
			n.CustomFields[k] = v
		}
	}
	doi := in.DoubleOptIn || anyDOI(in.ListIDs, lists)
	status := ""
	if in.Status != nil {
		status = *in.Status
	}
	switch {
	case blocked[in.Email] && in.SignUp && doi:
		n.Status, op.needDOI = StatusPending, true
	case blocked[in.Email]:
		n.Status = StatusUnsubscribed // a blocked address stays unsubscribed whatever is asked
	case status == StatusUnsubscribed:
		n.Status, op.block = StatusUnsubscribed, true
	case status == StatusSubscribed:
		n.Status = StatusSubscribed // the account vouches for consent: no confirmation
	case status == StatusPending || doi:
		n.Status, op.needDOI = StatusPending, true
	default:
		n.Status = StatusSubscribed
	}
	op.next, op.created, op.join = n, true, slices.Clone(in.ListIDs)
	if op.block {
		op.unsub = withUnsubDefaults(op.unsub)
	}
}

func withUnsubDefaults(u Unsubscribe) Unsubscribe {
	if u.Source == "" {
		u.Source = UnsubAPI
	}
	return u
}

// planUpdate decides the change of an existing contact (contact-status table,
// rows "existing" and "any").
func planUpdate(op *contactOp, cur *lockedContact, blocked map[string]bool, lists map[int64]listInfo) {
	in := op.in
	op.cur = cur
	n := cur.Contact
	n.Tags = slices.Clone(cur.Tags)
	n.CustomFields = cur.CustomFields.clone()
	var changed []string
	if in.Email != "" && in.Email != cur.Email {
		n.Email, op.emailDiff = in.Email, true
		changed = append(changed, "email")
	}
	setText(&changed, "first_name", &n.FirstName, in.FirstName)
	setText(&changed, "last_name", &n.LastName, in.LastName)
	setText(&changed, "address", &n.Address, in.Address)
	setText(&changed, "zip", &n.Zip, in.Zip)
	setText(&changed, "city", &n.City, in.City)
	setText(&changed, "phone", &n.Phone, in.Phone)
	setText(&changed, "note", &n.Note, in.Note)

	tags := n.Tags
	if op.setTags {
		tags = nonNil(in.Tags)
	} else {
		for _, t := range in.Tags {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	for _, t := range op.rmTags {
		i := slices.Index(tags, t)
		if i < 0 {
			op.err = ErrNotFound
			return
		}
		tags = slices.Delete(slices.Clone(tags), i, i+1)
	}
	if !slices.Equal(tags, []string(cur.Tags)) {
		n.Tags = tags
		changed = append(changed, "tags")
	}

	cfChanged := false
	for k, v := range in.CustomFields {
		old, had := n.CustomFields[k]
		switch {
		case v == nil && had:
			delete(n.CustomFields, k)
			cfChanged = true
		case v != nil && (!had || !equalCustomValue(old, v)):
			n.CustomFields[k] = v
			cfChanged = true
		}
	}
	if cfChanged {
		changed = append(changed, "custom_fields")
	}
	if in.Source != nil && *in.Source != cur.Source {
		n.Source = *in.Source
		changed = append(changed, "source")
	}

	target := slices.Clone([]int64(cur.ListIDs))
	if op.setLists {
		target = slices.Clone(in.ListIDs)
	} else {
		for _, id := range in.ListIDs {
			if !slices.Contains(target, id) {
				target = append(target, id)
			}
		}
	}
	for _, id := range op.rmLists {
		i := slices.Index(target, id)
		if i < 0 {
			op.err = ErrNotFound
			return
		}
		target = slices.Delete(target, i, i+1)
	}
	for _, id := range target {
		if !slices.Contains(cur.ListIDs, id) {
			op.join = append(op.join, id)
		}
	}
	for _, id := range cur.ListIDs {
		if !slices.Contains(target, id) {
			op.leave = append(op.leave, id)
		}
	}
	if len(op.join)+len(op.leave) > 0 {
		changed = append(changed, "lists")
	}

	// Status.
	isBlocked := blocked[n.Email]
	doi := in.DoubleOptIn || anyDOI(op.join, lists)
	want := ""
	if in.Status != nil {
		want = *in.Status
	}
	conflict := func() {
		if op.strict {
			op.err = &ConflictError{Reason: "address_blocked",
				Message: "Diese Adresse steht auf der Sperrliste. Nur eine erneute Anmeldung mit Double-Opt-In hebt die Sperre auf."}
		}
	}
	switch {
	case want == StatusUnsubscribed:
		op.block = true
		if cur.Status != StatusUnsubscribed {
			n.Status, op.unsubNow = StatusUnsubscribed, true
		}
	case want == StatusSubscribed && cur.Status != StatusSubscribed:
		if isBlocked {
			conflict()
		} else {
			n.Status = StatusSubscribed
		}
	case want == StatusPending && cur.Status != StatusPending:
		if isBlocked && !in.SignUp {
			conflict()
		} else {
			n.Status, op.needDOI = StatusPending, true
		}
	case want == "" && in.SignUp && doi && cur.Status != StatusSubscribed:
		// A fresh double opt-in sign-up: even a blocked address may confirm again.
		n.Status, op.needDOI = StatusPending, true
	case want == "" && in.SignUp && !doi && cur.Status == StatusUnsubscribed && !isBlocked:
		n.Status = StatusSubscribed
	}
	if op.emailDiff && isBlocked && n.Status != StatusUnsubscribed && !op.needDOI {
		n.Status = StatusUnsubscribed // the new address is blocked
	}
	if op.err != nil {
		return
	}
	if n.Status != cur.Status {
		changed = append(changed, "status")
	}
	if op.block {
		op.unsub = withUnsubDefaults(op.unsub)
	}
	op.next, op.changed = n, changed
}

// insertNew inserts the planned new contacts. An address another transaction
// inserted meanwhile turns into an update of that contact. It returns how many
// rows it inserted.
func insertNew(ctx context.Context, tx querier, accountID int64, creates []*contactOp, blocked map[string]bool, lists map[int64]listInfo) (int64, error) {
	var inserted int64
	pending := make([]*contactOp, 0, len(creates))
	for _, op := range creates {
		if op.err == nil {
			pending = append(pending, op)
		}
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == 3 {
			return 0, fmt.Errorf("store: insert contacts: addresses keep changing under the insert")
		}
		rows := make([]contactRow, len(pending))
		for i, op := range pending {
			rows[i] = rowOf(op.next)
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return 0, fmt.Errorf("store: insert contacts: %w", err)
		}
		got, err := queryContacts(ctx, tx, nil, false, insertContacts, accountID, string(b))
		if err != nil {
			return 0, fmt.Errorf("store: insert contacts: %w", err)
		}
		inserted += int64(len(got))
		rowOfEmail := make(map[string]*Contact, len(got))
		for i := range got {
			rowOfEmail[got[i].Email] = &got[i]
		}
		var lost []*contactOp
		var lostEmails []string
		for _, op := range pending {
			if row := rowOfEmail[op.in.Email]; row != nil {
				op.next.ID, op.final = row.ID, *row
			} else {
				lost, lostEmails = append(lost, op), append(lostEmails, op.in.Email)
			}
		}
		if len(lost) == 0 {
			break
		}
		// Another transaction created these addresses first: change its contact.
		locked, err := lockContactRows(ctx, tx, accountID, lostEmails, nil)
		if err != nil {
			return 0, err
		}
		pending = pending[:0]
		for _, op := range lost {
			cur := locked.byEmail[op.in.Email]
			if cur == nil {
				pending = append(pending, op) // and deleted again meanwhile: insert anew
				continue
			}
			op.created, op.needDOI, op.block, op.join = false, false, false, nil
			planUpdate(op, cur, blocked, lists)
		}
	}
	return inserted, nil
}

// writeUpdates writes the changed existing contacts and keeps each op's row as
// it is now (op.final; an unchanged contact keeps its locked row).
func writeUpdates(ctx context.Context, tx querier, accountID int64, ops []*contactOp) error {
	var rows []contactRow
	for _, op := range ops {
		if op.err != nil || op.cur == nil {
			continue
		}
		op.final = op.cur.Contact
		if len(op.changed) > 0 {
			rows = append(rows, rowOf(op.next))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("store: update contacts: %w", err)
	}
	got, err := queryContacts(ctx, tx, nil, false, updateContacts, accountID, string(b))
	if err != nil {
		if isUniqueViolation(err) {
			return &ConflictError{Reason: "email_taken", Message: "Ein anderer Kontakt hat schon diese E-Mail-Adresse."}
		}
		return fmt.Errorf("store: update contacts: %w", err)
	}
	byID := make(map[int64]*Contact, len(got))
	for i := range got {
		byID[got[i].ID] = &got[i]
	}
	for _, op := range ops {
		if row := byID[op.next.ID]; row != nil && op.err == nil && op.cur != nil {
			op.final = *row
		}
	}
	return nil
}

// finalLists sets the lists of op.final: the locked contact's lists without
// those it left, plus those it joined, in list id order.
func finalLists(op *contactOp, lists map[int64]listInfo) {
	refs := make(ListRefs, 0, len(op.join))
	if op.cur != nil {
		for _, l := range op.cur.Lists {
			if !slices.Contains(op.leave, l.ID) {
				refs = append(refs, l)
			}
		}
	}
	for _, id := range op.join {
		l := lists[id]
		refs = append(refs, ListRef{ID: l.ID, Name: l.Name, Color: l.Color})
	}
	slices.SortFunc(refs, func(a, b ListRef) int { return cmp.Compare(a.ID, b.ID) })
	op.final.Lists = refs
}

func writeMemberships(ctx context.Context, tx querier, accountID int64, ops []*contactOp) error {
	var jl, jc, ll, lc []int64
	for _, op := range ops {
		if op.err != nil {
			continue
		}
		for _, l := range op.join {
			jl, jc = append(jl, l), append(jc, op.next.ID)
		}
		for _, l := range op.leave {
			ll, lc = append(ll, l), append(lc, op.next.ID)
		}
	}
	delta := map[int64]int64{}
	if len(jl) > 0 {
		var got []int64
		if err := tx.SelectContext(ctx, &got, insertMembers, accountID, pq.Int64Array(jl), pq.Int64Array(jc)); err != nil {
			return fmt.Errorf("store: join lists: %w", err)
		}
		for _, l := range got {
			delta[l]++
		}
	}
	if len(ll) > 0 {
		var got []int64
		if err := tx.SelectContext(ctx, &got, deleteMembers, accountID, pq.Int64Array(ll), pq.Int64Array(lc)); err != nil {
			return fmt.Errorf("store: leave lists: %w", err)
		}
		for _, l := range got {
			delta[l]--
		}
	}
	if len(delta) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(delta))
	for id := range delta {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ds := make([]int64, len(ids))
	for i, id := range ids {
		ds[i] = delta[id]
	}
	if _, err := tx.ExecContext(ctx, updateMemberCounts, accountID, pq.Int64Array(ids), pq.Int64Array(ds)); err != nil {
		return fmt.Errorf("store: count list members: %w", err)
	}
	return nil
}

func writeBlocks(ctx context.Context, tx querier, accountID int64, ops []*contactOp) error {
	var emails, sources, reasons []string
	var campaigns []int64
	for _, op := range ops {
		if op.err == nil && op.block {
			emails = append(emails, op.next.Email)
			sources = append(sources, op.unsub.Source)
			reasons = append(reasons, op.unsub.Reason)
			campaigns = append(campaigns, op.unsub.CampaignID)
		}
	}
	if len(emails) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, insertBlocks, accountID, pq.StringArray(emails), pq.StringArray(sources),
		pq.StringArray(reasons), pq.Int64Array(campaigns)); err != nil {
		return fmt.Errorf("store: block addresses: %w", err)
	}
	return nil
}

// appendOpRecords adds the events and activities of one applied op. The
// contact is marshalled once and shared by all of its events' payloads.
func appendOpRecords(events []Event, acts []ActivityEntry, op *contactOp, lists map[int64]listInfo) ([]Event, []ActivityEntry, error) {
	c := op.final
	cj, err := c.Data().AppendJSON(make([]byte, 0, 512))
	if err != nil {
		return nil, nil, fmt.Errorf("store: contact event: %w", err)
	}
	act := func(action string, details any) {
		acts = append(acts, ActivityEntry{Action: action, ObjectType: ObjectContact, ObjectID: c.ID, Details: details})
	}
	switch {
	case op.created:
		events = append(events, Event{EventContactCreated, contactPayload(cj)})
		// A new contact's lists are part of its creation (one activity, not one
		// per list: an import of 1000 contacts onto a list writes 1000 rows, not 2000).
		act("contact.created", createdDetails(c, op.join))
	case len(op.changed) > 0:
		events = append(events, Event{EventContactUpdated, updatedPayload(cj, op.changed)})
		act("contact.updated", map[string]any{"changed": op.changed})
	}
	if op.in.SignUp {
		act("contact.signed_up", map[string]any{"source": c.Source, "list_ids": nonNilIDs(op.in.ListIDs)})
	}
	if op.unsubNow {
		var reason *string
		if op.unsub.Reason != "" {
			reason = &op.unsub.Reason
		}
		var campaign *int64
		if op.unsub.CampaignID != 0 {
			campaign = &op.unsub.CampaignID
		}
		b, err := json.Marshal(struct {
			Contact    json.RawMessage `json:"contact"`
			Email      string          `json:"email"`
			Source     string          `json:"source"`
			Reason     *string         `json:"reason"`
			CampaignID *int64          `json:"campaign_id"`
		}{cj, c.Email, op.unsub.Source, reason, campaign})
		if err != nil {
			return nil, nil, fmt.Errorf("store: contact event: %w", err)
		}
		events = append(events, Event{EventContactUnsubscribed, json.RawMessage(b)})
		act("contact.unsubscribed", map[string]any{"source": op.unsub.Source, "reason": reason, "campaign_id": campaign})
	}
	for _, id := range op.join {
		l := lists[id]
		if c.Status == StatusSubscribed {
			events = append(events, Event{EventListJoined, listPayload(l.ID, l.Name, cj)})
		}
		if !op.created {
			act("list.joined", map[string]any{"list_id": l.ID, "list_name": l.Name})
		}
	}
	for _, id := range op.leave {
		l := lists[id]
		events = append(events, Event{EventListLeft, listPayload(l.ID, l.Name, cj)})
		act("list.left", map[string]any{"list_id": l.ID, "list_name": l.Name})
	}
	if op.needDOI {
		act("contact.confirmation_sent", map[string]any{"email": c.Email})
	}
	return events, acts, nil
}

// createdDetails are the details of a contact.created activity, as
// json.Marshal writes map[string]any{"email", "source", "status", "list_ids"}
// (keys sorted), without its reflection.
func createdDetails(c Contact, lists []int64) rawDetails {
	b := make([]byte, 0, 96+len(c.Email))
	b = append(b, `{"email":`...)
	b = appendJSONString(b, c.Email)
	b = append(b, `,"list_ids":[`...)
	for i, id := range lists {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, `],"source":`...)
	b = appendJSONString(b, c.Source)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, c.Status)
	return append(b, '}')
}

// contactPayload is the data of contact.created and contact.deleted
// (ContactEventData) around an already marshalled contact.
func contactPayload(contact []byte) json.RawMessage {
	b := make([]byte, 0, len(contact)+16)
	b = append(b, `{"contact":`...)
	b = append(b, contact...)
	return append(b, '}')
}

// updatedPayload is the data of contact.updated (ContactUpdatedData).
func updatedPayload(contact []byte, changed []string) json.RawMessage {
	ch, _ := json.Marshal(nonNil(changed)) // a []string always marshals
	b := make([]byte, 0, len(contact)+len(ch)+32)
	b = append(b, `{"contact":`...)
	b = append(b, contact...)
	b = append(b, `,"changed":`...)
	b = append(b, ch...)
	return append(b, '}')
}

// listPayload is the data of list.joined and list.left (ListEventData).
func listPayload(listID int64, name string, contact []byte) json.RawMessage {
	n, _ := json.Marshal(name) // a string always marshals
	b := make([]byte, 0, len(contact)+len(n)+64)
	b = append(b, `{"list":{"id":`...)
	b = strconv.AppendInt(b, listID, 10)
	b = append(b, `,"name":`...)
	b = append(b, n...)
	b = append(b, `},"contact":`...)
	b = append(b, contact...)
	return append(b, '}')
}

func nonNilIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// runOps applies ops: those of a single call or a combined batch first
// optimistically (applyOptimistic), what is left in one locked transaction.
func (db *DB) runOps(ctx context.Context, accountID int64, actor Actor, ops []*contactOp, batch bool) error {
	if !batch {
		rest, err := db.applyOptimistic(ctx, nil, accountID, actor, ops)
		if err != nil || len(rest) == 0 {
			if err == nil {
				db.contactsGrew(createdOps(ops), batch)
			}
			return err
		}
		ops = rest
	}
	return db.runLocked(ctx, accountID, actor, ops, batch)
}

// runLocked applies ops in one transaction, retried on deadlock.
func (db *DB) runLocked(ctx context.Context, accountID int64, actor Actor, ops []*contactOp, batch bool) error {
	if err := actor.valid(); err != nil {
		return err
	}
	if err := db.prepare(ctx, db.generic, writePathStatements()...); err != nil {
		return err
	}
	err := retryTxOn(ctx, db.generic, func(tx *sqlx.Tx) error {
		for _, op := range ops {
			op.reset()
		}
		return applyOps(ctx, preparedTx{Tx: tx, db: db}, accountID, actor, ops, batch)
	})
	if err == nil {
		db.contactsGrew(createdOps(ops), batch)
	}
	return err
}

// createdOps counts the ops that created a contact.
func createdOps(ops []*contactOp) int64 {
	var n int64
	for _, op := range ops {
		if op.created && op.primary == nil && !op.failed() {
			n++
		}
	}
	return n
}

// writePathStatements are the statements applyOps runs as prepared statements.
func writePathStatements() []string {
	return []string{lockLists, lockContactsBlockedSQL, lockContacts, selectContactHeadroom, insertContacts, updateContacts,
		insertMembers, deleteMembers, updateMemberCounts, insertBlocks, selectPlanOfAccount, writeRecordsSQL,
		countFormSubmission, selectRecentConfirmations, readUnlockedSQL, writePlainSQL, selectContactIDs}
}

// single runs one op and returns its own error as the call's error.
func (db *DB) single(ctx context.Context, accountID int64, actor Actor, op *contactOp) (UpsertResult, error) {
	if op.inputErr != nil {
		return UpsertResult{}, op.inputErr
	}
	if err := db.runOps(ctx, accountID, actor, []*contactOp{op}, false); err != nil {
		return UpsertResult{}, err
	}
	return op.result()
}

// result is the outcome of an applied op: its own error, or what it did.
func (op *contactOp) result() (UpsertResult, error) {
	if op.err != nil {
		return UpsertResult{}, op.err
	}
	return UpsertResult{Contact: op.final, Created: op.created, Changed: nonNil(op.changed), Joined: op.join}, nil
}

// UpsertContact creates the contact with in.Email (Created) or changes the
// existing one: given fields are set, custom fields merged, tags and lists only
// added. Status follows the contact-status table:
//   - new contact: pending with a confirmation mail when a target list has double
//     opt-in (or in.DoubleOptIn / status pending), otherwise subscribed; an explicit
//     status subscribed skips the confirmation (the account vouches for consent);
//   - a blocked address stays unsubscribed whatever is asked; only a sign-up
//     (in.SignUp) with double opt-in gets a confirmation mail, whose confirmation
//     lifts the block;
//   - status unsubscribed unsubscribes and blocks the address.
//
// A form sign-up calls it with Source "form", SignUp true, the form's ListIDs and
// DoubleOptIn as the form says; the actor is Actor{Type: ActorPublic}.
// A new contact over the plan's limit is a *LimitError. Events (contact.created,
// contact.updated with changed, contact.unsubscribed, list.joined) and activities
// commit with the change; nothing is emitted when nothing changed.
func (db *DB) UpsertContact(ctx context.Context, accountID int64, actor Actor, in ContactInput) (UpsertResult, error) {
	op := &contactOp{in: in}
	op.inputErr = op.in.Normalize()
	return db.upsertCombined(ctx, accountID, actor, op)
}

// UpdateContact applies a patch to a contact (404 for another account's id).
// Tags and lists given replace the current ones; asking a blocked address to be
// subscribed is a *ConflictError (reason address_blocked); an address another
// contact has is a *ConflictError (reason email_taken).
func (db *DB) UpdateContact(ctx context.Context, accountID int64, actor Actor, id int64, p ContactPatch) (UpsertResult, error) {
	op := &contactOp{byID: id, noCreate: true, strict: true, setTags: p.Tags != nil, setLists: p.ListIDs != nil}
	op.inputErr = p.Normalize()
	op.in = p.input()
	return db.single(ctx, accountID, actor, op)
}

// UnsubscribeContact unsubscribes a contact and blocks its address (event
// contact.unsubscribed). Unsubscribing an unsubscribed contact changes nothing
// but makes sure the address is blocked.
func (db *DB) UnsubscribeContact(ctx context.Context, accountID int64, actor Actor, id int64, u Unsubscribe) (Contact, error) {
	st := StatusUnsubscribed
	op := &contactOp{byID: id, noCreate: true, in: ContactInput{Status: &st}, unsub: u}
	op.inputErr = validateUnsub(&op.unsub)
	res, err := db.single(ctx, accountID, actor, op)
	return res.Contact, err
}

func validateUnsub(u *Unsubscribe) error {
	errs := Errs{}
	if u.Source == "" {
		u.Source = UnsubAPI
	}
	if !validUnsubSource(u.Source) {
		errs.Add("source", "Erlaubt sind link, one_click, manual, api, import, bounce und complaint.")
	}
	normText(errs, "reason", &u.Reason, 1000)
	if u.CampaignID < 0 {
		errs.Add("campaign_id", "Muss eine positive ganze Zahl sein.")
	}
	return errs.Err()
}

// AddTags adds tags to a contact.
func (db *DB) AddTags(ctx context.Context, accountID int64, actor Actor, id int64, tags []string) (Contact, error) {
	op := &contactOp{byID: id, noCreate: true}
	errs := Errs{}
	op.in.Tags = normTags(errs, "tags", tags)
	if len(op.in.Tags) == 0 {
		errs.Add("tags", "Bitte mindestens ein Schlagwort angeben.")
	}
	op.inputErr = errs.Err()
	res, err := db.single(ctx, accountID, actor, op)
	return res.Contact, err
}

// RemoveTag removes one tag from a contact; ErrNotFound when it has no such tag.
func (db *DB) RemoveTag(ctx context.Context, accountID int64, actor Actor, id int64, tag string) (Contact, error) {
	op := &contactOp{byID: id, noCreate: true, rmTags: []string{tag}}
	res, err := db.single(ctx, accountID, actor, op)
	return res.Contact, err
}

// MaxBatch is the most entries one bulk request, list import or block request may carry.
const MaxBatch = 1000

// BulkContacts is the input of POST /contacts/bulk: every contact is upserted
// with the same rules as UpsertContact; ListIDs and Tags apply to all of them.
type BulkContacts struct {
	Contacts []ContactInput
	ListIDs  []int64
	Tags     []string
}

// Outcomes of one bulk entry.
const (
	BulkCreated = "created"
	BulkUpdated = "updated"
	BulkError   = "error"
)

// BulkEntry is the outcome of one entry of a bulk request.
type BulkEntry struct {
	Index   int
	Email   string
	Result  string // created, updated or error
	Contact Contact
	Err     error // *ValidationError, *LimitError, …: this entry only
}

// BulkResult is the outcome of a bulk request, entry by entry and in totals.
type BulkResult struct {
	Entries                  []BulkEntry
	Created, Updated, Failed int
}

// BulkUpsertContacts upserts up to MaxBatch contacts set-based in one
// transaction. An invalid entry fails alone; the others are written. Entries over
// the plan's contact limit fail with a *LimitError each. An invalid shared field
// (ListIDs, Tags) fails the whole request.
func (db *DB) BulkUpsertContacts(ctx context.Context, accountID int64, actor Actor, in BulkContacts) (BulkResult, error) {
	if len(in.Contacts) > MaxBatch {
		return BulkResult{}, Invalid("contacts", fmt.Sprintf("Höchstens %d Kontakte pro Anfrage.", MaxBatch))
	}
	errs := Errs{}
	tags := normTags(errs, "tags", in.Tags)
	listIDs := normListIDs(errs, "list_ids", in.ListIDs)
	if err := errs.Err(); err != nil {
		return BulkResult{}, err
	}
	ops := make([]*contactOp, len(in.Contacts))
	for i, c := range in.Contacts {
		c.Tags = append(slices.Clone(c.Tags), tags...)
		c.ListIDs = append(slices.Clone(c.ListIDs), listIDs...)
		op := &contactOp{in: c}
		op.inputErr = op.in.Normalize()
		ops[i] = op
	}
	if len(listIDs) > 0 {
		var n int
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM lists WHERE account_id = $1 AND id = ANY($2)`, accountID, pq.Int64Array(listIDs)); err != nil {
			return BulkResult{}, fmt.Errorf("store: bulk contacts: %w", err)
		}
		if n != len(listIDs) {
			return BulkResult{}, Invalid("list_ids", "Mindestens eine dieser Listen gibt es nicht.")
		}
	}
	if err := db.runOps(ctx, accountID, actor, ops, true); err != nil {
		return BulkResult{}, err
	}
	res := BulkResult{Entries: make([]BulkEntry, len(ops))}
	for i, op := range ops {
		e := BulkEntry{Index: i, Email: op.in.Email}
		switch {
		case op.failed():
			e.Result, e.Err = BulkError, cmpErr(op.inputErr, op.err)
			res.Failed++
		case op.created && op.primary == nil:
			e.Result, e.Contact = BulkCreated, op.final
			res.Created++
		default:
			e.Result, e.Contact = BulkUpdated, op.final
			res.Updated++
		}
		res.Entries[i] = e
	}
	return res, nil
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeRecordsSQL writes events ($2–$4) and activities ($5–$10), adds the tag
// count changes ($12, $13) to this connection's stripe, and, when $11 > 0, counts
// $11 new contacts within the plan's limit (add_account_contacts, migration
// 00012) and on today's contact_days (migration 00014; new contacts get now()
// as created_at): one round trip instead of five for every contact change.
const writeRecordsSQL = `WITH ev AS (
  INSERT INTO events (account_id, public_id, name, payload)
  SELECT $1, x.public_id, x.name, x.payload
  FROM ROWS FROM (unnest($2::text[]), unnest($3::text[]), jsonb_array_elements($4::jsonb)) WITH ORDINALITY AS x(public_id, name, payload, n)
  ORDER BY x.n
), act AS (
  INSERT INTO activity_log (account_id, actor_type, actor_id, action, object_type, object_id, details)
  SELECT $1, $5, $6, x.action, x.object_type, nullif(x.object_id, 0), x.details::jsonb
  FROM unnest($7::text[], $8::text[], $9::bigint[], $10::text[]) WITH ORDINALITY AS x(action, object_type, object_id, details, n)
  ORDER BY x.n
), tags AS (
  ` + addTagCounts + `
), days AS (
  INSERT INTO contact_days AS d (account_id, day, stripe, contacts)
  SELECT $1, (now() AT TIME ZONE 'Europe/Berlin')::date, pg_backend_pid() % 32, $11::bigint WHERE $11::bigint > 0
  ON CONFLICT (account_id, day, stripe) DO UPDATE SET contacts = d.contacts + excluded.contacts
), usage AS (
  SELECT add_account_contacts($1, $11) AS ok WHERE $11 > 0
)
SELECT coalesce((SELECT ok FROM usage), true)`

// addTagCounts adds count changes ($13) of tags ($12, sorted: rows are locked in
// one order) to the stripe of this connection (contact_tag_counts).
const addTagCounts = `INSERT INTO contact_tag_counts AS t (account_id, tag, stripe, contacts)
  SELECT $1, x.tag, pg_backend_pid() % 32, x.d FROM unnest($12::text[], $13::bigint[]) AS x(tag, d)
  ORDER BY x.tag
  ON CONFLICT (account_id, tag, stripe) DO UPDATE SET contacts = t.contacts + excluded.contacts`

// tagDeltas collects how many contacts each tag gains or loses.
type tagDeltas map[string]int64

func (d tagDeltas) change(before, after []string) {
	for _, t := range after {
		if !slices.Contains(before, t) {
			d[t]++
		}
	}
	for _, t := range before {
		if !slices.Contains(after, t) {
			d[t]--
		}
	}
}

// args are the tags (sorted) and their non-zero changes.
func (d tagDeltas) args() (pq.StringArray, pq.Int64Array) {
	tags := make([]string, 0, len(d))
	for t, n := range d {
		if n != 0 {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	ns := make(pq.Int64Array, len(tags))
	for i, t := range tags {
		ns[i] = d[t]
	}
	return pq.StringArray(tags), ns
}

// writeRecords writes the events and activities of a contact change, its tag
// count changes, and counts its new contacts; false means the plan's contact
// limit would be exceeded.
func writeRecords(ctx context.Context, tx querier, accountID int64, actor Actor, events []Event, acts []ActivityEntry, tags tagDeltas, newContacts int64) (bool, error) {
	tagNames, tagCounts := tags.args()
	if len(events) == 0 && len(acts) == 0 && len(tagNames) == 0 && newContacts == 0 {
		return true, nil
	}
	ids, names, payloads, err := eventArgs(events)
	if err != nil {
		return false, err
	}
	actions, types, objIDs, details, err := activityArgs(acts)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := tx.GetContext(ctx, &ok, writeRecordsSQL, accountID, ids, names, payloads, actor.Type, actor.idOrNil(),
		actions, types, objIDs, details, newContacts, tagNames, tagCounts); err != nil {
		return false, fmt.Errorf("store: record contact changes: %w", err)
	}
	return ok, nil
}
