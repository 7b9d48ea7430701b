package store

import (
	"context"
	"sync"
	"time"
)

// SendRateWindow is the window of a messages-per-second limit.
const SendRateWindow = time.Second

// SendRateLimiter keeps a messages-per-second limit (an SMTP server's
// rate_per_second, the relay's rate) for all serve processes together. It
// works like RateLimiter: the budget of each one-second window is a counter
// in rate_counters, and a process reserves a block of it (a lease of a quarter
// of what is left, at least one) with one statement, then hands the block out
// locally. Together, the processes never send more than the limit in a
// window; a lease that is not used up before its window ends is lost, which
// can only slow sending, never speed it up. Windows follow each process's
// clock (the machines' clocks are assumed to agree to a few milliseconds, as
// NTP keeps them), so a window's budget is shared by processes whose clocks
// say the same second.
type SendRateLimiter struct {
	db *DB
	mu sync.Mutex
	// buckets holds one state per limited route; a process has a handful.
	buckets map[string]*sendRateState
}

type sendRateState struct {
	mu sync.Mutex
	lease
}

// NewSendRateLimiter returns a limiter over db's counters.
func NewSendRateLimiter(db *DB) *SendRateLimiter {
	return &SendRateLimiter{db: db, buckets: map[string]*sendRateState{}}
}

// Wait blocks until one more message may be sent on bucket (e.g. "smtp:12")
// under perSecond for all processes, or ctx ends. accountID is the account
// the counter row is filed under. perSecond ≤ 0 does not limit.
func (l *SendRateLimiter) Wait(ctx context.Context, accountID int64, bucket string, perSecond int) error {
	if perSecond <= 0 {
		return nil
	}
	st := l.state(bucket)
	st.mu.Lock()
	defer st.mu.Unlock()
	for {
		now := time.Now()
		start := now.Truncate(SendRateWindow)
		if !st.window.Equal(start) {
			st.lease = lease{window: start, limit: perSecond}
		}
		if st.limit != perSecond { // the setting changed during the window
			st.limit = perSecond
			st.exhausted = st.global >= perSecond
		}
		if st.used < st.granted {
			st.used++
			return nil
		}
		if !st.exhausted {
			n := max((perSecond-st.global)/4, 1)
			count, err := l.db.take(ctx, accountID, "send:"+bucket, start, n)
			if err != nil {
				return err
			}
			st.granted += min(max(perSecond-(count-n), 0), n)
			st.global = count
			st.exhausted = count >= perSecond
			continue
		}
		// This window's budget is gone, in this process or in all of them.
		t := time.NewTimer(start.Add(SendRateWindow).Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (l *SendRateLimiter) state(bucket string) *sendRateState {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.buckets[bucket]
	if !ok {
		st = &sendRateState{}
		l.buckets[bucket] = st
	}
	return st
}
