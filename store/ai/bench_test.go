package ai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
	"github.com/rundbrief/rundbrief/store/dbtest"
)

// BenchmarkGenerate measures Rundbrief's own cost of one generation of an HTML
// newsletter (validation, prompt, HTTP round trip to a local fake provider, the
// structure check, the debit transaction): the part that is not the model's time.
func BenchmarkGenerate(b *testing.B) {
	db := dbtest.NewDB(b)
	res, err := db.CreateAccount(context.Background(), store.NewAccount{Name: "Bench", Email: "bench@acme.test", Plan: "pro"})
	if err != nil {
		b.Fatal(err)
	}
	acct := res.Account.ID
	if _, err := db.AITopUp(context.Background(), acct, 100_000*store.EUR); err != nil {
		b.Fatal(err)
	}
	srv := aitest.NewAnthropic(b, "k", aitest.Rewrite)
	svc := ai.NewService(db, ai.Config{Primary: ai.NewAnthropic(srv.URL, "k")})
	html := strings.Repeat(mail, 20) // ≈ 11 KB, a long newsletter
	in := ai.Input{Action: "improve", HTML: html}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := svc.Generate(context.Background(), acct, in, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
