package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/lib/pq"
)

// Plan is an entry of the operator's plan catalogue: features and limits.
type Plan struct {
	Name            string         `db:"name"`
	Features        pq.StringArray `db:"features"`
	MaxContacts     int64          `db:"max_contacts"`
	MaxLists        int64          `db:"max_lists"`
	MaxSendsPerDay  int64          `db:"max_sends_per_day"`
	MaxStorageBytes int64          `db:"max_storage_bytes"`
	MaxWebhooks     int64          `db:"max_webhooks"`
	MaxAPIKeys      int64          `db:"max_api_keys"`
	UpgradeURL      string         `db:"upgrade_url"`
}

// Has reports whether the plan includes feature.
func (p Plan) Has(feature string) bool { return slices.Contains(p.Features, feature) }

// Require returns a *PlanError unless the plan includes feature.
func (p Plan) Require(feature string) error {
	if p.Has(feature) {
		return nil
	}
	return &PlanError{Feature: feature, UpgradeURL: p.UpgradeURL}
}

const planColumns = `name, features, max_contacts, max_lists, max_sends_per_day, max_storage_bytes, max_webhooks, max_api_keys, upgrade_url`

const selectPlan = `SELECT ` + planColumns + ` FROM plans WHERE name = $1`

// Plan returns the plan called name.
func (db *DB) Plan(ctx context.Context, name string) (Plan, error) {
	var p Plan
	if err := db.GetContext(ctx, &p, selectPlan, name); err != nil {
		return Plan{}, notFound("plan", err)
	}
	return p, nil
}

// selectPlanOfAccount is the plan of one account: every limit check reads it
// inside the transaction that it guards.
const selectPlanOfAccount = `SELECT ` + planColumns + ` FROM plans WHERE name = (SELECT plan FROM accounts WHERE id = $1)`

// accountPlan returns the plan of the account.
func accountPlan(ctx context.Context, tx querier, accountID int64) (Plan, error) {
	var p Plan
	if err := tx.GetContext(ctx, &p, selectPlanOfAccount, accountID); err != nil {
		return Plan{}, fmt.Errorf("store: plan of account: %w", err)
	}
	return p, nil
}
