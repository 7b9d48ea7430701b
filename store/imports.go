package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// CSV import of contacts: the portal uploads a file (CreateImport), the user maps
// its columns (StartImport), and the import worker (store/imports) in any serve
// process runs the job in batches with the rules of POST /contacts/bulk
// (RunNextImport).

// Import job statuses.
const (
	ImportUploaded = "uploaded"
	ImportQueued   = "queued"
	ImportRunning  = "running"
	ImportDone     = "done"
	ImportFailed   = "failed"
)

// Limits of an import.
const (
	MaxImportBytes   = 50 << 20 // the largest file accepted
	maxImportColumns = 200
	importPreview    = 3   // rows kept for the mapping step
	maxImportErrors  = 500 // row errors kept for the summary (all are counted)
	importBatch      = 500 // rows per transaction
)

// ImportTargets are the contact fields a column can be mapped to, in form order;
// "custom:<key>" maps to a custom field, "" ignores the column.
func ImportTargets() []string {
	return []string{"email", "first_name", "last_name", "address", "zip", "city", "phone", "note", "tags"}
}

// ImportRowError is one row that was not imported.
type ImportRowError struct {
	Row     int    `json:"row"` // line of the file (the header is line 1)
	Email   string `json:"email"`
	Message string `json:"message"`
}

// ImportJob is an import without its file.
type ImportJob struct {
	ID            int64          `db:"id"`
	AccountID     int64          `db:"account_id"`
	UserID        *int64         `db:"user_id"`
	Status        string         `db:"status"`
	Filename      string         `db:"filename"`
	SizeBytes     int64          `db:"size_bytes"`
	Delimiter     string         `db:"delimiter"`
	Header        jsonStrings    `db:"header"`
	Preview       jsonRows       `db:"preview"`
	Mapping       jsonStrings    `db:"mapping"`
	ListIDs       pq.Int64Array  `db:"list_ids"`
	Tags          pq.StringArray `db:"tags"`
	TotalRows     int            `db:"total_rows"`
	ProcessedRows int            `db:"processed_rows"`
	Created       int            `db:"created_count"`
	Updated       int            `db:"updated_count"`
	Failed        int            `db:"failed_count"`
	Errors        importErrors   `db:"errors"`
	Error         string         `db:"error"`
	CreatedAt     time.Time      `db:"created_at"`
	StartedAt     *time.Time     `db:"started_at"`
	FinishedAt    *time.Time     `db:"finished_at"`
}

// Finished reports whether the job has ended (done or failed).
func (j ImportJob) Finished() bool { return j.Status == ImportDone || j.Status == ImportFailed }

type jsonStrings []string

func (s *jsonStrings) Scan(src any) error { return scanJSON(src, (*[]string)(s)) }

type jsonRows [][]string

func (s *jsonRows) Scan(src any) error { return scanJSON(src, (*[][]string)(s)) }

type importErrors []ImportRowError

func (s *importErrors) Scan(src any) error { return scanJSON(src, (*[]ImportRowError)(s)) }

func scanJSON(src, dst any) error {
	b, ok := src.([]byte)
	if !ok {
		return fmt.Errorf("store: json column: unexpected %T", src)
	}
	return json.Unmarshal(b, dst)
}

// ParsedCSV is what CreateImport learned of a file.
type ParsedCSV struct {
	Delimiter rune
	Header    []string
	Preview   [][]string
	Rows      int
}

// decodeCSVText strips a UTF-8 byte order mark and rejects text that is not UTF-8.
func decodeCSVText(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return nil, Invalid("file", "Die Datei ist nicht UTF-8-kodiert. Bitte speichern Sie sie als „CSV UTF-8“ und laden Sie sie erneut hoch.")
	}
	return data, nil
}

// detectDelimiter picks the delimiter that splits the header line into the most
// fields, among comma, semicolon, tab and pipe (quoted parts do not count).
func detectDelimiter(data []byte) rune {
	line := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		line = data[:i]
	}
	best, bestN := ',', 0
	for _, d := range []rune{',', ';', '\t', '|'} {
		n, quoted := 0, false
		for _, c := range string(line) {
			switch {
			case c == '"':
				quoted = !quoted
			case c == d && !quoted:
				n++
			}
		}
		if n > bestN {
			best, bestN = d, n
		}
	}
	return best
}

func newCSVReader(data []byte, delim rune) *csv.Reader {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma = delim
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	return r
}

// ParseCSV checks an uploaded file and reads its delimiter, header, first rows
// and number of data rows. Problems are a *ValidationError on "file".
func ParseCSV(data []byte) (ParsedCSV, error) {
	data, err := decodeCSVText(data)
	if err != nil {
		return ParsedCSV{}, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return ParsedCSV{}, Invalid("file", "Die Datei ist leer.")
	}
	p := ParsedCSV{Delimiter: detectDelimiter(data)}
	r := newCSVReader(data, p.Delimiter)
	header, err := r.Read()
	if err != nil {
		return ParsedCSV{}, Invalid("file", "Die Kopfzeile der Datei ist keine gültige CSV-Zeile.")
	}
	if len(header) > maxImportColumns {
		return ParsedCSV{}, Invalid("file", fmt.Sprintf("Höchstens %d Spalten.", maxImportColumns))
	}
	for i, h := range header {
		header[i] = strings.TrimSpace(h)
	}
	p.Header = header
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if err != nil && !errors.As(err, &pe) {
			return ParsedCSV{}, Invalid("file", "Die Datei konnte nicht gelesen werden.")
		}
		if err == nil && blankRecord(rec) {
			continue
		}
		p.Rows++
		if len(p.Preview) < importPreview && err == nil {
			p.Preview = append(p.Preview, rec)
		}
	}
	if p.Rows == 0 {
		return ParsedCSV{}, Invalid("file", "Die Datei enthält außer der Kopfzeile keine Zeilen.")
	}
	return p, nil
}

func blankRecord(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

const importColumns = `id, account_id, user_id, status, filename, size_bytes, delimiter, header, preview, mapping, list_ids, tags,
  total_rows, processed_rows, created_count, updated_count, failed_count, errors, error, created_at, started_at, finished_at`

const insertImport = `INSERT INTO import_jobs (account_id, user_id, filename, size_bytes, data, delimiter, header, preview, total_rows)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ` + importColumns

// CreateImport stores an uploaded CSV file as a job waiting for its column
// mapping; userID (0: none) is who the contacts' changes are logged as. An
// unreadable file is a *ValidationError on "file".
func (db *DB) CreateImport(ctx context.Context, accountID, userID int64, filename string, data []byte) (ImportJob, error) {
	if len(data) > MaxImportBytes {
		return ImportJob{}, Invalid("file", fmt.Sprintf("Die Datei ist größer als %d MB.", MaxImportBytes>>20))
	}
	p, err := ParseCSV(data)
	if err != nil {
		return ImportJob{}, err
	}
	filename = strings.TrimSpace(filename)
	if filename == "" || !utf8.ValidString(filename) || len(filename) > 255 {
		filename = "import.csv"
	}
	header, _ := json.Marshal(p.Header)
	preview := []byte("[]")
	if len(p.Preview) > 0 {
		preview, _ = json.Marshal(p.Preview)
	}
	var user *int64
	if userID != 0 {
		user = &userID
	}
	var j ImportJob
	if err := db.GetContext(ctx, &j, insertImport, accountID, user, filename, len(data), data, string(p.Delimiter),
		header, preview, p.Rows); err != nil {
		return ImportJob{}, fmt.Errorf("store: create import: %w", err)
	}
	return j, nil
}

// ImportJob returns one of the account's import jobs (without the file).
func (db *DB) ImportJob(ctx context.Context, accountID, id int64) (ImportJob, error) {
	var j ImportJob
	err := db.GetContext(ctx, &j, `SELECT `+importColumns+` FROM import_jobs WHERE account_id = $1 AND id = $2`, accountID, id)
	if err != nil {
		return ImportJob{}, notFound("import job", err)
	}
	return j, nil
}

// ImportJobs lists the account's latest import jobs, newest first.
func (db *DB) ImportJobs(ctx context.Context, accountID int64, limit int) ([]ImportJob, error) {
	var out []ImportJob
	err := db.SelectContext(ctx, &out, `SELECT `+importColumns+` FROM import_jobs WHERE account_id = $1 ORDER BY id DESC LIMIT $2`,
		accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: import jobs: %w", err)
	}
	return out, nil
}

// ImportSettings is the column mapping step: per column "", a field of
// ImportTargets or "custom:<key>"; lists and tags every imported contact gets.
type ImportSettings struct {
	Mapping []string
	ListIDs []int64
	Tags    []string
}

// validate checks the mapping against the header; errors name "mapping.<i>" for
// a column, "mapping" for the whole, "list_ids" and "tags".
func (s *ImportSettings) validate(columns int) Errs {
	errs := Errs{}
	if len(s.Mapping) != columns {
		errs.Add("mapping", "Bitte jede Spalte zuordnen.")
		return errs
	}
	seen := map[string]int{}
	emails := 0
	for i, m := range s.Mapping {
		m = strings.TrimSpace(m)
		s.Mapping[i] = m
		field := fmt.Sprintf("mapping.%d", i)
		switch {
		case m == "":
			continue
		case m == "email":
			emails++
		case strings.HasPrefix(m, "custom:"):
			key := strings.ToLower(strings.TrimPrefix(m, "custom:"))
			s.Mapping[i] = "custom:" + key
			m = s.Mapping[i]
			if !validCustomKey(key) {
				errs.Add(field, fmt.Sprintf("Feldnamen bestehen aus 1 bis %d Zeichen a–z, 0–9, _ und -.", maxCustomKeyLen))
				continue
			}
			if builtinPlaceholder(key) {
				errs.Add(field, fmt.Sprintf("„%s“ ist ein eingebauter Platzhalter; bitte wählen Sie das passende Feld oder einen anderen Namen.", key))
				continue
			}
		case !slices.Contains(ImportTargets(), m):
			errs.Add(field, "Unbekanntes Feld.")
			continue
		}
		if prev, dup := seen[m]; dup {
			errs.Add(field, fmt.Sprintf("Schon Spalte %d ist diesem Feld zugeordnet.", prev+1))
			continue
		}
		seen[m] = i
	}
	if emails == 0 {
		errs.Add("mapping", "Bitte die Spalte mit der E-Mail-Adresse zuordnen.")
	}
	s.Tags = normTags(errs, "tags", s.Tags)
	s.ListIDs = normListIDs(errs, "list_ids", s.ListIDs)
	return errs
}

const startImport = `UPDATE import_jobs SET status = 'queued', mapping = $3, list_ids = $4, tags = $5
WHERE account_id = $1 AND id = $2 AND status = 'uploaded' RETURNING ` + importColumns

// StartImport sets a job's column mapping and queues it for the worker. A job
// that already started is a *ConflictError (reason import_started).
func (db *DB) StartImport(ctx context.Context, accountID, id int64, s ImportSettings) (ImportJob, error) {
	j, err := db.ImportJob(ctx, accountID, id)
	if err != nil {
		return ImportJob{}, err
	}
	if j.Status != ImportUploaded {
		return ImportJob{}, &ConflictError{Reason: "import_started", Message: "Dieser Import wurde schon gestartet."}
	}
	errs := s.validate(len(j.Header))
	if len(s.ListIDs) > 0 && errs["list_ids"] == "" {
		var n int
		if err := db.GetContext(ctx, &n, `SELECT count(*) FROM lists WHERE account_id = $1 AND id = ANY($2)`,
			accountID, pq.Int64Array(s.ListIDs)); err != nil {
			return ImportJob{}, fmt.Errorf("store: start import: %w", err)
		}
		if n != len(s.ListIDs) {
			errs.Add("list_ids", "Mindestens eine dieser Listen gibt es nicht.")
		}
	}
	if err := errs.Err(); err != nil {
		return ImportJob{}, err
	}
	mapping, _ := json.Marshal(s.Mapping)
	err = db.GetContext(ctx, &j, startImport, accountID, id, mapping, pq.Int64Array(nonNilIDs(s.ListIDs)), pq.StringArray(nonNil(s.Tags)))
	if errors.Is(err, sql.ErrNoRows) {
		return ImportJob{}, &ConflictError{Reason: "import_started", Message: "Dieser Import wurde schon gestartet."}
	}
	if err != nil {
		return ImportJob{}, fmt.Errorf("store: start import: %w", err)
	}
	return j, nil
}

// ImportRun tunes RunNextImport.
type ImportRun struct {
	Lease time.Duration // how long a claim lasts without a renewing batch
	Batch int           // rows per transaction, at most MaxBatch
	Log   *slog.Logger
}

// DefaultImportBatch is the rows per transaction of an import run.
const DefaultImportBatch = importBatch

// staleUpload is how long an uploaded file waits for its column mapping
// before the worker deletes the job with its file.
const staleUpload = 24 * time.Hour

const purgeStaleImports = `DELETE FROM import_jobs WHERE status = 'uploaded' AND created_at < now() - $1 * interval '1 millisecond'`

// StaleImportUpload is how long an uploaded file waits for its column mapping
// before the import worker deletes the job with its file.
const StaleImportUpload = staleUpload

// PurgeStaleImports deletes jobs whose column mapping was not given within
// maxAge: their files would otherwise stay in the database for good.
func (db *DB) PurgeStaleImports(ctx context.Context, maxAge time.Duration) (int64, error) {
	res, err := db.ExecContext(ctx, purgeStaleImports, maxAge.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("store: purge imports: %w", err)
	}
	return res.RowsAffected()
}

// claimedImport is a job a worker holds, with its file.
type claimedImport struct {
	ImportJob
	Data []byte `db:"data"`
}

const claimImport = `UPDATE import_jobs j SET status = 'running', lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond',
  started_at = coalesce(j.started_at, now())
FROM (SELECT id AS claim_id FROM import_jobs WHERE status = 'queued' OR (status = 'running' AND lease_until < now())
      ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) x
WHERE j.id = x.claim_id
RETURNING data, ` + importColumns

// RunNextImport claims one queued job (or one whose worker's lease ran out)
// and runs it to its end, one batch per transaction; ran is false when the
// queue was empty. A job whose lease is lost (another worker took it over) is
// left to that worker.
func (db *DB) RunNextImport(ctx context.Context, opts ImportRun) (ran bool, err error) {
	if opts.Batch <= 0 || opts.Batch > MaxBatch {
		opts.Batch = importBatch
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	owner := randomToken()
	var j claimedImport
	if err := db.GetContext(ctx, &j, claimImport, owner, opts.Lease.Milliseconds()); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return false, fmt.Errorf("store: claim import: %w", err)
	}
	if err := db.runImport(ctx, owner, &j, opts); err != nil {
		if ctx.Err() != nil || errors.Is(err, errLeaseLost) {
			return true, err // resumed later, by this process or another
		}
		opts.Log.Error("import failed", "job", j.ID, "account", j.AccountID, "err", err)
		_, ferr := db.ExecContext(ctx, `UPDATE import_jobs SET status = 'failed', data = NULL, finished_at = now(),
  error = $3, lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2`,
			j.ID, owner, "Der Import wurde wegen eines internen Fehlers abgebrochen. Bereits importierte Zeilen bleiben erhalten.")
		return true, errors.Join(err, ferr)
	}
	return true, nil
}

var errLeaseLost = errors.New("store: import lease lost")

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runImport imports the rows after j.ProcessedRows, one batch per transaction.
func (db *DB) runImport(ctx context.Context, owner string, j *claimedImport, opts ImportRun) error {
	data, err := decodeCSVText(j.Data)
	if err != nil {
		return err
	}
	r := newCSVReader(data, []rune(j.Delimiter)[0])
	if _, err := r.Read(); err != nil { // the header
		return fmt.Errorf("store: import header: %w", err)
	}
	actor := Actor{Type: ActorSystem}
	if j.UserID != nil {
		actor = Actor{Type: ActorUser, ID: *j.UserID}
	}
	done := 0
	for {
		batch, eof, err := readImportRows(r, opts.Batch)
		if err != nil {
			return err
		}
		// Skip what an earlier run already imported.
		if skip := min(j.ProcessedRows-done, len(batch)); skip > 0 {
			done += skip
			batch = batch[skip:]
		}
		if len(batch) > 0 {
			if err := db.importBatch(ctx, owner, j, actor, batch, opts.Lease); err != nil {
				return err
			}
			done += len(batch)
		}
		if eof {
			break
		}
	}
	res, err := db.ExecContext(ctx, `UPDATE import_jobs SET status = 'done', data = NULL, finished_at = now(),
  lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2`, j.ID, owner)
	if err != nil {
		return fmt.Errorf("store: finish import: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLeaseLost
	}
	return nil
}

// importRow is one data row of the file with its line.
type importRow struct {
	line int
	rec  []string
	err  error
}

// readImportRows reads up to n data rows (blank rows are skipped, as ParseCSV
// does not count them).
func readImportRows(r *csv.Reader, n int) ([]importRow, bool, error) {
	var out []importRow
	for len(out) < n {
		rec, err := r.Read()
		if err == io.EOF {
			return out, true, nil
		}
		var pe *csv.ParseError
		if err != nil && !errors.As(err, &pe) {
			return nil, false, fmt.Errorf("store: import read: %w", err)
		}
		if err == nil && blankRecord(rec) {
			continue
		}
		line, _ := r.FieldPos(0)
		if pe != nil {
			line = pe.StartLine
		}
		out = append(out, importRow{line: line, rec: rec, err: err})
	}
	return out, false, nil
}

// input turns a row into a contact by the mapping. Empty cells are not given,
// so an import never erases what a contact already has.
func importInput(mapping []string, rec []string) (ContactInput, string) {
	var in ContactInput
	for i, m := range mapping {
		if m == "" || i >= len(rec) {
			continue
		}
		v := strings.TrimSpace(rec[i])
		if v == "" {
			continue
		}
		val := v
		switch m {
		case "email":
			in.Email = v
		case "first_name":
			in.FirstName = &val
		case "last_name":
			in.LastName = &val
		case "address":
			in.Address = &val
		case "zip":
			in.Zip = &val
		case "city":
			in.City = &val
		case "phone":
			in.Phone = &val
		case "note":
			in.Note = &val
		case "tags":
			in.Tags = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == '|' })
		default:
			if key, ok := strings.CutPrefix(m, "custom:"); ok {
				if in.CustomFields == nil {
					in.CustomFields = map[string]any{}
				}
				in.CustomFields[key] = v
			}
		}
	}
	return in, in.Email
}

const lockImport = `SELECT processed_rows FROM import_jobs WHERE id = $1 AND lease_owner = $2 FOR UPDATE`

const advanceImport = `UPDATE import_jobs SET processed_rows = processed_rows + $3, created_count = created_count + $4,
  updated_count = updated_count + $5, failed_count = failed_count + $6,
  errors = CASE WHEN jsonb_array_length(errors) < $8 THEN errors || $7::jsonb ELSE errors END,
  lease_until = now() + $9 * interval '1 millisecond'
WHERE id = $1 AND lease_owner = $2`

// importBatch upserts one batch exactly as BulkUpsertContacts does (the same
// normalisation, shared lists and tags, one applyOps in batch mode) and advances
// the job in the same transaction: either both commit or neither.
func (db *DB) importBatch(ctx context.Context, owner string, j *claimedImport, actor Actor, rows []importRow, lease time.Duration) error {
	var batchCreated int64
	err := db.retryTx(ctx, func(tx *sqlx.Tx) error {
		var processed int
		if err := tx.GetContext(ctx, &processed, lockImport, j.ID, owner); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return errLeaseLost
			}
			return fmt.Errorf("store: import batch: %w", err)
		}
		ops := make([]*contactOp, len(rows))
		for i, row := range rows {
			in, _ := importInput(j.Mapping, row.rec)
			in.Tags = append(in.Tags, j.Tags...)
			in.ListIDs = slices.Clone([]int64(j.ListIDs))
			op := &contactOp{in: in, newSource: SourceImport}
			if row.err != nil {
				op.inputErr = Invalid("file", "Die Zeile ist keine gültige CSV-Zeile.")
			} else {
				op.inputErr = op.in.Normalize()
			}
			ops[i] = op
		}
		if err := applyOps(ctx, tx, j.AccountID, actor, ops, true); err != nil {
			return err
		}
		var created, updated, failed int
		var rowErrs []ImportRowError
		for i, op := range ops {
			switch {
			case op.failed():
				failed++
				email := strings.TrimSpace(op.in.Email)
				if email == "" {
					_, email = importInput(j.Mapping, rows[i].rec)
				}
				rowErrs = append(rowErrs, ImportRowError{Row: rows[i].line, Email: email, Message: importErrorMessage(cmpErr(op.inputErr, op.err))})
			case op.created && op.primary == nil:
				created++
			default:
				updated++
			}
		}
		errJSON := []byte("[]")
		if len(rowErrs) > 0 {
			var err error
			if errJSON, err = json.Marshal(rowErrs); err != nil {
				return fmt.Errorf("store: import batch: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, advanceImport, j.ID, owner, len(rows), created, updated, failed, errJSON,
			maxImportErrors, lease.Milliseconds()); err != nil {
			return fmt.Errorf("store: import batch: %w", err)
		}
		batchCreated = int64(created)
		return nil
	})
	if err == nil {
		db.contactsGrew(batchCreated, true)
	}
	return err
}

// importErrorMessage is the German message of a row's error.
func importErrorMessage(err error) string {
	var ve *ValidationError
	var le *LimitError
	var ce *ConflictError
	switch {
	case errors.As(err, &ve):
		keys := make([]string, 0, len(ve.Fields))
		for k := range ve.Fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		msgs := make([]string, len(keys))
		for i, k := range keys {
			msgs[i] = importFieldName(k) + ": " + ve.Fields[k]
		}
		return strings.Join(msgs, " ")
	case errors.As(err, &le):
		return fmt.Sprintf("Das Kontaktlimit Ihres Tarifs (%d) ist erreicht.", le.Max)
	case errors.As(err, &ce):
		return ce.Message
	case errors.Is(err, ErrNotFound):
		return "Nicht gefunden."
	}
	return "Die Zeile konnte nicht importiert werden."
}

func importFieldName(k string) string {
	names := map[string]string{"email": "E-Mail-Adresse", "first_name": "Vorname", "last_name": "Nachname", "address": "Adresse",
		"zip": "PLZ", "city": "Ort", "phone": "Telefon", "note": "Notiz", "tags": "Schlagwörter", "file": "Zeile",
		"custom_fields": "Eigene Felder"}
	if n, ok := names[k]; ok {
		return n
	}
	if key, ok := strings.CutPrefix(k, "custom_fields."); ok {
		return key
	}
	return k
}
