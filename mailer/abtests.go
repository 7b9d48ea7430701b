package mailer

import (
	"context"
	"errors"

	"github.com/rundbrief/rundbrief/store"
)

// This file is the mailer's part of A/B tests (issue 6). The store assigns
// each recipient its variant when the send starts (store.ABAssignment: a
// rank by a hash of the test id and the address); here the send worker
// compiles variant B once per campaign next to variant A and renders each
// recipient from its variant's templates. Deciding winners is store/abtest's.

// compileVariants compiles variant B of a campaign that has an A/B test,
// once, with variant B's tracked links (stored after A's, from
// store.ABLinkOffset on).
func (w *Worker) compileVariants(ctx context.Context, cc *compiledCampaign, links []store.CampaignLink) error {
	t, err := w.db.ABTestOfCampaign(ctx, cc.c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var bLinks []store.CampaignLink
	for _, l := range links {
		if l.Position >= store.ABLinkOffset {
			l.Position -= store.ABLinkOffset
			bLinks = append(bLinks, l)
		}
	}
	if t.BHTML == nil {
		bLinks = links // the same content, the same links
	}
	b, err := compileCampaign(t.ApplyB(cc.c), composeOptions{Tracking: true, Links: bLinks, Assets: cc.assets})
	if err != nil {
		return err
	}
	cc.variantB = b
	return nil
}

// variant returns the compiled campaign of a recipient's variant: B's when
// the recipient got B, A's (the campaign itself) otherwise.
func (cc *compiledCampaign) variant(v string) *compiledCampaign {
	if v == "B" && cc.variantB != nil {
		return cc.variantB
	}
	return cc
}
