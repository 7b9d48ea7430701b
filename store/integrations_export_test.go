package store

// PurchaseReadSQL and RecordOrderSQL are the purchase's reads of the buyer
// (purchaseReadSQL, recordOrder), for tests that look at their plans.
const (
	PurchaseReadSQL = purchaseReadSQL
	RecordOrderSQL  = recordOrder
)
