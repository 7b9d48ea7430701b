package sequence

import "github.com/rundbrief/rundbrief/store"

// NewTriggerConsumer is the outbox consumer that enrols contacts in
// sequences with a list or tag trigger while they are active, and exits
// contacts that unsubscribe or are deleted (store.HandleSequenceEvents, in
// the transaction that moves its cursor: each event is handled once, by one
// process). serve runs it among the workers.
func NewTriggerConsumer(db *store.DB, opts store.ConsumerOptions) *store.Consumer {
	opts.Names = store.SequenceEventNames()
	opts.AccountNames = store.SequenceAccountNames
	return db.NewConsumer(store.OutboxConsumerSequences, store.HandleSequenceEvents, opts)
}
