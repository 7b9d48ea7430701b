package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

func mkForm(t *testing.T, db *store.DB, acct int64, in store.FormInput) store.Form {
	t.Helper()
	if in.Name == nil {
		in.Name = ptr("Website")
	}
	f, err := db.CreateForm(context.Background(), acct, apiActor, in)
	if err != nil {
		t.Fatalf("create form: %v", err)
	}
	return f
}

func wantFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a validation error on %v", err, fields)
	}
	for _, f := range fields {
		if ve.Fields[f] == "" {
			t.Errorf("no message for %q in %v", f, ve.Fields)
		}
	}
	if len(ve.Fields) != len(fields) {
		t.Errorf("fields = %v, want exactly %v", ve.Fields, fields)
	}
}

func TestFormCRUD(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	news := mkList(t, db, acct, "News", false)
	vip := mkList(t, db, acct, "VIP", false)

	f := mkForm(t, db, acct, store.FormInput{Name: ptr("  Fußzeile  ")})
	if f.Name != "Fußzeile" || len(f.Token) != store.FormTokenLen || !f.DoubleOptIn || f.ProofOfWork ||
		f.MinFillSeconds != 3 || !slices.Equal(f.Fields, []string{"first_name"}) || len(f.ListIDs) != 0 || len(f.Tags) != 0 {
		t.Errorf("defaults: %+v", f)
	}
	g := mkForm(t, db, acct, store.FormInput{
		ListIDs: &[]int64{vip.ID, news.ID, vip.ID}, Tags: &[]string{" web ", "web", "lead"},
		Fields: &[]string{"city", "first_name", "last_name"}, DoubleOptIn: ptr(false), ProofOfWork: ptr(true),
		MinFillSeconds: ptr(0), SuccessRedirect: ptr("https://example.com/danke?x=1"), SuccessMessage: ptr("Danke!"),
	})
	if !slices.Equal(g.ListIDs, []int64{vip.ID, news.ID}) || !slices.Equal(g.Tags, []string{"web", "lead"}) ||
		!slices.Equal(g.Fields, []string{"first_name", "last_name", "city"}) || g.DoubleOptIn || !g.ProofOfWork ||
		g.MinFillSeconds != 0 || g.SuccessRedirect != "https://example.com/danke?x=1" || g.SuccessMessage != "Danke!" {
		t.Errorf("created: %+v", g)
	}
	if g.Token == f.Token {
		t.Error("two forms share a token")
	}

	got, err := db.Form(ctx, acct, g.ID)
	if err != nil || got.Token != g.Token || !slices.Equal(got.ListIDs, g.ListIDs) {
		t.Fatalf("Form = %+v, %v", got, err)
	}
	forms, total, err := db.Forms(ctx, acct, store.Page{Page: 1, PerPage: 1})
	if err != nil || total != 2 || len(forms) != 1 || forms[0].ID != g.ID {
		t.Errorf("Forms = %v, %d, %v (want newest first)", forms, total, err)
	}

	up, err := db.UpdateForm(ctx, acct, apiActor, g.ID, store.FormInput{ListIDs: &[]int64{news.ID}, SuccessRedirect: ptr("")})
	if err != nil || !slices.Equal(up.ListIDs, []int64{news.ID}) || up.SuccessRedirect != "" || up.Token != g.Token || up.Name != g.Name {
		t.Errorf("UpdateForm = %+v, %v", up, err)
	}

	// A deleted list drops out of the form when it is read.
	if err := db.DeleteList(ctx, acct, apiActor, news.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Form(ctx, acct, g.ID); len(got.ListIDs) != 0 {
		t.Errorf("list ids after deleting the list: %v", got.ListIDs)
	}

	pub, err := db.FormByToken(ctx, f.Token)
	if err != nil || pub.ID != f.ID || pub.AccountID != acct || pub.AccountName == "" {
		t.Errorf("FormByToken = %+v, %v", pub, err)
	}
	// A token one character off: its last character changed, whatever it was.
	wrong := f.Token[:len(f.Token)-1] + map[bool]string{true: "Y", false: "X"}[strings.HasSuffix(f.Token, "X")]
	for _, tok := range []string{"", "short", wrong} {
		if _, err := db.FormByToken(ctx, tok); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("FormByToken(%q) = %v, want ErrNotFound", tok, err)
		}
	}

	if err := db.DeleteForm(ctx, acct, apiActor, f.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FormByToken(ctx, f.Token); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("token of a deleted form: %v", err)
	}
	if err := db.DeleteForm(ctx, acct, apiActor, f.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	var acts []string
	if err := db.SelectContext(ctx, &acts, `SELECT action FROM activity_log WHERE account_id = $1 AND object_type = 'form' ORDER BY id`, acct); err != nil {
		t.Fatal(err)
	}
	if want := []string{"form.created", "form.created", "form.updated", "form.deleted"}; !slices.Equal(acts, want) {
		t.Errorf("activities = %v, want %v", acts, want)
	}
}

func TestFormValidation(t *testing.T) {
	ctx := context.Background()
	db := dbtest.NewDB(t)
	acct := newAccount(t, db, "business")
	other := newAccount(t, db, "business")
	foreign := mkList(t, db, other, "Fremd", false)
	own := mkList(t, db, acct, "Eigen", false)

	cases := []struct {
		name   string
		in     store.FormInput
		fields []string
	}{
		{"no name", store.FormInput{}, []string{"name"}},
		{"blank name", store.FormInput{Name: ptr("  ")}, []string{"name"}},
		{"unknown field", store.FormInput{Name: ptr("x"), Fields: &[]string{"first_name", "email"}}, []string{"fields"}},
		{"relative redirect", store.FormInput{Name: ptr("x"), SuccessRedirect: ptr("/danke")}, []string{"success_redirect"}},
		{"javascript redirect", store.FormInput{Name: ptr("x"), SuccessRedirect: ptr("javascript:alert(1)")}, []string{"success_redirect"}},
		{"redirect with credentials", store.FormInput{Name: ptr("x"), SuccessRedirect: ptr("https://u:p@example.com/")}, []string{"success_redirect"}},
		{"negative fill time", store.FormInput{Name: ptr("x"), MinFillSeconds: ptr(-1)}, []string{"min_fill_seconds"}},
		{"bad list id", store.FormInput{Name: ptr("x"), ListIDs: &[]int64{0}}, []string{"list_ids"}},
		{"another account's list", store.FormInput{Name: ptr("x"), ListIDs: &[]int64{own.ID, foreign.ID}}, []string{"list_ids"}},
		{"missing list", store.FormInput{Name: ptr("x"), ListIDs: &[]int64{foreign.ID + 1000}}, []string{"list_ids"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.CreateForm(ctx, acct, apiActor, c.in)
			wantFields(t, err, c.fields...)
		})
	}

	f := mkForm(t, db, acct, store.FormInput{})
	_, err := db.UpdateForm(ctx, acct, apiActor, f.ID, store.FormInput{ListIDs: &[]int64{foreign.ID}})
	wantFields(t, err, "list_ids")

	// Another account's form is not found, whatever the operation.
	if _, err := db.Form(ctx, other, f.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Form of another account: %v", err)
	}
	if _, err := db.UpdateForm(ctx, other, apiActor, f.ID, store.FormInput{Name: ptr("y")}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateForm of another account: %v", err)
	}
	if err := db.DeleteForm(ctx, other, apiActor, f.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteForm of another account: %v", err)
	}
	if _, total, _ := db.Forms(ctx, other, store.Page{Page: 1, PerPage: 25}); total != 0 {
		t.Errorf("other account lists %d forms", total)
	}
}
