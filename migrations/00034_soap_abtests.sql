-- +goose Up

-- A/B tests of sequence days (target_type 'soap', issue 20). A day is sent
-- again and again, to each participant who reaches it, so a soap test starts
-- with the first participant who reaches the day after the test was created
-- and assigns variants in the sequence worker's claim, batch by batch:
-- assigned_a and assigned_b count what it assigned so far, so that the next
-- participant gets the variant that keeps the shares closest to split_a (the
-- test row is locked by the claim, so the counts never race).
ALTER TABLE ab_tests ADD COLUMN assigned_a bigint NOT NULL DEFAULT 0;
ALTER TABLE ab_tests ADD COLUMN assigned_b bigint NOT NULL DEFAULT 0;

-- One test per newsletter, email and story email, as before; a sequence day
-- may be tested again once its test has ended, so for soap only one draft or
-- running test per day.
DROP INDEX ab_tests_target_key;
CREATE UNIQUE INDEX ab_tests_target_key ON ab_tests (account_id, target_type, target_id)
    WHERE target_type <> 'soap' OR status IN ('draft', 'running');
-- The claim's look-up: the draft or running test of the days it queues.
CREATE INDEX ab_tests_soap_idx ON ab_tests (target_id) WHERE target_type = 'soap' AND status IN ('draft', 'running');

-- +goose Down
DROP INDEX ab_tests_soap_idx;
DROP INDEX ab_tests_target_key;
DELETE FROM ab_tests a USING ab_tests b
WHERE a.target_type = 'soap' AND b.target_type = 'soap' AND a.account_id = b.account_id AND a.target_id = b.target_id
  AND a.id < b.id;
CREATE UNIQUE INDEX ab_tests_target_key ON ab_tests (account_id, target_type, target_id);
ALTER TABLE ab_tests DROP COLUMN assigned_b;
ALTER TABLE ab_tests DROP COLUMN assigned_a;
