-- +goose Up

-- A list's members in the listing's default order (newest contact first) come
-- from an index of the list, not from a walk of the account's contacts: a list
-- of 200,000 older contacts under 800,000 newer ones took 3 s for its first
-- page, walking the newer ones to find 100 members. A contact's created_at
-- never changes in the service, so the copy kept here stays right; the
-- triggers fill it on every insert and follow a change made by hand.
ALTER TABLE list_members ADD COLUMN contact_created_at timestamptz;
UPDATE list_members m SET contact_created_at = c.created_at FROM contacts c WHERE c.id = m.contact_id;
ALTER TABLE list_members ALTER COLUMN contact_created_at SET NOT NULL;
CREATE INDEX list_members_created_idx ON list_members (list_id, contact_created_at, contact_id) INCLUDE (account_id);

-- +goose StatementBegin
CREATE FUNCTION list_member_created_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT c.created_at INTO NEW.contact_created_at FROM contacts c WHERE c.id = NEW.contact_id;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER list_members_created_at BEFORE INSERT ON list_members
    FOR EACH ROW EXECUTE FUNCTION list_member_created_at();

-- +goose StatementBegin
CREATE FUNCTION contact_created_at_moved() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE list_members SET contact_created_at = NEW.created_at WHERE contact_id = NEW.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER contacts_created_at_moved AFTER UPDATE OF created_at ON contacts
    FOR EACH ROW WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at) EXECUTE FUNCTION contact_created_at_moved();

-- +goose Down
DROP TRIGGER contacts_created_at_moved ON contacts;
DROP FUNCTION contact_created_at_moved();
DROP TRIGGER list_members_created_at ON list_members;
DROP FUNCTION list_member_created_at();
DROP INDEX list_members_created_idx;
ALTER TABLE list_members DROP COLUMN contact_created_at;
