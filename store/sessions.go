package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/alexedwards/scs/v2"
)

// Session keys under which the portal keeps the signed-in user. Commit copies them
// into the sessions table's columns, so that all sessions of a user or an account
// can be ended with one statement.
const (
	SessionUserKey    = "user_id"
	SessionAccountKey = "account_id"
)

// SessionCleanupInterval is how often SessionStore.Run deletes expired sessions and
// old sign-in attempts.
const SessionCleanupInterval = 10 * time.Minute

// SessionStore keeps the portal's sessions in PostgreSQL, so that every process on
// the database shares them. It implements scs.Store and scs.CtxStore.
//
// Ending a session leaves a tombstone (ended_at) until the session would have
// expired anyway: a request that loaded the session before it was ended commits it
// again when it finishes, and without the tombstone that commit would bring the
// session back to life.
type SessionStore struct {
	db    *DB
	log   *slog.Logger
	now   func() time.Time
	codec scs.GobCodec
}

var _ scs.CtxStore = (*SessionStore)(nil)

// NewSessionStore returns the session store over db; log receives cleanup errors.
func NewSessionStore(db *DB, log *slog.Logger) *SessionStore {
	return &SessionStore{db: db, log: log, now: time.Now}
}

const selectSession = `SELECT data FROM sessions WHERE token = $1 AND expiry > $2 AND ended_at IS NULL`

// FindCtx returns the data of a live session; found is false for an unknown,
// expired or ended token.
func (s *SessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var data []byte
	if err := s.db.GetContext(ctx, &data, selectSession, token, s.now()); err != nil {
		if err = notFound("find session", err); errors.Is(err, ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return data, true, nil
}

// upsertSession writes a session unless it was ended (see SessionStore).
const upsertSession = `INSERT INTO sessions (token, data, expiry, account_id, user_id) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry,
  account_id = EXCLUDED.account_id, user_id = EXCLUDED.user_id
WHERE sessions.ended_at IS NULL`

// CommitCtx stores a session's data and expiry.
func (s *SessionStore) CommitCtx(ctx context.Context, token string, data []byte, expiry time.Time) error {
	accountID, userID, err := s.owner(data)
	if err != nil {
		return err
	}
	// The relaxed pool: a crash may lose the last few hundred milliseconds of
	// commits, which costs at most an extended idle time or a repeated sign-in,
	// while every signed-in request saves waiting for a WAL flush. Ending a
	// session (DeleteCtx, EndUserSessions) stays durable.
	if _, err := s.db.relaxed.ExecContext(ctx, upsertSession, token, data, expiry, accountID, userID); err != nil {
		return fmt.Errorf("store: commit session: %w", err)
	}
	return nil
}

// owner reads the signed-in user and account out of encoded session data (nil, nil
// for an anonymous session).
func (s *SessionStore) owner(data []byte) (accountID, userID *int64, err error) {
	_, values, err := s.codec.Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("store: commit session: %w", err)
	}
	if v, ok := values[SessionAccountKey].(int64); ok && v != 0 {
		accountID = &v
	}
	if v, ok := values[SessionUserKey].(int64); ok && v != 0 {
		userID = &v
	}
	return accountID, userID, nil
}

const endSession = `UPDATE sessions SET ended_at = $2, data = '' WHERE token = $1 AND ended_at IS NULL`

// DeleteCtx ends a session (sign-out, token renewal). An unknown token is no error.
func (s *SessionStore) DeleteCtx(ctx context.Context, token string) error {
	if _, err := s.db.ExecContext(ctx, endSession, token, s.now()); err != nil {
		return fmt.Errorf("store: delete session: %w", err)
	}
	return nil
}

// Find is FindCtx without a context, for scs.Store.
func (s *SessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit is CommitCtx without a context, for scs.Store.
func (s *SessionStore) Commit(token string, data []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, data, expiry)
}

// Delete is DeleteCtx without a context, for scs.Store.
func (s *SessionStore) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}

const endUserSessions = `UPDATE sessions SET ended_at = $3, data = '' WHERE account_id = $1 AND user_id = $2 AND ended_at IS NULL`

// EndUserSessions signs a user out everywhere (after a password change: renew the
// current session's token first, and the renewed session survives, since it is
// committed only after this ran).
func (db *DB) EndUserSessions(ctx context.Context, accountID, userID int64, now time.Time) error {
	if _, err := db.ExecContext(ctx, endUserSessions, accountID, userID, now); err != nil {
		return fmt.Errorf("store: end user sessions: %w", err)
	}
	return nil
}

const endAccountSessions = `UPDATE sessions SET ended_at = $2, data = '' WHERE account_id = $1 AND ended_at IS NULL`

// EndAccountSessions signs every user of an account out everywhere.
func (db *DB) EndAccountSessions(ctx context.Context, accountID int64, now time.Time) error {
	if _, err := db.ExecContext(ctx, endAccountSessions, accountID, now); err != nil {
		return fmt.Errorf("store: end account sessions: %w", err)
	}
	return nil
}

const purgeSessions = `DELETE FROM sessions WHERE expiry < $1`

// Purge deletes expired sessions (and their tombstones) and sign-in attempts that
// no longer count.
func (s *SessionStore) Purge(ctx context.Context, now time.Time) error {
	if _, err := s.db.ExecContext(ctx, purgeSessions, now); err != nil {
		return fmt.Errorf("store: purge sessions: %w", err)
	}
	return s.db.purgeLoginAttempts(ctx, now)
}

// Run purges every SessionCleanupInterval until ctx ends. Several processes may run
// it: the deletes are idempotent.
func (s *SessionStore) Run(ctx context.Context) error {
	tick := time.NewTicker(SessionCleanupInterval)
	defer tick.Stop()
	for {
		if err := s.Purge(ctx, s.now()); err != nil && ctx.Err() == nil {
			s.log.Error("session cleanup", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
