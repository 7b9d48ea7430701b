package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"
)

// IdempotencyTTL is how long a stored response is replayed.
const IdempotencyTTL = 24 * time.Hour

// idempotencyLease is how long a running request holds its key. A process that dies
// mid-request leaves a 'running' row; after the lease a retry may take it over.
const idempotencyLease = 2 * time.Minute

// IdemOutcome says what to do with a request that carries an Idempotency-Key.
type IdemOutcome int

// The outcomes of ClaimIdempotencyKey.
const (
	IdemProceed  IdemOutcome = iota // this request owns the key: execute it
	IdemReplay                      // a stored response exists: replay it
	IdemRunning                     // the first request is still running
	IdemMismatch                    // the key was used with another request body
)

// StoredResponse is a response kept for replay.
type StoredResponse struct {
	Status  int
	Header  http.Header
	Body    []byte
	Created time.Time
}

const claimIdempotencyKey = `INSERT INTO idempotency_keys (account_id, key, request_hash, state, locked_until, expires_at)
VALUES ($1, $2, $3, 'running', now() + $4 * interval '1 millisecond', now() + $5 * interval '1 millisecond')
ON CONFLICT (account_id, key) DO UPDATE SET
  request_hash = EXCLUDED.request_hash, state = 'running', response_status = NULL, response_headers = NULL,
  response_body = NULL, locked_until = EXCLUDED.locked_until, created_at = now(), expires_at = EXCLUDED.expires_at
WHERE idempotency_keys.expires_at < now()
   OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_until < now()
       AND idempotency_keys.request_hash = EXCLUDED.request_hash)
RETURNING true`

const selectIdempotencyKey = `SELECT request_hash, state, response_status, response_headers, response_body, created_at
FROM idempotency_keys WHERE account_id = $1 AND key = $2`

// ClaimIdempotencyKey decides, atomically across processes, whether this request runs
// (it then owns the key until Complete or Release), replays a stored response, or is
// refused. requestHash covers method, path and the exact body bytes.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, accountID int64, key string, requestHash []byte) (IdemOutcome, StoredResponse, error) {
	for range 3 {
		var claimed bool
		err := db.GetContext(ctx, &claimed, claimIdempotencyKey, accountID, key, requestHash,
			idempotencyLease.Milliseconds(), IdempotencyTTL.Milliseconds())
		if err == nil {
			return IdemProceed, StoredResponse{}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, StoredResponse{}, fmt.Errorf("store: claim idempotency key: %w", err)
		}
		var row struct {
			RequestHash []byte        `db:"request_hash"`
			State       string        `db:"state"`
			Status      sql.NullInt64 `db:"response_status"`
			Headers     []byte        `db:"response_headers"`
			Body        []byte        `db:"response_body"`
			CreatedAt   time.Time     `db:"created_at"`
		}
		err = db.GetContext(ctx, &row, selectIdempotencyKey, accountID, key)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released by its owner in between: try to claim again
		}
		if err != nil {
			return 0, StoredResponse{}, fmt.Errorf("store: read idempotency key: %w", err)
		}
		if string(row.RequestHash) != string(requestHash) {
			return IdemMismatch, StoredResponse{}, nil
		}
		if row.State == "running" {
			return IdemRunning, StoredResponse{}, nil
		}
		resp := StoredResponse{Status: int(row.Status.Int64), Body: row.Body, Header: http.Header{}, Created: row.CreatedAt}
		if len(row.Headers) > 0 {
			if err := json.Unmarshal(row.Headers, &resp.Header); err != nil {
				return 0, StoredResponse{}, fmt.Errorf("store: decode idempotent headers: %w", err)
			}
		}
		return IdemReplay, resp, nil
	}
	return IdemRunning, StoredResponse{}, nil
}

const completeIdempotencyKey = `UPDATE idempotency_keys SET state = 'done', response_status = $3, response_headers = $4, response_body = $5
WHERE account_id = $1 AND key = $2`

// CompleteIdempotencyKey stores the response of the request that owns key. It
// also replaces a response that the request's transaction stored
// (RecordIdempotent) by the final one, which may know more (a send's first
// batch went out after the commit).
func (db *DB) CompleteIdempotencyKey(ctx context.Context, accountID int64, key string, resp StoredResponse) error {
	h, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("store: complete idempotency key: %w", err)
	}
	if _, err := db.ExecContext(ctx, completeIdempotencyKey, accountID, key, resp.Status, h, resp.Body); err != nil {
		return fmt.Errorf("store: complete idempotency key: %w", err)
	}
	return nil
}

const releaseIdempotencyKey = `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'running'`

// ReleaseIdempotencyKey forgets a key whose request failed with a 5xx, so a retry runs again.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, accountID int64, key string) error {
	if _, err := db.ExecContext(ctx, releaseIdempotencyKey, accountID, key); err != nil {
		return fmt.Errorf("store: release idempotency key: %w", err)
	}
	return nil
}

// IdemClaim is the Idempotency-Key that a running request owns (IdemProceed),
// carried in the request's context (WithIdemClaim). An operation whose effect
// must not happen twice (a send, an AI debit) stores its response in the
// transaction that commits the effect: the handler says how a result becomes
// the response (RespondInTx), the service's transaction records it
// (RecordIdempotent). Then no failure after the commit (a crash, a lost
// connection) can leave the key free for a retry that repeats the effect; the
// retry replays the response instead.
type IdemClaim struct {
	AccountID int64
	Key       string
	render    func(result any) (StoredResponse, error)
}

type idemClaimKey struct{}

// WithIdemClaim returns ctx carrying the claim of the request's key.
func WithIdemClaim(ctx context.Context, c *IdemClaim) context.Context {
	return context.WithValue(ctx, idemClaimKey{}, c)
}

// RespondInTx tells the request's claim (if it has one) how the service's
// result of type T becomes the stored response. Call it before the service.
func RespondInTx[T any](ctx context.Context, render func(result T) (StoredResponse, error)) {
	c, _ := ctx.Value(idemClaimKey{}).(*IdemClaim)
	if c == nil {
		return
	}
	c.render = func(result any) (StoredResponse, error) {
		r, ok := result.(T)
		if !ok {
			var want T
			return StoredResponse{}, fmt.Errorf("store: idempotent response: result %T, but the handler renders %T", result, want)
		}
		return render(r)
	}
}

const recordIdempotentResponse = `UPDATE idempotency_keys SET state = 'done', response_status = $3, response_headers = $4, response_body = $5
WHERE account_id = $1 AND key = $2 AND state = 'running'`

// RecordIdempotent stores the response rendered from result in tx, the
// transaction that commits the effect, when the request in ctx owns an
// Idempotency-Key and its handler called RespondInTx; otherwise it does
// nothing. If the key is no longer held, the transaction fails: the effect
// commits only together with its response.
func RecordIdempotent[T any](ctx context.Context, tx *sqlx.Tx, result T) error {
	c, _ := ctx.Value(idemClaimKey{}).(*IdemClaim)
	if c == nil || c.render == nil {
		return nil
	}
	resp, err := c.render(result)
	if err != nil {
		return err
	}
	h, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("store: record idempotent response: %w", err)
	}
	res, err := tx.ExecContext(ctx, recordIdempotentResponse, c.AccountID, c.Key, resp.Status, h, resp.Body)
	if err != nil {
		return fmt.Errorf("store: record idempotent response: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: record idempotent response: %w", err)
	} else if n != 1 {
		return fmt.Errorf("store: record idempotent response: key %q is no longer held by this request", c.Key)
	}
	return nil
}
