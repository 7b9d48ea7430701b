package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// TestEditorAIRateLimit: the portal's assistant counts into the account's AI
// budget of the minute that the API's /ai/generate uses (store.HitAI): with
// the budget spent (here by "API" requests), the assistant refuses with a
// German message and 429, and nothing is charged.
func TestEditorAIRateLimit(t *testing.T) {
	t.Parallel()
	fake := aitest.NewAnthropic(t, "sk-ant-test", aitest.Lines(8))
	s := newServerWith(t, dbtest.URL(t), nil, base, serverOptions{AI: &ai.Config{
		Primary: ai.NewAnthropic(fake.URL, "sk-ant-test"), AttemptTimeout: 5 * time.Second, RetryDelay: time.Millisecond}})
	acct := newAccount(t, s.db, "business")
	ctx := context.Background()
	if _, err := s.db.AITopUp(ctx, acct.ID, 5*store.EUR); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	c.signIn(acct.Email, acct.Password)
	form := draftForm(0, "Herbst", "Unsere neuen Brötchen sind da.")
	form.Set("ai_action", "subject_ideas")

	// The window is the wall-clock minute: should it turn between spending
	// the budget and the request, spend it again in the new one.
	for attempt := 0; ; attempt++ {
		minute := time.Now().Truncate(store.RateWindow)
		for range store.AIRateLimit - 1 { // the API's requests of the minute
			if _, err := s.db.HitAI(ctx, acct.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		// The last request of the budget is the assistant's own: allowed.
		r := c.post("/editor/ai", form, "HX-Request", "true")
		if time.Now().Truncate(store.RateWindow) != minute && attempt == 0 {
			continue
		}
		wantStatus(t, r, http.StatusOK)
		before, _ := s.db.AIBalance(ctx, acct.ID)
		r = c.post("/editor/ai", form, "HX-Request", "true")
		after, _ := s.db.AIBalance(ctx, acct.ID)
		if time.Now().Truncate(store.RateWindow) != minute && attempt == 0 {
			continue
		}
		if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" ||
			!strings.HasPrefix(text(r.find("ai-error")), "Zu viele KI-Anfragen in dieser Minute.") {
			t.Fatalf("over the budget: %d %q", r.StatusCode, text(r.find("ai-error")))
		}
		if after != before {
			t.Errorf("charged over the budget: %v → %v", before, after)
		}
		// And the API's next request is refused by the same budget.
		res, err := s.db.HitAI(ctx, acct.ID, time.Now())
		if err != nil || res.Allowed {
			t.Errorf("the API's request after the portal's: %+v %v", res, err)
		}
		return
	}
}
