package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// walkFindings is what the token walk (checkJSON's slow path) says of body.
func walkFindings(body []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	fields := map[string]string{}
	err := walkJSON(dec, "", 0, fields)
	return fields, err
}

// TestPlainJSONAgreesWithTheWalk: whenever the one-pass check lets a body
// skip the walk, the walk would have found nothing to name or refuse; every
// body the walk names a field of or refuses as too deep goes to the walk.
func TestPlainJSONAgreesWithTheWalk(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"email":"a@example.com","first_name":"Ä","tags":["x"],"n":12.5,"ok":true,"no":false,"z":null}`,
		`{"contacts":[{"email":"a@b.de","custom_fields":{"k":"v","n":-3}}],"list_ids":[1,2]}`,
		`{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":"x\\u0000"}`, `{"a":"\"\u0000"}`,
		`{"n":1e400}`, `{"n":1E400}`, `{"n":1.5e3}`, `{"n":` + strings.Repeat("9", 400) + `}`,
		`{"n":0.` + strings.Repeat("0", 400) + `1}`,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		`{"a":"` + strings.Repeat("[", 100) + `"}`, `{"a":"\"[[[["}`,
		`{"a":"true e"}`, `[true,false,null]`, `{"a":[1,2,3e1]}`,
		`{"a":1`, `{"a":"\`, `]]]`, `{"a":"` + "\x00" + `"}`,
	}
	for _, b := range bodies {
		fields, err := walkFindings([]byte(b))
		named := len(fields) > 0 || err == errJSONTooDeep
		if plainJSON([]byte(b)) && named {
			t.Errorf("%.80q: skips the walk, which finds %v %v", b, fields, err)
		}
	}
	// The usual bodies take the fast path.
	for _, b := range bodies[:2] {
		if !plainJSON([]byte(b)) {
			t.Errorf("%.80q: not plain", b)
		}
	}
}
