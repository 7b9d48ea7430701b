package mailer

import (
	"context"
	"strconv"

	"github.com/rundbrief/rundbrief/store"
)

// SharedRate wraps an Opener (Transports) so that the messages-per-second
// setting of a route holds for all serve processes together, not for each
// one alone: every Send of a rate-limited route first takes its turn from a
// budget shared through PostgreSQL (store.SendRateLimiter). An account's SMTP
// server is limited by its rate_per_second, the operator relay by the
// rate_per_second of RUNDBRIEF_SMTP_URL; the development outbox is not
// limited. The Sender's own per-process spacing still applies on top, which
// only smooths the sends within a second.
func SharedRate(o Opener, limiter *store.SendRateLimiter) Opener {
	return &sharedRate{Opener: o, limiter: limiter}
}

type sharedRate struct {
	Opener
	limiter *store.SendRateLimiter
}

// Open opens the route and, when it has a rate, wraps its Sender.
func (s *sharedRate) Open(ctx context.Context, accountID, serverID int64) (Sender, Route, error) {
	sender, route, err := s.Opener.Open(ctx, accountID, serverID)
	if err != nil || route.RatePerSecond <= 0 {
		return sender, route, err
	}
	var bucket string
	switch route.Kind {
	case RouteServer:
		bucket = "smtp:" + strconv.FormatInt(route.ServerID, 10)
	case RouteRelay:
		bucket = "relay"
	default:
		return sender, route, nil
	}
	return &rateSender{Sender: sender, limiter: s.limiter, accountID: accountID, bucket: bucket, rate: route.RatePerSecond}, route, nil
}

// rateSender waits for the shared budget before each message. A wait that
// ends with the context returns the context's error, as a Sender does when
// it is stopped.
type rateSender struct {
	Sender
	limiter   *store.SendRateLimiter
	accountID int64
	bucket    string
	rate      int
}

func (r *rateSender) Send(ctx context.Context, m *Message) error {
	if err := r.limiter.Wait(ctx, r.accountID, r.bucket, r.rate); err != nil {
		return err
	}
	return r.Sender.Send(ctx, m)
}
