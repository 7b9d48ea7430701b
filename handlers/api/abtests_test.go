package api_test

import (
	"context"
	"fmt"
	"mime"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/handlers/api/apitest"
	"github.com/rundbrief/rundbrief/store"
)

type abTestJSON struct {
	ID              int64   `json:"id"`
	Name            string  `json:"name"`
	TargetType      string  `json:"target_type"`
	TargetID        int64   `json:"target_id"`
	TestType        string  `json:"test_type"`
	Mode            string  `json:"mode"`
	SplitA          int     `json:"split_a"`
	WinnerMetric    string  `json:"winner_metric"`
	Status          string  `json:"status"`
	StatusLabel     string  `json:"status_label"`
	Winner          *string `json:"winner"`
	AutoApplyWinner bool    `json:"auto_apply_winner"`
	Released        int64   `json:"released"`
	Variants        []struct {
		Variant  string `json:"variant"`
		Subject  string `json:"subject"`
		FromName string `json:"from_name"`
	} `json:"variants"`
	Results *struct {
		Metric   string `json:"metric"`
		Variants map[string]struct {
			Sent         int64   `json:"sent"`
			UniqueOpens  int64   `json:"unique_opens"`
			UniqueClicks int64   `json:"unique_clicks"`
			OpenRate     float64 `json:"open_rate"`
		} `json:"variants"`
		Confidence float64 `json:"confidence"`
		Leader     string  `json:"leader"`
		Waiting    int64   `json:"waiting"`
	} `json:"results"`
}

// draftNewsletter creates a newsletter draft to list.
func (e *sendAPIEnv) draftNewsletter(t *testing.T, list int64, subject string) int64 {
	t.Helper()
	var n newsletterJSON
	e.do(t, "POST", "/v1/newsletters", map[string]any{"subject": subject, "html": "<p>Hallo {{vorname}}</p>", "from_name": "Acme",
		"list_ids": []int64{list}}, 201).Data(t, &n)
	return n.ID
}

func TestABTestValidationRules(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	list := e.list(t, "val", 1)
	nl := e.draftNewsletter(t, list, "Hallo")
	ok := func(extra map[string]any) map[string]any {
		b := map[string]any{"campaign_id": nl, "test_type": "subject", "b_subject": "Hallo B"}
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		body   any
		fields []string
	}{
		{"nothing", map[string]any{}, []string{"target_type", "target_id", "test_type"}},
		{"target_id missing", map[string]any{"target_type": "newsletter", "test_type": "subject", "b_subject": "B"}, []string{"target_id"}},
		{"target_type missing", map[string]any{"target_id": nl, "test_type": "subject", "b_subject": "B"}, []string{"target_type"}},
		{"target_type unknown", map[string]any{"target_type": "sms", "target_id": nl, "test_type": "subject", "b_subject": "B"}, []string{"target_type"}},
		{"target_id negative", map[string]any{"target_type": "newsletter", "target_id": -3, "test_type": "subject", "b_subject": "B"}, []string{"target_id"}},
		{"campaign_id zero", ok(map[string]any{"campaign_id": 0}), []string{"campaign_id"}},
		{"campaign_id wrong type", ok(map[string]any{"campaign_id": "x"}), []string{"campaign_id"}},
		{"test_type missing", ok(map[string]any{"test_type": nil}), []string{"test_type"}},
		{"test_type unknown", ok(map[string]any{"test_type": "colour"}), []string{"test_type"}},
		{"mode unknown", ok(map[string]any{"mode": "both"}), []string{"mode"}},
		{"split_a below 10", ok(map[string]any{"split_a": 9}), []string{"split_a"}},
		{"split_a above 90", ok(map[string]any{"split_a": 91}), []string{"split_a"}},
		{"split_a not an integer", ok(map[string]any{"split_a": 50.5}), []string{"split_a"}},
		{"sample_pct below 5", ok(map[string]any{"sample_pct": 4}), []string{"sample_pct"}},
		{"sample_pct above 50", ok(map[string]any{"sample_pct": 51}), []string{"sample_pct"}},
		{"wait_hours below 1", ok(map[string]any{"wait_hours": 0}), []string{"wait_hours"}},
		{"wait_hours above 72", ok(map[string]any{"wait_hours": 73}), []string{"wait_hours"}},
		{"winner_metric unknown", ok(map[string]any{"winner_metric": "revenue"}), []string{"winner_metric"}},
		{"auto_apply_winner not a boolean", ok(map[string]any{"auto_apply_winner": "ja"}), []string{"auto_apply_winner"}},
		{"name too long", ok(map[string]any{"name": strings.Repeat("n", 201)}), []string{"name"}},
		{"subject test without b_subject", ok(map[string]any{"b_subject": nil}), []string{"b_subject"}},
		{"b_subject equal to A", ok(map[string]any{"b_subject": "Hallo"}), []string{"b_subject"}},
		{"b_subject with a line break", ok(map[string]any{"b_subject": "zwei\nZeilen"}), []string{"b_subject"}},
		{"b_subject too long", ok(map[string]any{"b_subject": strings.Repeat("b", 256)}), []string{"b_subject"}},
		{"b_preheader too long", ok(map[string]any{"b_preheader": strings.Repeat("p", 501)}), []string{"b_preheader"}},
		{"b_from_name too long", ok(map[string]any{"b_from_name": strings.Repeat("f", 101)}), []string{"b_from_name"}},
		{"content test without b_html", ok(map[string]any{"test_type": "content"}), []string{"b_html"}},
		{"design test without b_html", ok(map[string]any{"test_type": "design", "b_subject": nil}), []string{"b_html"}},
		{"sender test without b_from_name", ok(map[string]any{"test_type": "sender"}), []string{"b_from_name"}},
		{"combo with one change", ok(map[string]any{"test_type": "combo"}), []string{"test_type"}},
		{"many at once", ok(map[string]any{"split_a": 1, "sample_pct": 99, "wait_hours": 100, "mode": "x"}), []string{"split_a", "sample_pct", "wait_hours", "mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantFields(t, e.fields(t, e.do(t, "POST", "/v1/ab-tests", tc.body, 422)), tc.fields...)
		})
	}
	// Extra properties are tolerated; a combo of two changes is fine.
	var ab abTestJSON
	e.do(t, "POST", "/v1/ab-tests", ok(map[string]any{"test_type": "combo", "b_from_name": "Jana", "unknown": true}), 201).Data(t, &ab)
	if ab.Status != "draft" || ab.StatusLabel != "Bereit" || ab.TargetType != "newsletter" || ab.TargetID != nl || ab.Mode != "split" || ab.SplitA != 50 ||
		ab.WinnerMetric != "clicks" || !ab.AutoApplyWinner || len(ab.Variants) != 2 || ab.Variants[1].Subject != "Hallo B" || ab.Variants[1].FromName != "Jana" ||
		ab.Variants[0].Subject != "Hallo" || ab.Variants[0].FromName != "Acme" {
		t.Fatalf("created: %+v", ab)
	}
	path := fmt.Sprintf("/v1/ab-tests/%d", ab.ID)
	wantFields(t, e.fields(t, e.do(t, "PATCH", path, map[string]any{"split_a": 95}, 422)), "split_a")
	wantFields(t, e.fields(t, e.do(t, "PATCH", path, map[string]any{"b_from_name": ""}, 422)), "test_type")
	wantFields(t, e.fields(t, e.do(t, "POST", path+"/winner", map[string]any{"variant": "C"}, 422)), "variant")
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/ab-tests?status=old", nil, 422)), "status")
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/ab-tests?type=sms", nil, 422)), "type")
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/ab-tests/insights?scope=sms", nil, 422)), "scope")
	wantFields(t, e.fields(t, e.do(t, "GET", "/v1/ab-tests?per_page=0", nil, 422)), "per_page")
}

func TestABTestAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSendAPIEnv(t)
	list := e.list(t, "ab", 6)
	nl := e.draftNewsletter(t, list, "Hallo {{vorname}}")

	var ab abTestJSON
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"target_type": "newsletter", "target_id": nl, "test_type": "subject",
		"b_subject": "Neu für {{vorname}}", "winner_metric": "opens", "name": "Betreff"}, 201).Data(t, &ab)
	path := fmt.Sprintf("/v1/ab-tests/%d", ab.ID)
	if got := e.reason(t, e.do(t, "POST", "/v1/ab-tests", map[string]any{"campaign_id": nl, "test_type": "subject", "b_subject": "X"}, 409)); got != "conflict:ab_test_exists" {
		t.Errorf("second test: %s", got)
	}
	if got := e.reason(t, e.do(t, "POST", path+"/winner", nil, 409)); got != "conflict:ab_test_not_running" {
		t.Errorf("winner of a draft: %s", got)
	}
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"campaign_id": 999999, "test_type": "subject", "b_subject": "X"}, 404)
	e.do(t, "GET", "/v1/ab-tests/999999", nil, 404)

	// Another account sees neither the test nor the target.
	other, err := e.db.CreateAccount(ctx, store.NewAccount{Name: "Other", Email: "other@acme.test", Password: "a long password", Plan: "business"})
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := e.db.CreateKey(ctx, other.Account.ID, store.KeySettings{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	oc := apitest.NewClient(t, e.h, e.v)
	oc.Header.Set("Authorization", "Bearer "+otherKey)
	if r := oc.Request("GET", path, nil); r.Status != 404 {
		t.Errorf("other account reads the test: %d", r.Status)
	}
	if r := oc.Request("POST", "/v1/ab-tests", map[string]any{"campaign_id": nl, "test_type": "subject", "b_subject": "X"}); r.Status != 404 {
		t.Errorf("other account's target: %d %s", r.Status, r.Body)
	}

	// Sending the newsletter starts the test; every recipient has a variant.
	e.do(t, "POST", fmt.Sprintf("/v1/newsletters/%d/send", nl), nil, 202)
	e.waitSent(t, fmt.Sprintf("/v1/newsletters/%d", nl))
	e.do(t, "GET", path, nil, 200).Data(t, &ab)
	if ab.Status != "running" || ab.StatusLabel != "Läuft" || ab.Results == nil || ab.Results.Metric != "opens" ||
		ab.Results.Variants["A"].Sent+ab.Results.Variants["B"].Sent != 6 {
		t.Fatalf("running: %+v %+v", ab, ab.Results)
	}
	subjects := map[string]int{}
	for _, m := range e.srv.Messages() {
		for _, line := range strings.Split(string(m.Data), "\r\n") {
			if strings.HasPrefix(line, "Subject: ") {
				subject, err := new(mime.WordDecoder).DecodeHeader(strings.TrimPrefix(line, "Subject: "))
				if err != nil {
					t.Fatal(err)
				}
				subjects[strings.Fields(subject)[0]]++
			}
		}
	}
	if subjects["Hallo"] != int(ab.Results.Variants["A"].Sent) || subjects["Neu"] != int(ab.Results.Variants["B"].Sent) {
		t.Errorf("subjects %v, results %+v", subjects, ab.Results.Variants)
	}
	if got := e.reason(t, e.do(t, "POST", "/v1/ab-tests", map[string]any{"campaign_id": nl, "test_type": "subject", "b_subject": "X"}, 409)); got != "conflict:already_sent" {
		t.Errorf("test of a sent newsletter: %s", got)
	}
	if got := e.reason(t, e.do(t, "PATCH", path, map[string]any{"split_a": 20}, 409)); got != "conflict:not_draft" {
		t.Errorf("patch running: %s", got)
	}
	if got := e.reason(t, e.do(t, "DELETE", path, nil, 409)); got != "conflict:not_draft" {
		t.Errorf("delete running: %s", got)
	}

	var active []abTestJSON
	e.do(t, "GET", "/v1/ab-tests?status=active&type=newsletter", nil, 200).Data(t, &active)
	if len(active) != 1 || active[0].ID != ab.ID || active[0].Results != nil {
		t.Errorf("active: %+v", active)
	}

	// B wins by hand: its subject is copied onto the newsletter.
	var wr struct {
		Winner   string `json:"winner"`
		Released int64  `json:"released"`
		Copied   bool   `json:"copied"`
		Message  string `json:"message"`
	}
	e.do(t, "POST", path+"/winner", map[string]any{"variant": "B"}, 200).Data(t, &wr)
	if wr.Winner != "B" || wr.Released != 0 || !wr.Copied || !strings.Contains(wr.Message, "Variante B") {
		t.Fatalf("winner: %+v", wr)
	}
	if got := e.reason(t, e.do(t, "POST", path+"/winner", map[string]any{"variant": "A"}, 409)); got != "conflict:ab_test_completed" {
		t.Errorf("second winner: %s", got)
	}
	var n newsletterJSON
	e.do(t, "GET", fmt.Sprintf("/v1/newsletters/%d", nl), nil, 200).Data(t, &n)
	if n.Subject != "Neu für {{vorname}}" {
		t.Errorf("copied subject: %q", n.Subject)
	}
	e.do(t, "GET", path, nil, 200).Data(t, &ab)
	if ab.Status != "completed" || ab.Winner == nil || *ab.Winner != "B" || ab.Variants[0].Subject != "Hallo {{vorname}}" {
		t.Errorf("completed: %+v", ab)
	}

	// What won, for the AI actions.
	var ins []struct {
		Scope    string         `json:"scope"`
		TestType string         `json:"test_type"`
		Tests    int            `json:"tests"`
		Wins     map[string]int `json:"wins"`
		Findings []string       `json:"findings"`
	}
	e.do(t, "GET", "/v1/ab-tests/insights?scope=newsletter", nil, 200).Data(t, &ins)
	if len(ins) != 1 || ins[0].TestType != "subject" || ins[0].Tests != 1 || ins[0].Wins["B"] != 1 || len(ins[0].Findings) != 1 ||
		!strings.HasPrefix(ins[0].Findings[0], "Betreff „Neu für {{vorname}}“ schlug „Hallo {{vorname}}“") {
		t.Errorf("insights: %+v", ins)
	}

	// Mode winner, stopped: the waiting recipients get variant A.
	nl2 := e.draftNewsletter(t, list, "Zweiter Brief")
	var ab2 abTestJSON
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"campaign_id": nl2, "test_type": "sender", "b_from_name": "Jana", "mode": "winner",
		"sample_pct": 5, "auto_apply_winner": false}, 201).Data(t, &ab2)
	e.do(t, "POST", fmt.Sprintf("/v1/newsletters/%d/send", nl2), nil, 202)
	e.do(t, "GET", fmt.Sprintf("/v1/ab-tests/%d", ab2.ID), nil, 200).Data(t, &ab2)
	waiting := ab2.Results.Waiting
	if ab2.Status != "running" || waiting+ab2.Results.Variants["A"].Sent+ab2.Results.Variants["B"].Sent > 6 || waiting == 0 {
		t.Fatalf("winner mode: %+v %+v", ab2, ab2.Results)
	}
	e.do(t, "POST", fmt.Sprintf("/v1/ab-tests/%d/stop", ab2.ID), nil, 200).Data(t, &ab2)
	if ab2.Status != "stopped" || ab2.StatusLabel != "Gestoppt" || ab2.Released != waiting {
		t.Errorf("stopped: %+v (waiting %d)", ab2, waiting)
	}
	e.waitSent(t, fmt.Sprintf("/v1/newsletters/%d", nl2))
	if got := e.reason(t, e.do(t, "POST", fmt.Sprintf("/v1/ab-tests/%d/stop", ab2.ID), nil, 409)); got != "conflict:ab_test_stopped" {
		t.Errorf("second stop: %s", got)
	}

	// A draft can be deleted.
	nl3 := e.draftNewsletter(t, list, "Dritter Brief")
	var ab3 abTestJSON
	e.do(t, "POST", "/v1/ab-tests", map[string]any{"campaign_id": nl3, "test_type": "subject", "b_subject": "Anders"}, 201).Data(t, &ab3)
	e.do(t, "PATCH", fmt.Sprintf("/v1/ab-tests/%d", ab3.ID), map[string]any{"split_a": 70, "name": "Neu"}, 200).Data(t, &ab3)
	if ab3.SplitA != 70 || ab3.Name != "Neu" {
		t.Errorf("patched: %+v", ab3)
	}
	e.do(t, "DELETE", fmt.Sprintf("/v1/ab-tests/%d", ab3.ID), nil, 204)
	var all []abTestJSON
	e.do(t, "GET", "/v1/ab-tests?status=all", nil, 200).Data(t, &all)
	if len(all) != 2 {
		t.Errorf("all: %d", len(all))
	}
}

func TestABTestsNeedThePlanFeature(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "starter")
	for _, r := range []*apitest.Response{
		e.c.Request("GET", "/v1/ab-tests", nil),
		e.c.Request("POST", "/v1/ab-tests", map[string]any{"campaign_id": 1, "test_type": "subject", "b_subject": "X"}),
		e.c.Request("GET", "/v1/ab-tests/insights", nil),
		e.c.Request("POST", "/v1/ab-tests/1/winner", nil),
	} {
		body := wantError(t, r, 402, "plan_required")
		if body["feature"] != "ab_tests" || body["upgrade_url"] == nil {
			t.Errorf("402 body: %v", body)
		}
	}
}
