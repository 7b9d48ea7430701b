package store

// PurchaseReadSQL is the optimistic purchase's read (purchaseReadSQL), for
// tests that look at its plan.
const PurchaseReadSQL = purchaseReadSQL
