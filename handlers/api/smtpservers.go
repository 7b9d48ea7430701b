package api

import (
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

// smtpServerResponse is an SMTP server as the API shows it: the password is
// write-only, has_password says whether one is stored.
type smtpServerResponse struct {
	ID             int64   `json:"id"`
	Name           string  `json:"name"`
	Host           string  `json:"host"`
	Port           int     `json:"port"`
	Username       string  `json:"username"`
	HasPassword    bool    `json:"has_password"`
	Encryption     string  `json:"encryption"`
	FromEmail      string  `json:"from_email"`
	FromName       string  `json:"from_name"`
	IsDefault      bool    `json:"is_default"`
	RatePerSecond  int     `json:"rate_per_second"`
	LastTestAt     *Time   `json:"last_test_at"`
	LastTestResult *string `json:"last_test_result"`
	CreatedAt      Time    `json:"created_at"`
	UpdatedAt      Time    `json:"updated_at"`
}

func newSMTPServerResponse(s store.SMTPServer) smtpServerResponse {
	var result *string
	if s.LastTestCode != "" {
		result = &s.LastTestCode
	}
	return smtpServerResponse{
		ID: s.ID, Name: s.Name, Host: s.Host, Port: s.Port, Username: s.Username, HasPassword: s.HasPassword,
		Encryption: s.Encryption, FromEmail: s.FromEmail, FromName: s.FromName, IsDefault: s.IsDefault,
		RatePerSecond: s.RatePerSecond, LastTestAt: timePtr(s.LastTestAt), LastTestResult: result,
		CreatedAt: Time(s.CreatedAt), UpdatedAt: Time(s.UpdatedAt),
	}
}

// smtpServerCreateRequest is the body of POST /smtp-servers.
type smtpServerCreateRequest struct {
	Name          string `json:"name"`
	Host          string `json:"host"`
	Port          int    `json:"port"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	Encryption    string `json:"encryption"`
	FromEmail     string `json:"from_email"`
	FromName      string `json:"from_name"`
	IsDefault     *bool  `json:"is_default"`
	RatePerSecond int    `json:"rate_per_second"`
}

func (q smtpServerCreateRequest) input() store.NewSMTPServer {
	return store.NewSMTPServer{
		SMTPServerSettings: store.SMTPServerSettings{
			Name: q.Name, Host: q.Host, Port: q.Port, Username: q.Username, Encryption: q.Encryption,
			FromEmail: q.FromEmail, FromName: q.FromName, RatePerSecond: q.RatePerSecond,
		},
		Password:  q.Password,
		IsDefault: q.IsDefault,
	}
}

// smtpServerPatchRequest is the body of PATCH /smtp-servers/{id}: absent or null
// fields stay as they are; "password": "" removes the password.
type smtpServerPatchRequest struct {
	Name          *string `json:"name"`
	Host          *string `json:"host"`
	Port          *int    `json:"port"`
	Username      *string `json:"username"`
	Password      *string `json:"password"`
	Encryption    *string `json:"encryption"`
	FromEmail     *string `json:"from_email"`
	FromName      *string `json:"from_name"`
	IsDefault     *bool   `json:"is_default"`
	RatePerSecond *int    `json:"rate_per_second"`
}

func (q smtpServerPatchRequest) patch() store.SMTPServerPatch {
	return store.SMTPServerPatch{
		Name: q.Name, Host: q.Host, Port: q.Port, Username: q.Username, Password: q.Password,
		Encryption: q.Encryption, FromEmail: q.FromEmail, FromName: q.FromName, IsDefault: q.IsDefault,
		RatePerSecond: q.RatePerSecond,
	}
}

// smtpTestResponse is the outcome of POST /smtp-servers/{id}/test. A failed test
// is still a 200: the request worked, the server did not.
type smtpTestResponse struct {
	OK         bool    `json:"ok"`
	Code       string  `json:"code"`
	Message    string  `json:"message"`
	Detail     string  `json:"detail"`
	DurationMS float64 `json:"duration_ms"`
	TestedAt   Time    `json:"tested_at"`
}

func (a *API) listSMTPServers(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	servers, total, err := a.db.SMTPServers(r.Context(), accountID(r), page)
	if err != nil {
		return err
	}
	out := make([]smtpServerResponse, len(servers))
	for i, s := range servers {
		out[i] = newSMTPServerResponse(s)
	}
	return writeList(w, r, out, page, total)
}

func (a *API) createSMTPServer(w http.ResponseWriter, r *http.Request) error {
	if a.smtpServers == nil {
		return errUnavailable
	}
	var req smtpServerCreateRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := a.smtpServers.Create(r.Context(), accountID(r), req.input())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusCreated, newSMTPServerResponse(s))
}

func (a *API) getSMTPServer(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	s, err := a.db.SMTPServer(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSMTPServerResponse(s))
}

func (a *API) updateSMTPServer(w http.ResponseWriter, r *http.Request) error {
	if a.smtpServers == nil {
		return errUnavailable
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req smtpServerPatchRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := a.smtpServers.Update(r.Context(), accountID(r), id, req.patch())
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, newSMTPServerResponse(s))
}

func (a *API) deleteSMTPServer(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if a.smtpServers == nil {
		return errUnavailable
	}
	if err := a.smtpServers.Delete(r.Context(), accountID(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testSMTPServer connects to the server (TLS and AUTH as configured) and reports,
// in German and with a code, what worked or which step failed.
func (a *API) testSMTPServer(w http.ResponseWriter, r *http.Request) error {
	if a.smtpServers == nil {
		return errUnavailable
	}
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	res, err := a.smtpServers.Test(r.Context(), accountID(r), id)
	if err != nil {
		return err
	}
	return writeData(w, r, http.StatusOK, smtpTestResponse{
		OK: res.OK, Code: res.Code, Message: res.Message, Detail: res.Detail,
		DurationMS: float64(res.Duration.Microseconds()) / 1000, TestedAt: Time(res.TestedAt),
	})
}
