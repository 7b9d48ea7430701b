package store

import "context"

// StepMore is one of a drain's steps (step) below the current horizon, with
// whether the drain would take another.
func (c *Consumer) StepMore(ctx context.Context) (n int, claimed, more bool, err error) {
	h, err := c.horizon(ctx, false)
	if err != nil {
		return 0, false, false, err
	}
	return c.step(ctx, h.Horizon)
}
