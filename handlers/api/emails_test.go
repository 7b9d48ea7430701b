package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
)

type emailSendJSON struct {
	CampaignID  int64   `json:"campaign_id"`
	Status      string  `json:"status"`
	Type        string  `json:"type"`
	Queued      int64   `json:"queued"`
	Sent        int64   `json:"sent"`
	Skipped     int64   `json:"skipped"`
	ScheduledAt *string `json:"scheduled_at"`
	Message     string  `json:"message"`
}

func TestEmailSendAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSendAPIEnv(t)
	e.do(t, "POST", "/v1/unsubscribes", map[string]any{"emails": []string{"weg@example.net"}}, 201)

	// Without a type (decisions.md "Single emails and the unsubscribe line"):
	// the blocked address is skipped and reported, the mail carries the
	// unsubscribe line and List-Unsubscribe; "to" may be one string.
	var res emailSendJSON
	e.do(t, "POST", "/v1/emails/send", map[string]any{"to": []string{"weg@example.net", "da@example.net"},
		"subject": "Nachfrage", "html": "<p>Alles gut?</p>"}, 202).Data(t, &res)
	// The first batch goes out in the request, unless a worker lane took the
	// row first: then it is on its way.
	if res.Type != "follow_up" || res.Queued != 1 || res.Skipped != 1 ||
		res.Message != "1 E-Mail wird versendet, 1 Empfänger wurde übersprungen (gesperrt oder nicht angemeldet)." {
		t.Fatalf("without a type: %+v", res)
	}
	e.waitSent(t, fmt.Sprintf("/v1/emails/%d", res.CampaignID))
	msgs := e.srv.Messages()
	if len(msgs) != 1 || msgs[0].To[0] != "da@example.net" {
		t.Fatalf("messages without a type: %d", len(msgs))
	}
	if data := string(msgs[0].Data); !strings.Contains(data, "List-Unsubscribe: <") || !strings.Contains(data, "/unsubscribe/") {
		t.Errorf("mail without a type lacks List-Unsubscribe or the unsubscribe line:\n%s", data)
	}

	// Transactional, only when asked for: blocked addresses get it too, without the line.
	e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "weg@example.net", "type": "transactional", "subject": "Rechnung {{nummer}}",
		"html": "<p>Ihre Rechnung {{nummer}}</p>", "placeholders": map[string]string{"nummer": "R-1"}}, 202).Data(t, &res)
	if res.Type != "transactional" || res.Queued != 1 || res.Skipped != 0 || res.Sent > 1 || (res.Status != "sent" && res.Status != "sending") ||
		res.Message != "1 E-Mail wird versendet." {
		t.Fatalf("transactional: %+v", res)
	}
	e.waitSent(t, fmt.Sprintf("/v1/emails/%d", res.CampaignID))
	msgs = e.srv.Messages()
	if len(msgs) != 2 || !strings.Contains(string(msgs[1].Data), "Subject: Rechnung R-1") {
		t.Fatalf("messages: %d", len(msgs))
	}
	if data := string(msgs[1].Data); strings.Contains(data, "List-Unsubscribe") || strings.Contains(data, "/unsubscribe/") {
		t.Errorf("transactional mail with List-Unsubscribe or the unsubscribe line:\n%s", data)
	}

	// An explicit follow-up is the same as no type.
	e.do(t, "POST", "/v1/emails/send", map[string]any{"to": []string{"weg@example.net", "da@example.net"}, "type": "follow_up",
		"subject": "Nachfrage", "text": "Alles gut?"}, 202).Data(t, &res)
	if res.Type != "follow_up" || res.Queued != 1 || res.Skipped != 1 || !strings.Contains(res.Message, "übersprungen") {
		t.Fatalf("follow-up: %+v", res)
	}
	e.waitSent(t, fmt.Sprintf("/v1/emails/%d", res.CampaignID))
	if got := len(e.srv.Messages()); got != 3 {
		t.Errorf("%d messages after the follow-up, want 3", got)
	}

	// Validation: bad placeholders, bad addresses, lists only for follow-ups, 413 for large content.
	r := e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "a@example.net", "subject": "x", "text": "x",
		"placeholders": map[string]string{"Gross": "x"}}, 422)
	wantFields(t, e.fields(t, r), "placeholders.Gross")
	tooMany := map[string]string{}
	for i := range 51 {
		tooMany[fmt.Sprintf("p%d", i)] = "x"
	}
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "a@example.net", "subject": "x", "text": "x", "placeholders": tooMany}, 422)), "placeholders")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/emails/send", map[string]any{"to": []string{"kaputt"}, "subject": "x", "text": "x"}, 422)), "to")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/emails/send", map[string]any{"to": 5, "subject": "x", "text": "x"}, 422)), "to")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "a@example.net", "type": "transactional", "list_ids": []int64{1}, "subject": "x", "text": "x"}, 422)), "list_ids")
	wantFields(t, e.fields(t, e.do(t, "POST", "/v1/emails/send", map[string]any{}, 422)), "to", "subject", "html")
	e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "a@example.net", "subject": "x", "html": strings.Repeat("x", store.MaxHTMLBytes+1)}, 413)

	// Scheduled: 202 "scheduled", listed, shown, cancelled (record kept), not twice.
	at := time.Now().Add(2 * time.Hour).Format(time.RFC3339)
	e.do(t, "POST", "/v1/emails/send", map[string]any{"to": []string{"spaeter@example.net"}, "subject": "Später", "text": "Hallo",
		"scheduled_at": at}, 202).Data(t, &res)
	if res.Status != "scheduled" || res.ScheduledAt == nil || res.Queued != 0 {
		t.Fatalf("scheduled: %+v", res)
	}
	var list []struct {
		ID     int64    `json:"id"`
		Status string   `json:"status"`
		To     []string `json:"to"`
		HTML   *string  `json:"html"`
	}
	e.do(t, "GET", "/v1/emails?status=scheduled", nil, 200).Data(t, &list)
	if len(list) != 1 || list[0].ID != res.CampaignID || list[0].To[0] != "spaeter@example.net" || list[0].HTML != nil {
		t.Fatalf("list: %+v", list)
	}
	path := fmt.Sprintf("/v1/emails/%d", res.CampaignID)
	var one struct {
		Status string  `json:"status"`
		Text   *string `json:"text"`
	}
	e.do(t, "GET", path, nil, 200).Data(t, &one)
	if one.Status != "scheduled" || one.Text == nil || *one.Text != "Hallo" {
		t.Errorf("get: %+v", one)
	}
	e.do(t, "DELETE", path, nil, 200).Data(t, &one)
	if one.Status != "cancelled" {
		t.Errorf("cancelled: %+v", one)
	}
	if got := e.reason(t, e.do(t, "DELETE", path, nil, 409)); got != "conflict:not_scheduled" {
		t.Errorf("cancel twice: %s", got)
	}
	e.do(t, "GET", "/v1/emails/999999", nil, 404)

	// The daily limit.
	if _, err := e.db.ExecContext(ctx, `UPDATE plans SET max_sends_per_day = 2 WHERE name = 'business'`); err != nil {
		t.Fatal(err)
	}
	if r := e.do(t, "POST", "/v1/emails/send", map[string]any{"to": "x@example.net", "subject": "x", "text": "x"}, 402); r.ErrorCode(t) != "limit_reached" {
		t.Errorf("limit: %s", r.Body)
	}
}
