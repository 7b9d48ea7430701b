package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
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

// CompleteIdempotencyKey stores the response of the request that owns key.
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
