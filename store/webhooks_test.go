package store_test

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/secret"
)

func webhookBox(t *testing.T) *secret.Box {
	t.Helper()
	box, err := secret.NewBox("webhook-tests-secret-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	return box
}

var hookActor = store.Actor{Type: store.ActorKey, ID: 0}

func TestWebhookSettingsValidate(t *testing.T) {
	cases := []struct {
		name       string
		in         store.WebhookSettings
		badFields  []string
		wantEvents []string
	}{
		{"ok", store.WebhookSettings{URL: " https://hooks.example.com/x ", Events: []string{"list.joined", "contact.created", "list.joined"}},
			nil, []string{"contact.created", "list.joined"}},
		{"all", store.WebhookSettings{URL: "http://hooks.example.com", Events: []string{"contact.created", "*"}}, nil, []string{"*"}},
		{"unknown event", store.WebhookSettings{URL: "https://hooks.example.com", Events: []string{"contact.exploded"}}, []string{"events"}, nil},
		{"no events", store.WebhookSettings{URL: "https://hooks.example.com"}, []string{"events"}, nil},
		{"no url", store.WebhookSettings{Events: []string{"*"}}, []string{"url"}, nil},
		{"ftp", store.WebhookSettings{URL: "ftp://hooks.example.com", Events: []string{"*"}}, []string{"url"}, nil},
		{"relative", store.WebhookSettings{URL: "/hooks", Events: []string{"*"}}, []string{"url"}, nil},
		{"credentials", store.WebhookSettings{URL: "https://user:pw@hooks.example.com", Events: []string{"*"}}, []string{"url"}, nil},
		{"fragment", store.WebhookSettings{URL: "https://hooks.example.com/#x", Events: []string{"*"}}, []string{"url"}, nil},
		{"long description", store.WebhookSettings{URL: "https://hooks.example.com", Events: []string{"*"}, Description: strings.Repeat("x", 501)},
			[]string{"description"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.in.Validate()
			var ve *store.ValidationError
			if len(c.badFields) == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if !slices.Equal(c.in.Events, c.wantEvents) {
					t.Errorf("events %v, want %v", c.in.Events, c.wantEvents)
				}
				if strings.TrimSpace(c.in.URL) != c.in.URL {
					t.Errorf("url not trimmed: %q", c.in.URL)
				}
				return
			}
			if !errors.As(err, &ve) {
				t.Fatalf("want a validation error, got %v", err)
			}
			for _, f := range c.badFields {
				if ve.Fields[f] == "" {
					t.Errorf("no message for %s: %v", f, ve.Fields)
				}
			}
		})
	}
}

func TestWebhookLimitAndUsage(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	box := webhookBox(t)
	acct := newAccount(t, db, "starter")
	in := store.WebhookSettings{URL: "https://hooks.example.com/in", Events: []string{"*"}}
	var ids []int64
	for range 20 {
		w, _, err := db.CreateWebhook(ctx, box, acct, hookActor, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	_, _, err := db.CreateWebhook(ctx, box, acct, hookActor, in)
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != "webhooks" || le.Max != 20 {
		t.Fatalf("21st webhook: %v", err)
	}
	u, err := db.Usage(ctx, acct, time.Now())
	if err != nil || u.Webhooks != 20 {
		t.Fatalf("usage %d %v", u.Webhooks, err)
	}
	if err := db.DeleteWebhook(ctx, acct, hookActor, ids[0]); err != nil {
		t.Fatal(err)
	}
	if u, _ := db.Usage(ctx, acct, time.Now()); u.Webhooks != 19 {
		t.Fatalf("usage after delete: %d", u.Webhooks)
	}
	if _, _, err := db.CreateWebhook(ctx, box, acct, hookActor, in); err != nil {
		t.Fatalf("after a delete there is room again: %v", err)
	}
	// Another account's webhook is invisible.
	other := newAccount(t, db, "business")
	if _, err := db.Webhook(ctx, other, ids[1]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("foreign webhook: %v", err)
	}
	if err := db.DeleteWebhook(ctx, other, hookActor, ids[1]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("foreign delete: %v", err)
	}
}

func TestWebhookSecretIsSealedAndRotates(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	box := webhookBox(t)
	acct := newAccount(t, db, "business")
	w, first, err := db.CreateWebhook(ctx, box, acct, hookActor, store.WebhookSettings{URL: "https://hooks.example.com", Events: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := strings.CutPrefix(first, "whsec_")
	if b, err := base64.StdEncoding.DecodeString(raw); !ok || err != nil || len(b) != 32 {
		t.Fatalf("secret %q is not whsec_ + base64 of 32 bytes", first)
	}
	var sealed string
	if err := db.GetContext(ctx, &sealed, `SELECT secret_sealed FROM webhooks WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, raw) || !strings.HasPrefix(sealed, "v1.") {
		t.Fatalf("secret stored unsealed: %q", sealed)
	}
	// A sealed secret copied to another webhook does not open there.
	w2, _, err := db.CreateWebhook(ctx, box, acct, hookActor, store.WebhookSettings{URL: "https://hooks.example.com/2", Events: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE webhooks SET secret_sealed = $1 WHERE id = $2`, sealed, w2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.WebhookSecrets(ctx, box, acct, w2.ID, time.Now()); !errors.Is(err, secret.ErrOpen) {
		t.Errorf("copied secret opened: %v", err)
	}

	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	got, err := db.WebhookSecrets(ctx, box, acct, w.ID, now)
	if err != nil || !slices.Equal(got, []string{first}) {
		t.Fatalf("secrets before rotation: %v %v", len(got), err)
	}
	rotated, second, err := db.RotateWebhookSecret(ctx, box, acct, hookActor, w.ID, now)
	if err != nil || second == first || !strings.HasPrefix(second, "whsec_") {
		t.Fatalf("rotate: %v", err)
	}
	if rotated.PreviousSecretExpiresAt == nil || !rotated.PreviousSecretExpiresAt.Equal(now.Add(24*time.Hour)) {
		t.Errorf("previous secret expires %v", rotated.PreviousSecretExpiresAt)
	}
	for _, c := range []struct {
		at   time.Time
		want []string
	}{
		{now.Add(time.Hour), []string{second, first}},
		{now.Add(24*time.Hour - time.Second), []string{second, first}},
		{now.Add(24 * time.Hour), []string{second}},
	} {
		got, err := db.WebhookSecrets(ctx, box, acct, w.ID, c.at)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("at %v: %d secrets (%v), want %d", c.at.Sub(now), len(got), err, len(c.want))
		}
	}
	// A second rotation drops the first secret at once.
	_, third, err := db.RotateWebhookSecret(ctx, box, acct, hookActor, w.ID, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := db.WebhookSecrets(ctx, box, acct, w.ID, now.Add(2*time.Hour)); !slices.Equal(got, []string{third, second}) {
		t.Errorf("after the second rotation: %d secrets", len(got))
	}
}

func TestWebhookPauseResumeIsLogged(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	box := webhookBox(t)
	acct := newAccount(t, db, "business")
	w, _, err := db.CreateWebhook(ctx, box, acct, hookActor, store.WebhookSettings{URL: "https://hooks.example.com", Events: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	paused := store.WebhookPaused
	got, err := db.UpdateWebhook(ctx, acct, hookActor, w.ID, store.WebhookPatch{Status: &paused}, now)
	if err != nil || got.Status != store.WebhookPaused || got.PauseReason != store.PauseManual || got.PausedAt == nil {
		t.Fatalf("pause: %+v %v", got, err)
	}
	active := store.WebhookActive
	desc := "CRM"
	got, err = db.UpdateWebhook(ctx, acct, hookActor, w.ID, store.WebhookPatch{Status: &active, Description: &desc}, now.Add(time.Minute))
	if err != nil || got.Status != store.WebhookActive || got.PausedAt != nil || got.PauseReason != "" || got.Description != "CRM" {
		t.Fatalf("resume: %+v %v", got, err)
	}
	bad := "sleeping"
	if _, err := db.UpdateWebhook(ctx, acct, hookActor, w.ID, store.WebhookPatch{Status: &bad}, now); err == nil {
		t.Error("unknown status accepted")
	}
	acts, _, err := db.ActivityLog(ctx, acct, store.ActivityFilter{ObjectType: store.ObjectWebhook, ObjectID: w.ID}, store.Page{Page: 1, PerPage: 10})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range acts {
		actions = append(actions, a.Action)
	}
	want := []string{"webhook.resumed", "webhook.updated", "webhook.paused", "webhook.created"}
	if !slices.Equal(actions, want) {
		t.Errorf("activity %v, want %v", actions, want)
	}
}
