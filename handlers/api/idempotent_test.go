package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/ai/aitest"
)

// failLateIdempotencyRecords injects a failure between an effect and its
// idempotent response: every response stored outside the transaction of a
// send or an AI debit fails, as if the process had died right after that
// transaction committed. A response stored in the effect's own transaction
// (which wrote a campaign or a ledger row) passes.
func failLateIdempotencyRecords(t *testing.T, db *store.DB) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), `
CREATE FUNCTION test_fail_late_idempotency_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM campaigns WHERE xmin = pg_current_xact_id()::xid)
     AND NOT EXISTS (SELECT 1 FROM ai_ledger WHERE xmin = pg_current_xact_id()::xid) THEN
    RAISE EXCEPTION 'injected failure: response recorded after its effect committed';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER test_fail_late_idempotency_record BEFORE UPDATE ON idempotency_keys
FOR EACH ROW WHEN (NEW.state = 'done') EXECUTE FUNCTION test_fail_late_idempotency_record();`); err != nil {
		t.Fatal(err)
	}
}

func countRows(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// A failure after a send committed must not let a retry with the same
// Idempotency-Key send again: the retry replays the response that committed
// with the send.
func TestSendResponseCommitsWithTheSend(t *testing.T) {
	t.Parallel()
	e := newSendAPIEnv(t)
	list := e.list(t, "idem", 2)
	nl := e.draftNewsletter(t, list, "Einmal")
	failLateIdempotencyRecords(t, e.db)

	send := map[string]any{"to": "einmal@example.net", "subject": "Nur einmal", "text": "Hallo"}
	first := e.c.Request(http.MethodPost, "/v1/emails/send", send, hdr("Idempotency-Key", "mail-1"))
	if first.Status != http.StatusAccepted {
		t.Fatalf("send: %d %s", first.Status, first.Body)
	}
	var sent emailSendJSON
	first.Data(t, &sent)
	again := e.c.Request(http.MethodPost, "/v1/emails/send", send, hdr("Idempotency-Key", "mail-1"))
	var replayed emailSendJSON
	again.Data(t, &replayed)
	if again.Status != http.StatusAccepted || again.Header.Get("Idempotent-Replayed") != "true" || replayed.CampaignID != sent.CampaignID {
		t.Errorf("retry of the email: %d replayed=%q %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	if n := countRows(t, e.db, `SELECT count(*) FROM campaigns WHERE account_id = $1 AND kind = 'email'`, e.acct); n != 1 {
		t.Errorf("%d emails recorded, want 1", n)
	}
	e.waitSent(t, fmt.Sprintf("/v1/emails/%d", sent.CampaignID))
	if n := len(e.srv.Messages()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}

	path := fmt.Sprintf("/v1/newsletters/%d/send", nl)
	first = e.c.Request(http.MethodPost, path, nil, hdr("Idempotency-Key", "news-1"))
	if first.Status != http.StatusAccepted {
		t.Fatalf("newsletter send: %d %s", first.Status, first.Body)
	}
	again = e.c.Request(http.MethodPost, path, nil, hdr("Idempotency-Key", "news-1"))
	var res sendResultJSON
	again.Data(t, &res)
	if again.Status != http.StatusAccepted || again.Header.Get("Idempotent-Replayed") != "true" || res.ID != nl || res.Queued != 2 {
		t.Errorf("retry of the newsletter: %d replayed=%q %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	if n := countRows(t, e.db, `SELECT count(*) FROM campaign_recipients WHERE campaign_id = $1`, nl); n != 2 {
		t.Errorf("%d recipients queued, want 2", n)
	}
}

// A failure after an AI debit committed must not let a retry call the
// provider and charge again.
func TestAIResponseCommitsWithTheDebit(t *testing.T) {
	t.Parallel()
	e := newAIEnv(t, "pro", 10*store.EUR, fixedTokens(aitest.Rewrite), nil)
	failLateIdempotencyRecords(t, e.db)
	body := map[string]any{"action": "improve", "text": "Hallo Welt"}
	first := e.c.Request(http.MethodPost, "/v1/ai/generate", body, hdr("Idempotency-Key", "gen-once"))
	if first.Status != http.StatusOK {
		t.Fatalf("generate: %d %s", first.Status, first.Body)
	}
	again := e.c.Request(http.MethodPost, "/v1/ai/generate", body, hdr("Idempotency-Key", "gen-once"))
	if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("retry: %d replayed=%q\n%s\nfirst:\n%s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, first.Body)
	}
	if calls, debits := providerCalls(e.primary), countRows(t, e.db, `SELECT count(*) FROM ai_ledger WHERE account_id = $1 AND kind = 'debit'`, e.acct); calls != 1 || debits != 1 {
		t.Errorf("%d provider calls and %d debits, want 1 and 1", calls, debits)
	}
	if b := e.balance(t); b != 10*store.EUR-34 {
		t.Errorf("balance %s, want one charge of 0.0034", b)
	}
}
