package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

// TestRichTextTemplateSanitised: a template written in the rich-text editor
// (through the API or the portal) is sanitised by the store on create and
// update; hand-written template HTML stays as typed.
func TestRichTextTemplateSanitised(t *testing.T) {
	ctx := context.Background()
	e := newCampaignEnv(t)
	dirty := store.RichTextOpen + `<div>Hallo<script>alert(1)</script><img src="https://cdn.test/a.png" onerror="alert(2)"></div>` + store.RichTextClose
	tp, err := e.db.CreateTemplate(ctx, e.acct, apiActor, store.TemplateInput{Key: str("reich"), Name: str("Reich"), HTML: &dirty})
	if err != nil {
		t.Fatal(err)
	}
	if !store.IsRichText(tp.HTML) || strings.Contains(tp.HTML, "script") || strings.Contains(tp.HTML, "onerror") || !strings.Contains(tp.HTML, "Hallo") {
		t.Errorf("create stored %q", tp.HTML)
	}
	up, err := e.db.UpdateTemplate(ctx, e.acct, apiActor, tp.ID, store.TemplateInput{HTML: &dirty})
	if err != nil || strings.Contains(up.HTML, "script") {
		t.Errorf("update stored %q %v", up.HTML, err)
	}
	own := `<table><tr><td onclick="x()">{{inhalt}}</td></tr></table>`
	if up, err = e.db.UpdateTemplate(ctx, e.acct, apiActor, tp.ID, store.TemplateInput{HTML: &own}); err != nil || up.HTML != own {
		t.Errorf("own html changed: %q %v", up.HTML, err)
	}
}
