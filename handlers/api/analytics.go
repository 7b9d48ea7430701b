package api

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

type contactsFigures struct {
	Total int64 `json:"total"`
	New   int64 `json:"new"`
}

// overviewResponse is GET /analytics/overview: the account's engagement over
// a period of Berlin days (from and to included).
type overviewResponse struct {
	From string `json:"from"`
	To   string `json:"to"`
	engagementResponse
	Newsletters int64           `json:"newsletters"`
	Contacts    contactsFigures `json:"contacts"`
}

func (a *API) period(r *http.Request) (store.Period, error) {
	q := r.URL.Query()
	return store.ParsePeriod(q.Get("from"), q.Get("to"), a.cfg.Now())
}

func (a *API) analyticsOverview(w http.ResponseWriter, r *http.Request) error {
	p, err := a.period(r)
	if err != nil {
		return err
	}
	o, err := a.db.AnalyticsOverview(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, overviewResponse{
		From: dateOf(p.From), To: dateOf(p.To), engagementResponse: newEngagementResponse(o.Engagement),
		Newsletters: o.Newsletters, Contacts: contactsFigures{Total: o.Contacts, New: o.NewContacts},
	})
}

// pointResponse is one point of GET /analytics/timeseries.
type pointResponse struct {
	dayResponse
	NewContacts int64 `json:"new_contacts"`
	Contacts    int64 `json:"contacts"`
}

type timeseriesResponse struct {
	From     string          `json:"from"`
	To       string          `json:"to"`
	Interval string          `json:"interval"`
	Points   []pointResponse `json:"points"`
}

func (a *API) analyticsTimeseries(w http.ResponseWriter, r *http.Request) error {
	p, err := a.period(r)
	if err != nil {
		return err
	}
	interval := r.URL.Query().Get("interval")
	if interval == "" {
		interval = store.IntervalDay
	}
	days, err := a.db.AnalyticsTimeseries(r.Context(), accountID(r), p, interval)
	if err != nil {
		return err
	}
	out := timeseriesResponse{From: dateOf(p.From), To: dateOf(p.To), Interval: interval, Points: make([]pointResponse, len(days))}
	for i, d := range days {
		out.Points[i] = pointResponse{
			dayResponse: dayResponse{Date: dateOf(d.Day), engagementResponse: newEngagementResponse(d.Engagement)},
			NewContacts: d.NewContacts, Contacts: d.Contacts,
		}
	}
	return writeData(w, r, http.StatusOK, out)
}
