package portal

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/views"
)

// activityPerPage is the number of activity log entries per page.
const activityPerPage = 25

// activityMaxCount is how many entries the page counts and pages through: an
// exact count of a log of millions would cost more than the page; the API
// pages through all of them.
const activityMaxCount = 10_000

// activityLog lists the account's activity log (the same store query as
// GET /v1/logs/activity), newest first, filtered by object type. Filtering and
// paging with htmx swap views.ActivitySection alone.
func (p *Portal) activityLog(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	acct := accountID(r)
	l := views.ActivityList{ObjectType: r.URL.Query().Get("object_type")}
	if !slices.Contains(views.ActivityObjectTypes(), l.ObjectType) {
		l.ObjectType = "" // an unknown type filters nothing rather than everything
	}
	// No page lies beyond the counted entries; a deeper offset would only cost.
	page := min(queryPage(r), (activityMaxCount+activityPerPage-1)/activityPerPage)
	f := store.ActivityFilter{ObjectType: l.ObjectType}
	var err error
	l.Entries, l.Pager.Total, l.Capped, err = p.db.ActivityLogCapped(ctx, acct, f, store.Page{Page: page, PerPage: activityPerPage}, activityMaxCount)
	if err != nil {
		return err
	}
	if last := max(1, (l.Pager.Total+activityPerPage-1)/activityPerPage); page > last {
		page = last // past the end (a hand-edited URL): the last page
		l.Entries, l.Pager.Total, l.Capped, err = p.db.ActivityLogCapped(ctx, acct, f, store.Page{Page: page, PerPage: activityPerPage}, activityMaxCount)
		if err != nil {
			return err
		}
	}
	// Links only to objects that still exist: one lookup per entry's object.
	if l.Existing, err = p.db.ExistingObjects(ctx, acct, l.Entries); err != nil {
		return err
	}
	// The actors' names: the account's keys (revoked ones too) and users.
	if l.Keys, err = p.db.Keys(ctx, acct); err != nil {
		return err
	}
	if l.Users, err = p.db.AccountUsers(ctx, acct); err != nil {
		return err
	}
	filter := url.Values{"object_type": {l.ObjectType}}
	l.Pager.Page, l.Pager.PerPage, l.Pager.Target = page, activityPerPage, "#activity-log"
	l.Pager.URL = func(n int) string { return pageURL("/logs/activity", filter, n) }
	s := p.shell(r, views.TextFor(ctx).Activity.Title, views.NavActivity)
	p.page(w, r, http.StatusOK, views.ActivityPage(s, l), views.ActivitySection(l))
	return nil
}
