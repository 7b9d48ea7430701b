package api

import (
	"fmt"
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

// abVariantResponse is one variant of a test: its subject, preheader and
// sender name as the recipients get them; html only for a variant B with
// content of its own.
type abVariantResponse struct {
	Variant   string  `json:"variant"`
	Subject   string  `json:"subject"`
	Preheader string  `json:"preheader"`
	FromName  string  `json:"from_name"`
	HTML      *string `json:"html,omitempty"`
}

// abVariantResult is one variant's figures in results.
type abVariantResult struct {
	Sent         int64   `json:"sent"`
	UniqueOpens  int64   `json:"unique_opens"`
	UniqueClicks int64   `json:"unique_clicks"`
	OpenRate     float64 `json:"open_rate"`
	ClickRate    float64 `json:"click_rate"`
	CTR          float64 `json:"ctr"`
	Rate         float64 `json:"rate"`
}

type abResultsResponse struct {
	Metric     string                     `json:"metric"`
	Variants   map[string]abVariantResult `json:"variants"`
	Confidence float64                    `json:"confidence"`
	Leader     string                     `json:"leader"`
	Waiting    int64                      `json:"waiting"`
}

// abTestResponse is an A/B test as the API shows it; results only on single
// retrieval.
type abTestResponse struct {
	ID              int64               `json:"id"`
	Name            string              `json:"name"`
	TargetType      string              `json:"target_type"`
	TargetID        int64               `json:"target_id"`
	CampaignID      *int64              `json:"campaign_id"`
	TestType        string              `json:"test_type"`
	Mode            string              `json:"mode"`
	SplitA          int                 `json:"split_a"`
	SamplePct       int                 `json:"sample_pct"`
	WaitHours       int                 `json:"wait_hours"`
	WinnerMetric    string              `json:"winner_metric"`
	Status          string              `json:"status"`
	StatusLabel     string              `json:"status_label"`
	Winner          *string             `json:"winner"`
	SuggestedWinner *string             `json:"suggested_winner"`
	AutoApplyWinner bool                `json:"auto_apply_winner"`
	Variants        []abVariantResponse `json:"variants"`
	Confidence      *float64            `json:"confidence"`
	Released        int64               `json:"released"`
	Copied          bool                `json:"copied"`
	StartedAt       *Time               `json:"started_at"`
	DecideAt        *Time               `json:"decide_at"`
	FinishedAt      *Time               `json:"finished_at"`
	CreatedAt       Time                `json:"created_at"`
	UpdatedAt       Time                `json:"updated_at"`
	Results         *abResultsResponse  `json:"results,omitempty"`
}

func newABTestResponse(t store.ABTest) abTestResponse {
	a := store.Campaign{Subject: t.TargetSubject, Preheader: t.TargetPreheader, FromName: t.TargetFromName}
	if t.Status == store.ABCompleted && t.Copied {
		// The winner B was copied onto the target: A is what was sent.
		a.Subject, a.FromName, a.Preheader = t.ASubject, t.AFromName, t.APreheader
	}
	b := t.ApplyB(a)
	return abTestResponse{
		ID: t.ID, Name: t.Name, TargetType: t.TargetType, TargetID: t.TargetID, CampaignID: t.CampaignID,
		TestType: t.TestType, Mode: t.Mode, SplitA: t.SplitA, SamplePct: t.SamplePct, WaitHours: t.WaitHours,
		WinnerMetric: t.WinnerMetric, Status: t.Status, StatusLabel: store.ABStatusLabel(t.Status), Winner: t.Winner,
		SuggestedWinner: t.SuggestedWinner, AutoApplyWinner: t.AutoApplyWinner,
		Variants: []abVariantResponse{
			{Variant: "A", Subject: a.Subject, Preheader: a.Preheader, FromName: a.FromName},
			{Variant: "B", Subject: b.Subject, Preheader: b.Preheader, FromName: b.FromName, HTML: t.BHTML},
		},
		Confidence: t.Confidence, Released: t.Released, Copied: t.Copied,
		StartedAt: timePtr(t.StartedAt), DecideAt: timePtr(t.DecideAt), FinishedAt: timePtr(t.FinishedAt),
		CreatedAt: Time(t.CreatedAt), UpdatedAt: Time(t.UpdatedAt),
	}
}

func newABResultsResponse(res store.ABResults) *abResultsResponse {
	v := func(r store.ABVariantResult) abVariantResult {
		return abVariantResult{Sent: r.Sent, UniqueOpens: r.UniqueOpens, UniqueClicks: r.UniqueClicks,
			OpenRate: r.OpenRate(), ClickRate: r.ClickRate(), CTR: r.CTR(), Rate: r.Rate(res.Metric)}
	}
	return &abResultsResponse{Metric: res.Metric, Variants: map[string]abVariantResult{"A": v(res.A), "B": v(res.B)},
		Confidence: res.Confidence, Leader: res.Leader, Waiting: res.Waiting}
}

// abTestRequest is the body of POST /ab-tests and PATCH /ab-tests/{id};
// unknown properties are ignored.
type abTestRequest struct {
	Name            *string `json:"name"`
	TargetType      *string `json:"target_type"`
	TargetID        *int64  `json:"target_id"`
	CampaignID      *int64  `json:"campaign_id"`
	TestType        *string `json:"test_type"`
	Mode            *string `json:"mode"`
	SplitA          *int    `json:"split_a"`
	SamplePct       *int    `json:"sample_pct"`
	WaitHours       *int    `json:"wait_hours"`
	WinnerMetric    *string `json:"winner_metric"`
	AutoApplyWinner *bool   `json:"auto_apply_winner"`
	BSubject        *string `json:"b_subject"`
	BPreheader      *string `json:"b_preheader"`
	BHTML           *string `json:"b_html"`
	BFromName       *string `json:"b_from_name"`
}

func (q abTestRequest) input() (store.ABInput, error) {
	if q.BHTML != nil && len(*q.BHTML) > store.MaxHTMLBytes {
		return store.ABInput{}, errTooLarge
	}
	return store.ABInput{Name: q.Name, TargetType: q.TargetType, TargetID: q.TargetID, CampaignID: q.CampaignID,
		TestType: q.TestType, Mode: q.Mode, SplitA: q.SplitA, SamplePct: q.SamplePct, WaitHours: q.WaitHours,
		WinnerMetric: q.WinnerMetric, AutoApplyWinner: q.AutoApplyWinner, BSubject: q.BSubject, BPreheader: q.BPreheader,
		BHTML: q.BHTML, BFromName: q.BFromName}, nil
}

// errABOff answers the endpoints that decide winners in an API without the
// A/B service.
var errABOff = &Error{Status: http.StatusServiceUnavailable, Code: "service_unavailable",
	Message: "A/B-Tests sind in diesem Dienst nicht eingerichtet."}

func (a *API) listABTests(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	f := store.ABFilter{Status: r.URL.Query().Get("status"), TargetType: r.URL.Query().Get("type")}
	list, total, err := a.db.ABTests(r.Context(), accountID(r), f, page)
	if err != nil {
		return err
	}
	out := make([]abTestResponse, len(list))
	for i, t := range list {
		out[i] = newABTestResponse(t)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createABTest(w http.ResponseWriter, r *http.Request) error {
	var req abTestRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := a.abTests.CreateABTest(r.Context(), accountID(r), actor(r), in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newABTestResponse(t))
}

func (a *API) getABTest(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	t, err := a.db.ABTest(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	res, err := a.db.ABResults(r.Context(), t)
	if err != nil {
		return err
	}
	out := newABTestResponse(t)
	out.Results = newABResultsResponse(res)
	return writeData(w, r, http.StatusOK, out)
}

func (a *API) patchABTest(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req abTestRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	t, err := a.abTests.UpdateABTest(r.Context(), accountID(r), actor(r), id, in)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newABTestResponse(t))
}

func (a *API) deleteABTest(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.abTests.DeleteABTest(r.Context(), accountID(r), actor(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// abWinnerRequest is the optional body of POST /ab-tests/{id}/winner.
type abWinnerRequest struct {
	Variant *string `json:"variant"`
}

type abWinnerResponse struct {
	Winner   string `json:"winner"`
	Released int64  `json:"released"`
	Copied   bool   `json:"copied"`
	Message  string `json:"message"`
}

// ABWinnerMessage is the German message of a winner result.
func ABWinnerMessage(res store.ABWinnerResult) string {
	msg := fmt.Sprintf("Variante %s hat gewonnen.", res.Winner)
	if res.Released > 0 {
		msg += fmt.Sprintf(" %d wartende Empfänger erhalten jetzt Variante %s.", res.Released, res.Winner)
	}
	if res.Copied {
		msg += " Der Inhalt von Variante B wurde in die E-Mail übernommen."
	}
	return msg
}

func (a *API) setABWinner(w http.ResponseWriter, r *http.Request) error {
	if a.abTests == nil {
		return errABOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req abWinnerRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	variant := "auto"
	if req.Variant != nil {
		variant = *req.Variant
		if variant == "" {
			return errValidation(map[string]string{"variant": "Erlaubt sind A, B und auto."})
		}
	}
	res, err := a.abTests.SetWinner(r.Context(), accountID(r), actor(r), id, variant)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, abWinnerResponse{Winner: res.Winner, Released: res.Released, Copied: res.Copied,
		Message: ABWinnerMessage(res)})
}

func (a *API) stopABTest(w http.ResponseWriter, r *http.Request) error {
	if a.abTests == nil {
		return errABOff
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	t, _, err := a.abTests.Stop(r.Context(), accountID(r), actor(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newABTestResponse(t))
}

type abInsightResponse struct {
	Scope    string         `json:"scope"`
	TestType string         `json:"test_type"`
	Tests    int            `json:"tests"`
	Wins     map[string]int `json:"wins"`
	AvgLift  float64        `json:"avg_lift"`
	Findings []string       `json:"findings"`
}

func (a *API) abInsights(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	list, err := a.db.ABInsights(r.Context(), accountID(r), q.Get("scope"), q.Get("test_type"))
	if err != nil {
		return err
	}
	out := make([]abInsightResponse, len(list))
	for i, in := range list {
		out[i] = abInsightResponse{Scope: in.Scope, TestType: in.TestType, Tests: in.Tests,
			Wins: map[string]int{"A": in.WinsA, "B": in.WinsB}, AvgLift: in.AvgLift, Findings: nonNil(in.Findings)}
	}
	return writeData(w, r, http.StatusOK, out)
}
