package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/store"
	"github.com/rundbrief/rundbrief/store/webhook"
)

// The verification examples of docs/webhooks.md are tested here: the Go one
// is example_test.go, quoted verbatim; the Node and Python ones are cut out
// of the guide and run against real deliveries of the worker; and the HMAC
// steps of Node, Python and PHP are mirrored in Go so that a machine without
// those runtimes still checks them.

const webhookGuide = "../../docs/webhooks.md"

// guideCase is one delivery as a receiver sees it, with the secret it holds
// and whether the guide's functions must accept it.
type guideCase struct {
	Name    string            `json:"name"`
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"` // lower-case names, as Node and WSGI hand them over
	Body    string            `json:"body"`    // base64 of the raw body
	Want    bool              `json:"want"`
}

// guideCases delivers two real events through the worker, one before and one
// during a secret rotation, and derives the cases every example must judge
// alike: genuine deliveries with either secret, and forgeries.
func guideCases(t *testing.T) []guideCase {
	t.Helper()
	ctx := context.Background()
	e := newEnv(t, webhook.Config{AllowPrivate: true})
	// The examples compare with the wall clock, so sign with it.
	e.clock.Set(time.Now().Truncate(time.Second))
	rc := newReceiver(t, nil)
	hook, oldSecret := e.hook(t, rc.URL, "*")
	w := e.svc.Worker(webhook.WorkerOptions{})
	e.emit(t, store.Event{Name: store.EventContactCreated, Data: map[string]any{"contact": map[string]any{"id": 7, "email": "anna@example.com", "first_name": "Änne"}}})
	e.process(t, w)
	_, newSecret, err := e.svc.RotateSecret(ctx, e.acct, actor, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.emit(t, store.Event{Name: store.EventContactUnsubscribed, Data: map[string]any{"email": "anna@example.com"}})
	e.process(t, w)
	reqs := rc.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d deliveries, want 2", len(reqs))
	}

	headers := func(r request) map[string]string {
		h := map[string]string{}
		for _, name := range []string{"X-Service-Signature", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
			h[strings.ToLower(name)] = r.Header.Get(name)
		}
		return h
	}
	mk := func(name, secret string, h map[string]string, body []byte, want bool) guideCase {
		return guideCase{Name: name, Secret: secret, Headers: h, Body: base64.StdEncoding.EncodeToString(body), Want: want}
	}
	first, rotated := reqs[0], reqs[1]
	if n := strings.Count(rotated.Header.Get("X-Service-Signature"), "v1="); n != 2 {
		t.Fatalf("delivery during the rotation has %d v1= entries, want 2", n)
	}

	// Signed ten minutes ago by the real signer: outside the five minutes.
	stale := time.Now().Add(-10 * time.Minute)
	staleStd, err := webhook.StandardSignature("evt_stale", stale, first.Body, []string{oldSecret})
	if err != nil {
		t.Fatal(err)
	}
	staleHeaders := map[string]string{
		"x-service-signature": webhook.SignatureHeader(stale, first.Body, []string{oldSecret}),
		"webhook-id":          "evt_stale",
		"webhook-timestamp":   strconv.FormatInt(stale.Unix(), 10),
		"webhook-signature":   staleStd,
	}
	otherSecret := "whsec_" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))

	return []guideCase{
		mk("genuine", oldSecret, headers(first), first.Body, true),
		mk("rotation, new secret", newSecret, headers(rotated), rotated.Body, true),
		mk("rotation, previous secret", oldSecret, headers(rotated), rotated.Body, true),
		mk("changed body", oldSecret, headers(first), append(bytes.Clone(first.Body), ' '), false),
		mk("other secret", otherSecret, headers(first), first.Body, false),
		mk("new secret on an older delivery", newSecret, headers(first), first.Body, false),
		mk("stale timestamp", oldSecret, staleHeaders, first.Body, false),
		mk("no headers", oldSecret, map[string]string{}, first.Body, false),
	}
}

// guideBlock returns the code block that follows the marker comment in the
// webhook guide.
func guideBlock(t *testing.T, marker string) string {
	t.Helper()
	doc, err := os.ReadFile(webhookGuide)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(marker) + " -->\n```[a-z]*\n(.*?)\n```")
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no code block after <!-- %s -->", webhookGuide, marker)
	}
	return string(m[1])
}

// Drivers appended to the guide's Node and Python code: they read the cases
// as JSON on stdin and print, per case, what each of the two functions says.
const (
	nodeDriver = `
let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map((c) => {
    const body = Buffer.from(c.body, "base64");
    return [verifyServiceSignature(c.secret, c.headers["x-service-signature"], body), verifyStandardWebhook(c.secret, c.headers, body)];
  });
  console.log(JSON.stringify(out));
});
`
	pythonDriver = `

if __name__ == "__main__":
    import json, sys
    out = []
    for c in json.load(sys.stdin):
        body = base64.b64decode(c["body"])
        h = c["headers"]
        out.append([verify_service_signature(c["secret"], h.get("x-service-signature", ""), body),
                    verify_standard_webhook(c["secret"], h, body)])
    print(json.dumps(out))
`
)

// TestWebhookGuideExamplesVerifyRealDeliveries runs the guide's Node and
// Python code against deliveries the worker really sent.
func TestWebhookGuideExamplesVerifyRealDeliveries(t *testing.T) {
	cases := guideCases(t)
	input, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []struct {
		marker, bin, file, driver string
	}{
		{"tested: node", "node", "verify.js", nodeDriver},
		{"tested: python", "python3", "verify.py", pythonDriver},
	} {
		code := guideBlock(t, rt.marker)
		bin, err := exec.LookPath(rt.bin)
		if err != nil {
			// The Go mirror (TestWebhookGuideHMACMirrors) still checks the logic.
			t.Logf("%s not on PATH: the %s example is checked by its Go mirror only", rt.bin, rt.marker)
			continue
		}
		t.Run(rt.bin, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), rt.file)
			if err := os.WriteFile(path, []byte(code+"\n"+rt.driver), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, path)
			cmd.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", rt.bin, err, stderr.String())
			}
			var got [][2]bool
			if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
				t.Fatalf("output %q: %v", out, err)
			}
			for i, c := range cases {
				if got[i][0] != c.Want || got[i][1] != c.Want {
					t.Errorf("%s: X-Service-Signature %v, Standard Webhooks %v, want %v", c.Name, got[i][0], got[i][1], c.Want)
				}
			}
		})
	}
}

// mirror is the Go transcription of one guide example's HMAC steps, with
// the expressions of the example it transcribes: if the example changes
// them, the mirror must be brought along.
type mirror struct {
	marker   string
	steps    []string
	service  func(secret, header string, body []byte, now time.Time) bool
	standard func(secret string, h map[string]string, body []byte, now time.Time) bool
}

// fresh is the examples' five-minute timestamp rule: digits only, within 300
// seconds either way.
func fresh(ts string, now time.Time) bool {
	if ts == "" || strings.Trim(ts, "0123456789") != "" {
		return false
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := now.Unix() - unix
	return d < 300 && d > -300
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// splitServiceHeader splits "t=…,v1=…,v1=…" at commas and each part at its
// first '=', trimming spaces, as all three examples do.
func splitServiceHeader(header string) (t string, sigs []string) {
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			t = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	return t, sigs
}

// hexEntries compares the expected hex digest with each entry as strings
// (Python's compare_digest, PHP's hash_equals).
func hexEntries(secret, header string, body []byte, now time.Time) bool {
	t, sigs := splitServiceHeader(header)
	if !fresh(t, now) {
		return false
	}
	want := hex.EncodeToString(hmacSHA256([]byte(secret), append([]byte(t+"."), body...)))
	for _, s := range sigs {
		if hmac.Equal([]byte(want), []byte(s)) {
			return true
		}
	}
	return false
}

// standardEntries is the Standard Webhooks check of the examples: strip
// "whsec_", base64-decode the key, split the header at single spaces and each
// entry at its first comma, compare base64 strings.
func standardEntries(secret string, h map[string]string, body []byte, now time.Time) bool {
	id, ts := h["webhook-id"], h["webhook-timestamp"]
	if id == "" || !fresh(ts, now) {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	want := base64.StdEncoding.EncodeToString(hmacSHA256(key, append([]byte(id+"."+ts+"."), body...)))
	for _, entry := range strings.Split(h["webhook-signature"], " ") {
		version, sig, _ := strings.Cut(entry, ",")
		if version == "v1" && hmac.Equal([]byte(want), []byte(sig)) {
			return true
		}
	}
	return false
}

var mirrors = []mirror{
	{
		marker: "tested: node",
		steps: []string{
			`TOLERANCE_SECONDS = 300`, `/^\d+$/.test(ts || "")`,
			`String(header || "").split(",")`, `part.indexOf("=")`, `.trim()`,
			`crypto.createHmac("sha256", secret).update(` + "`${t}.`" + `).update(rawBody)`,
			`Buffer.from(s, "hex")`, `crypto.timingSafeEqual(got, expected)`,
			`Buffer.from(secret.replace(/^whsec_/, ""), "base64")`,
			`crypto.createHmac("sha256", key).update(` + "`${id}.${ts}.`" + `).update(rawBody)`,
			`.split(" ")`, `entry.split(",")`, `Buffer.from(sig || "", "base64")`, `version === "v1"`,
		},
		// Node compares decoded bytes; a malformed hex entry decodes short and
		// fails the length check, as hex.DecodeString's error does here.
		service: func(secret, header string, body []byte, now time.Time) bool {
			t, sigs := splitServiceHeader(header)
			if !fresh(t, now) {
				return false
			}
			want := hmacSHA256([]byte(secret), append([]byte(t+"."), body...))
			for _, s := range sigs {
				if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
					return true
				}
			}
			return false
		},
		standard: standardEntries,
	},
	{
		marker: "tested: python",
		steps: []string{
			`TOLERANCE_SECONDS = 300`, `ts.isdigit()`,
			`(header or "").split(",")`, `part.strip().partition("=")`,
			`hmac.new(secret.encode(), t.encode() + b"." + raw_body, hashlib.sha256).hexdigest()`,
			`hmac.compare_digest(expected.encode(), s.encode())`,
			`base64.b64decode(secret.removeprefix("whsec_"))`,
			`hmac.new(key, f"{msg_id}.{ts}.".encode() + raw_body, hashlib.sha256).digest()`,
			`base64.b64encode(mac)`, `.split(" ")`, `entry.partition(",")`, `version == "v1"`,
		},
		service:  hexEntries,
		standard: standardEntries,
	},
	{
		marker: "mirrored: php",
		steps: []string{
			`TOLERANCE_SECONDS = 300`, `ctype_digit($ts)`,
			`explode(',', $header)`, `explode('=', trim($part), 2)`,
			`hash_hmac('sha256', $t . '.' . $rawBody, $secret)`, `hash_equals($expected, $sig)`,
			`base64_decode(substr($secret, strlen('whsec_')), true)`,
			`base64_encode(hash_hmac('sha256', $id . '.' . $ts . '.' . $rawBody, $key, true))`,
			`explode(' ', $signatures)`, `explode(',', $entry, 2)`, `$version === 'v1'`,
		},
		service:  hexEntries,
		standard: standardEntries,
	},
}

// TestWebhookGuideHMACMirrors checks the Node, Python and PHP examples'
// steps, transcribed into Go, against real deliveries, and that each example
// still contains the steps transcribed.
func TestWebhookGuideHMACMirrors(t *testing.T) {
	cases := guideCases(t)
	now := time.Now()
	for _, m := range mirrors {
		t.Run(m.marker, func(t *testing.T) {
			code := guideBlock(t, m.marker)
			for _, step := range m.steps {
				if !strings.Contains(code, step) {
					t.Errorf("the example no longer contains %q; update its Go mirror", step)
				}
			}
			for _, c := range cases {
				body, err := base64.StdEncoding.DecodeString(c.Body)
				if err != nil {
					t.Fatal(err)
				}
				if got := m.service(c.Secret, c.Headers["x-service-signature"], body, now); got != c.Want {
					t.Errorf("%s: X-Service-Signature %v, want %v", c.Name, got, c.Want)
				}
				if got := m.standard(c.Secret, c.Headers, body, now); got != c.Want {
					t.Errorf("%s: Standard Webhooks %v, want %v", c.Name, got, c.Want)
				}
			}
		})
	}
}

// TestWebhookGuideQuotesTheGoExample keeps the Go code of the guide identical
// to the compiled example, and checks that example against real deliveries.
func TestWebhookGuideQuotesTheGoExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "// BEGIN docs/webhooks.md Go\n")
	code, _, ok2 := strings.Cut(rest, "// END docs/webhooks.md Go\n")
	if !ok || !ok2 {
		t.Fatal("example_test.go lost its BEGIN/END lines")
	}
	doc, err := os.ReadFile(webhookGuide)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+strings.TrimRight(code, "\n")+"\n```") {
		t.Error("docs/webhooks.md does not quote the Go example of example_test.go verbatim; copy it over")
	}
	now := time.Now()
	for _, c := range guideCases(t) {
		body, _ := base64.StdEncoding.DecodeString(c.Body)
		h := c.Headers
		if got := verifyServiceSignature(c.Secret, h["x-service-signature"], body, now); got != c.Want {
			t.Errorf("%s: X-Service-Signature %v, want %v", c.Name, got, c.Want)
		}
		if got := verifyStandardWebhook(c.Secret, h["webhook-id"], h["webhook-timestamp"], h["webhook-signature"], body, now); got != c.Want {
			t.Errorf("%s: Standard Webhooks %v, want %v", c.Name, got, c.Want)
		}
	}
}
