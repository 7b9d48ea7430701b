package store

import "context"

// StepMore is one of a drain's steps (step) below the current horizon, with
// whether the drain would take another. The horizon is read afresh: a test
// emits events and steps at once, and while another package's tests hold the
// cluster's horizon back, this database's own horizon read by the step before
// (reused for ownHorizonEvery) would still lie below the new events.
func (c *Consumer) StepMore(ctx context.Context) (n int, claimed, more bool, err error) {
	h, err := c.horizon(ctx, true)
	if err != nil {
		return 0, false, false, err
	}
	return c.step(ctx, h.Horizon)
}
