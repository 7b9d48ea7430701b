package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/rundbrief/rundbrief/store"
)

// respondInTx makes the response of an operation whose effect must happen
// once (a send, an AI debit) part of the effect's transaction when the request
// carries an Idempotency-Key: the service calls store.RecordIdempotent with its
// result of type T there, and build turns that result into the response data
// exactly as the handler then writes it (writeData with status). A failure
// after the commit then leaves a stored response for the retry to replay,
// never a free key that would repeat the effect. Call it before the service.
func respondInTx[T any](a *API, w http.ResponseWriter, r *http.Request, status int, build func(T) any) {
	acct, reqID := accountID(r), requestID(r.Context())
	store.RespondInTx(r.Context(), func(res T) (store.StoredResponse, error) {
		b, err := json.Marshal(envelope{Data: build(res), Meta: meta{RequestID: reqID}})
		if err != nil {
			return store.StoredResponse{}, fmt.Errorf("api: idempotent response: %w", err)
		}
		body, err := a.sealStoredBody(acct, b)
		if err != nil {
			return store.StoredResponse{}, err
		}
		h := replayHeaders(w.Header())
		h.Set("Content-Type", "application/json; charset=utf-8") // as writeBody sets it
		return store.StoredResponse{Status: status, Header: h, Body: body}, nil
	})
}
