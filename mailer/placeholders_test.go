package mailer

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// testValues is a recipient with every built-in set to a distinct value.
func testValues() *Values {
	return &Values{
		Recipient: Recipient{
			FirstName:      "Max",
			LastName:       "Mustermann",
			Email:          "max@example.test",
			Address:        "Hauptstraße 1",
			Zip:            "10115",
			City:           "Berlin",
			Phone:          "+49 30 123456",
			Note:           "VIP",
			UnsubscribeURL: "https://rundbrief.test/u/abc123",
		},
		Now: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC),
	}
}

// render compiles src and renders it once, failing the test on error.
func render(t *testing.T, src string, kind Kind, opts CompileOptions, v *Values) string {
	t.Helper()
	out, err := RenderString(src, kind, opts, v)
	if err != nil {
		t.Fatalf("RenderString(%q): %v", src, err)
	}
	return out
}

func TestBuiltinsAndAliases(t *testing.T) {
	tests := []struct{ german, english, want string }{
		{"vorname", "first_name", "Max"},
		{"nachname", "last_name", "Mustermann"},
		{"name", "full_name", "Max Mustermann"},
		{"email", "email", "max@example.test"},
		{"adresse", "address", "Hauptstraße 1"},
		{"plz", "zip", "10115"},
		{"ort", "city", "Berlin"},
		{"telefon", "phone", "+49 30 123456"},
		{"notiz", "note", "VIP"},
		{"datum", "date", "22.11.2026"},
		{"abmelde_link", "unsubscribe_url", "https://rundbrief.test/u/abc123"},
	}
	for _, tt := range tests {
		t.Run(tt.german, func(t *testing.T) {
			for _, name := range []string{tt.german, tt.english} {
				got := render(t, "{{"+name+"}}", KindText, CompileOptions{}, testValues())
				if got != tt.want {
					t.Errorf("{{%s}} = %q, want %q", name, got, tt.want)
				}
			}
		})
	}
}

func TestNameIgnoresCaseAndSpaces(t *testing.T) {
	for _, src := range []string{
		"{{vorname}}", "{{ Vorname }}", "{{VORNAME}}", "{{  vOrNaMe\t}}", "{{\n first_name \n}}",
		"{{ First_Name | Freund }}",
	} {
		if got := render(t, src, KindText, CompileOptions{}, testValues()); got != "Max" {
			t.Errorf("%q = %q, want %q", src, got, "Max")
		}
	}
}

func TestFallback(t *testing.T) {
	empty := &Values{}
	tests := []struct {
		name string
		src  string
		kind Kind
		v    *Values
		want string
	}{
		{"empty value uses fallback", "Hallo {{vorname|Freund}}!", KindText, empty, "Hallo Freund!"},
		{"value wins over fallback", "Hallo {{vorname|Freund}}!", KindText, testValues(), "Hallo Max!"},
		{"fallback is trimmed", "Hallo {{ vorname | lieber Leser }}!", KindText, empty, "Hallo lieber Leser!"},
		{"empty fallback", "Hallo {{vorname|}}!", KindText, empty, "Hallo !"},
		{"no fallback renders nothing", "Hallo {{vorname}}!", KindText, empty, "Hallo !"},
		{"fallback keeps later bars", "{{ort|A|B}}", KindText, empty, "A|B"},
		{"fallback is template source in HTML", "<p>{{vorname|Liebe &amp; Freunde}}</p>", KindHTML, empty, "<p>Liebe &amp; Freunde</p>"},
		{"fallback for empty custom field", "{{firma|Ihr Team}}", KindText,
			&Values{Recipient: Recipient{CustomFields: map[string]string{"firma": ""}}}, "Ihr Team"},
		{"fallback for empty request placeholder", "{{code|keiner}}", KindText,
			&Values{Custom: map[string]string{"code": ""}}, "keiner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.src, tt.kind, CompileOptions{}, tt.v); got != tt.want {
				t.Errorf("%q = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestFullName(t *testing.T) {
	tests := []struct {
		first, last, want string
	}{
		{"Max", "Mustermann", "Max Mustermann"},
		{" Max ", " Mustermann ", "Max Mustermann"},
		{"Max", "", "Max"},
		{"", "Mustermann", "Mustermann"},
		{"  ", "", "Freund"}, // blank counts as empty, so the fallback applies
	}
	for _, tt := range tests {
		v := &Values{Recipient: Recipient{FirstName: tt.first, LastName: tt.last}}
		for _, src := range []string{"{{name|Freund}}", "{{full_name|Freund}}"} {
			if got := render(t, src, KindText, CompileOptions{}, v); got != tt.want {
				t.Errorf("%s with %q/%q = %q, want %q", src, tt.first, tt.last, got, tt.want)
			}
		}
	}
}

func TestDateUsesInjectedClockInBerlin(t *testing.T) {
	tests := []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), "22.11.2026"},
		// 23:30 UTC in winter is already the next day in Berlin (UTC+1).
		{time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC), "22.11.2026"},
		// 22:30 UTC in summer is already the next day in Berlin (UTC+2).
		{time.Date(2026, 6, 30, 22, 30, 0, 0, time.UTC), "01.07.2026"},
		{time.Date(2027, 1, 5, 8, 0, 0, 0, time.UTC), "05.01.2027"},
	}
	for _, tt := range tests {
		v := &Values{Now: tt.now}
		for _, src := range []string{"{{datum}}", "{{date}}"} {
			if got := render(t, src, KindText, CompileOptions{}, v); got != tt.want {
				t.Errorf("%s at %v = %q, want %q", src, tt.now, got, tt.want)
			}
		}
	}
}

func TestDateDefaultsToNow(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().In(loc).Format(dateLayout)
	got := render(t, "{{datum}}", KindText, CompileOptions{}, &Values{})
	after := time.Now().In(loc).Format(dateLayout)
	if got != before && got != after {
		t.Errorf("{{datum}} with zero Now = %q, want today %q", got, before)
	}
}

func TestCustomFields(t *testing.T) {
	v := &Values{Recipient: Recipient{CustomFields: map[string]string{
		"firma":          "ACME",
		"Lieblingsfarbe": "Blau",
		"Kunden Nummer":  "K-42",
	}}}
	tests := []struct{ src, want string }{
		{"{{firma}}", "ACME"},
		{"{{ FIRMA }}", "ACME"},
		{"{{lieblingsfarbe}}", "Blau"},
		{"{{LiebLingsFarbe}}", "Blau"},
		{"{{kundennummer}}", "K-42"},
		{"{{Kunden Nummer}}", "K-42"},
	}
	for _, tt := range tests {
		if got := render(t, tt.src, KindText, CompileOptions{}, v); got != tt.want {
			t.Errorf("%q = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestCustomFieldKeysDifferingInCaseAreDeterministic(t *testing.T) {
	v := &Values{Recipient: Recipient{CustomFields: map[string]string{"FIRMA": "b", "Firma": "a"}}}
	for range 20 { // map order varies between iterations
		if got := render(t, "{{firma}}", KindText, CompileOptions{}, v); got != "b" {
			t.Fatalf("{{firma}} = %q, want the value of the smallest key FIRMA", got)
		}
	}
}

func TestRequestPlaceholders(t *testing.T) {
	v := &Values{
		Custom:    map[string]string{"gutschein": "HERBST26", "rabatt-prozent": "15", "firma": "aus Anfrage"},
		Recipient: Recipient{CustomFields: map[string]string{"firma": "aus Kontakt", "abteilung": "Einkauf"}},
	}
	tests := []struct{ src, want string }{
		{"Code {{gutschein}}", "Code HERBST26"},
		{"{{ Rabatt-Prozent }} %", "15 %"},
		// Precedence: request placeholders beat the contact's custom_fields…
		{"{{firma}}", "aus Anfrage"},
		// …which still fill names the request does not have.
		{"{{abteilung}}", "Einkauf"},
	}
	for _, tt := range tests {
		if got := render(t, tt.src, KindText, CompileOptions{}, v); got != tt.want {
			t.Errorf("%q = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestBuiltinsCannotBeOverridden(t *testing.T) {
	v := testValues()
	v.Custom = map[string]string{"vorname": "Custom", "email": "evil@x.test", "datum": "gestern", "abmelde_link": "https://evil.test"}
	v.Recipient.CustomFields = map[string]string{"Vorname": "Feld", "first_name": "Feld", "name": "Feld", "PLZ": "00000"}
	tests := []struct{ src, want string }{
		{"{{vorname}}", "Max"},
		{"{{first_name}}", "Max"},
		{"{{name}}", "Max Mustermann"},
		{"{{email}}", "max@example.test"},
		{"{{plz}}", "10115"},
		{"{{datum}}", "22.11.2026"},
		{"{{abmelde_link}}", "https://rundbrief.test/u/abc123"},
	}
	for _, tt := range tests {
		if got := render(t, tt.src, KindText, CompileOptions{}, v); got != tt.want {
			t.Errorf("%q = %q, want the built-in %q", tt.src, got, tt.want)
		}
	}
	// An empty built-in uses its fallback, not a custom value of that name.
	v.Recipient.FirstName = ""
	if got := render(t, "{{vorname|Freund}}", KindText, CompileOptions{}, v); got != "Freund" {
		t.Errorf("empty built-in = %q, want the fallback", got)
	}
}

func TestValidateCustom(t *testing.T) {
	many := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("p%d", i)] = "x"
		}
		return m
	}
	tests := []struct {
		name   string
		custom map[string]string
		fields []string // keys expected in the result; nil means valid
	}{
		{"nil", nil, nil},
		{"valid charset", map[string]string{"a-z_0-9": "1", "gutschein": "", "x": "y"}, nil},
		{"exactly 50", many(50), nil},
		{"51 is too many", many(51), []string{"placeholders"}},
		{"uppercase", map[string]string{"Gutschein": "x"}, []string{"placeholders.Gutschein"}},
		{"space", map[string]string{"mein code": "x"}, []string{"placeholders.mein code"}},
		{"umlaut", map[string]string{"größe": "x"}, []string{"placeholders.größe"}},
		{"braces and bar", map[string]string{"a|b": "x", "{x}": "y"}, []string{"placeholders.a|b", "placeholders.{x}"}},
		{"dot", map[string]string{"a.b": "x"}, []string{"placeholders.a.b"}},
		{"empty name", map[string]string{"": "x"}, []string{"placeholders"}},
		{"built-in names are allowed but ignored", map[string]string{"vorname": "x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateCustom(tt.custom)
			var got []string
			for k, msg := range errs {
				got = append(got, k)
				if msg == "" {
					t.Errorf("field %q has no message", k)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.fields) {
				t.Errorf("ValidateCustom fields = %v, want %v (%v)", got, tt.fields, errs)
			}
		})
	}
}

func TestHTMLEscaping(t *testing.T) {
	v := &Values{Recipient: Recipient{
		FirstName: `<b>"Tom" & 'Jerry'</b>`,
		Note:      `x onmouseover=alert(1)`,
	}}
	tests := []struct {
		name, src, want string
	}{
		{"text", "<p>Hallo {{vorname}}</p>", "<p>Hallo &lt;b&gt;&#34;Tom&#34; &amp; &#39;Jerry&#39;&lt;/b&gt;</p>"},
		{"double-quoted attribute", `<img alt="{{vorname}}">`, `<img alt="&lt;b&gt;&#34;Tom&#34; &amp; &#39;Jerry&#39;&lt;/b&gt;">`},
		{"single-quoted attribute", `<img alt='{{vorname}}'>`, `<img alt='&lt;b&gt;&#34;Tom&#34; &amp; &#39;Jerry&#39;&lt;/b&gt;'>`},
		{"unquoted attribute", `<td class={{notiz}}>`, `<td class=x&#32;onmouseover&#61;alert(1)>`},
		{"comment", `<!-- {{vorname}} -->`, `<!-- &lt;b&gt;&#34;Tom&#34;&#32;&amp;&#32;&#39;Jerry&#39;&lt;/b&gt; -->`},
		{"style element", `<style>/* {{vorname}} */</style>`, `<style>/* &lt;b&gt;&#34;Tom&#34;&#32;&amp;&#32;&#39;Jerry&#39;&lt;/b&gt; */</style>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.src, KindHTML, CompileOptions{}, v); got != tt.want {
				t.Errorf("%s\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
		})
	}
	if got := render(t, "Hallo {{vorname}}", KindText, CompileOptions{}, v); got != "Hallo "+v.Recipient.FirstName {
		t.Errorf("text kind = %q, want the raw value", got)
	}
}

// TestHTMLContextRobustness covers spots where a value could make the
// browser see a different context than the one the template was compiled
// for, which would leave a later value under-escaped.
func TestHTMLContextRobustness(t *testing.T) {
	tests := []struct {
		name, src, note, want string
	}{
		{"value cannot end a comment",
			`<!-- {{notiz}}> <a title={{vorname}}> -->`, "-",
			`<!-- &#45;> <a title=Max&#32;Muster> -->`},
		{"<!--> is an empty comment",
			`<!--><a title={{vorname}}>`, "",
			`<!--><a title=Max&#32;Muster>`},
		{"--!> ends a comment",
			`<!-- x --!><a title={{vorname}}>`, "",
			`<!-- x --!><a title=Max&#32;Muster>`},
		{"empty whole unquoted value is quoted",
			`<a title={{notiz}} href="{{abmelde_link}}">`, "",
			`<a title="" href="https://u.test/x">`},
		{"empty unquoted value before >",
			`<a title={{notiz}}>`, "",
			`<a title="">`},
		{"non-empty unquoted value stays unquoted",
			`<a title={{notiz}} href="{{abmelde_link}}">`, "a b",
			`<a title=a&#32;b href="https://u.test/x">`},
		{"fallback of an unquoted value is kept",
			`<a title={{notiz|leer}}>`, "",
			`<a title=leer>`},
		{"empty value followed by more value text is not quoted",
			`<a title={{notiz}}x>`, "",
			`<a title=x>`},
		{"textarea content",
			`<textarea>{{notiz}}</textarea><a title={{vorname}}>`, "</textarea>",
			`<textarea>&lt;/textarea&gt;</textarea><a title=Max&#32;Muster>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &Values{Recipient: Recipient{FirstName: "Max Muster", Note: tt.note, UnsubscribeURL: "https://u.test/x"}}
			if got := render(t, tt.src, KindHTML, CompileOptions{}, v); got != tt.want {
				t.Errorf("%s\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestURLEncodingInLinks(t *testing.T) {
	v := testValues()
	v.Recipient.Email = "max+news@example.test"
	v.Recipient.City = "Bad Tölz & Co"
	v.Recipient.UnsubscribeURL = "https://rundbrief.test/u/abc?t=1&l=2"
	v.Custom = map[string]string{
		"link": "javascript:alert(1)",
		"ziel": "https://shop.test/a b?x=1",
	}
	tests := []struct {
		name, src, want string
	}{
		{"query value",
			`<a href="https://x.test/?e={{email}}&o={{ort}}">`,
			`<a href="https://x.test/?e=max%2Bnews%40example.test&o=Bad%20T%C3%B6lz%20%26%20Co">`},
		{"path segment",
			`<a href="https://x.test/stadt/{{ort}}">`,
			`<a href="https://x.test/stadt/Bad%20T%C3%B6lz%20%26%20Co">`},
		{"src attribute",
			`<img src="https://x.test/p.gif?e={{email}}">`,
			`<img src="https://x.test/p.gif?e=max%2Bnews%40example.test">`},
		{"unquoted href",
			`<a href=https://x.test/?e={{email}}>`,
			`<a href=https://x.test/?e=max%2Bnews%40example.test>`},
		{"mailto",
			`<a href="mailto:{{email}}">`,
			`<a href="mailto:max%2Bnews%40example.test">`},
		{"attribute names are case-insensitive",
			`<A HREF="https://x.test/?e={{email}}">`,
			`<A HREF="https://x.test/?e=max%2Bnews%40example.test">`},
		{"unsubscribe link as whole value is inserted as is",
			`<a href="{{abmelde_link}}">`,
			`<a href="https://rundbrief.test/u/abc?t=1&amp;l=2">`},
		{"unsubscribe link with surrounding spaces",
			`<a href=" {{ Unsubscribe_URL }} ">`,
			`<a href=" https://rundbrief.test/u/abc?t=1&amp;l=2 ">`},
		{"unsubscribe link unquoted",
			`<a href={{abmelde_link}}>`,
			// &#61; is '=' to the browser; raw it could end the unquoted value.
			`<a href=https://rundbrief.test/u/abc?t&#61;1&amp;l&#61;2>`},
		{"unsubscribe link inside another URL is encoded",
			`<a href="https://r.test/?next={{abmelde_link}}">`,
			`<a href="https://r.test/?next=https%3A%2F%2Frundbrief.test%2Fu%2Fabc%3Ft%3D1%26l%3D2">`},
		{"any URL value as whole value",
			`<a href="{{ziel}}">`,
			`<a href="https://shop.test/a b?x=1">`},
		{"dangerous scheme as whole value is neutralised",
			`<a href="{{link}}">`,
			`<a href="javascript%3Aalert%281%29">`},
		{"non-URL attribute is only HTML-escaped",
			`<a title="{{ort}}" href="#">`,
			`<a title="Bad Tölz &amp; Co" href="#">`},
		{"link text is only HTML-escaped",
			`<a href="https://x.test/">{{ort}}</a>`,
			`<a href="https://x.test/">Bad Tölz &amp; Co</a>`},
		{"background attribute of mail layouts",
			`<td background="https://x.test/bg.png?c={{ort}}">`,
			`<td background="https://x.test/bg.png?c=Bad%20T%C3%B6lz%20%26%20Co">`},
		{"quote in a text does not start an attribute",
			`<p>"</p><a href="https://x.test/?e={{email}}">`,
			`<p>"</p><a href="https://x.test/?e=max%2Bnews%40example.test">`},
		{"markup in a script does not confuse",
			`<script>if (a<b) { s = '"'; }</script><p title="{{ort}}">`,
			`<script>if (a<b) { s = '"'; }</script><p title="Bad Tölz &amp; Co">`},
		{"href in a comment is not a link",
			`<!-- <a href="?e={{email}}"> --><a href="?e={{email}}">`,
			`<!-- <a href="?e=max+news@example.test"> --><a href="?e=max%2Bnews%40example.test">`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.src, KindHTML, CompileOptions{}, v); got != tt.want {
				t.Errorf("%s\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestFullNameInLinks(t *testing.T) {
	v := &Values{Recipient: Recipient{FirstName: "Max", LastName: "Muster"}}
	if got := render(t, `<a href="?n={{name}}">`, KindHTML, CompileOptions{}, v); got != `<a href="?n=Max%20Muster">` {
		t.Errorf("full name in query = %s", got)
	}
	v.Recipient.FirstName = "javascript:alert(1)//"
	if got := render(t, `<a href="{{name}}">`, KindHTML, CompileOptions{}, v); !strings.HasPrefix(got, `<a href="javascript%3A`) {
		t.Errorf("dangerous full name as whole URL = %s", got)
	}
}

func TestUnknownPlaceholdersStayUnchanged(t *testing.T) {
	v := testValues()
	v.Recipient.CustomFields = map[string]string{"firma": "ACME"}
	tests := []struct {
		name, src string
		kind      Kind
		want      string
	}{
		{"typo", "Hallo {{vornmae}}!", KindText, "Hallo {{vornmae}}!"},
		{"typo with spacing and case", "Hallo {{ VorNmae  }}!", KindText, "Hallo {{ VorNmae  }}!"},
		{"typo with fallback", "Hallo {{ vornmae | Freund }}!", KindText, "Hallo {{ vornmae | Freund }}!"},
		{"unknown in HTML", `<p>{{x}}<a href="?a={{y|z}}">`, KindHTML, `<p>{{x}}<a href="?a={{y|z}}">`},
		{"known next to unknown", "{{firma}} {{firmaa}}", KindText, "ACME {{firmaa}}"},
		{"not placeholders", "{{}} {{ }} {{|x}} {{vorname} {vorname}} { {vorname}}", KindText,
			"{{}} {{ }} {{|x}} {{vorname} {vorname}} { {vorname}}"},
		{"extra braces around a placeholder", "{{{vorname}}}", KindText, "{Max}"},
		{"unclosed", "{{vorname", KindText, "{{vorname"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.src, tt.kind, CompileOptions{}, v); got != tt.want {
				t.Errorf("%q = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestUnsubscribeAppendedWhenMissing(t *testing.T) {
	v := testValues()
	const url = "https://rundbrief.test/u/abc123"
	htmlFooter := `<p style="margin:24px 0 0;font-size:12px;line-height:1.5;color:#6b7280;text-align:center;">` +
		`Sie möchten keine E-Mails mehr erhalten? <a href="` + url + `" style="color:#6b7280;">Hier abmelden</a>.</p>`
	on := CompileOptions{AppendUnsubscribe: true}
	tests := []struct {
		name, src string
		kind      Kind
		want      string
	}{
		{"html before </body>", "<html><body><p>Hi</p></body></html>", KindHTML,
			"<html><body><p>Hi</p>" + htmlFooter + "</body></html>"},
		{"html before the last </BODY>", "<body><!-- </body> --></BODY >", KindHTML,
			"<body><!-- </body> -->" + htmlFooter + "</BODY >"},
		{"html without body", "<p>Hi {{vorname}}</p>", KindHTML, "<p>Hi Max</p>" + htmlFooter},
		{"empty html", "", KindHTML, htmlFooter},
		{"html ending in a comment", "<p>Hi</p><!-- offen", KindHTML, "<p>Hi</p><!-- offen-->" + htmlFooter},
		{"html ending in an attribute", `<a href="https://x.test/`, KindHTML, `<a href="https://x.test/">` + htmlFooter},
		{"html ending in a tag", `<img src=x.png`, KindHTML, `<img src=x.png>` + htmlFooter},
		{"html ending in a script", `<script>var a = "`, KindHTML, `<script>var a = "</script>` + htmlFooter},
		{"html ending in a style tag", `<style media="all"`, KindHTML, `<style media="all"></style>` + htmlFooter},
		{"text", "Hallo Max", KindText, "Hallo Max\n\nAbmelden: " + url},
		{"text ending in newline", "Hallo Max\n", KindText, "Hallo Max\n\nAbmelden: " + url},
		{"empty text", "", KindText, "Abmelden: " + url},
		{"misspelt placeholder does not count", "{{abmelde-link}}", KindText, "{{abmelde-link}}\n\nAbmelden: " + url},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.src, tt.kind, on, v); got != tt.want {
				t.Errorf("\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}

func TestUnsubscribeNotAppendedWhenPresentOrOff(t *testing.T) {
	v := testValues()
	tests := []struct {
		name, src string
		kind      Kind
		opts      CompileOptions
	}{
		{"german", `<a href="{{abmelde_link}}">Abmelden</a>`, KindHTML, CompileOptions{AppendUnsubscribe: true}},
		{"english", `<a href="{{unsubscribe_url}}">Abmelden</a>`, KindHTML, CompileOptions{AppendUnsubscribe: true}},
		{"case and spaces", `<a href="{{ Abmelde_Link }}">x</a>`, KindHTML, CompileOptions{AppendUnsubscribe: true}},
		{"with fallback", `{{UNSUBSCRIBE_URL|#}}`, KindHTML, CompileOptions{AppendUnsubscribe: true}},
		{"text", "Abmelden: {{abmelde_link}}", KindText, CompileOptions{AppendUnsubscribe: true}},
		{"option off", "<p>Ihre Rechnung</p>", KindHTML, CompileOptions{}},
		{"option off text", "Ihre Rechnung", KindText, CompileOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(t, tt.src, tt.kind, tt.opts, v)
			want := render(t, tt.src, tt.kind, CompileOptions{}, v)
			if got != want {
				t.Errorf("footer appended: %q, want %q", got, want)
			}
		})
	}
}

func TestHasUnsubscribeAndPlaceholders(t *testing.T) {
	tests := []struct {
		src       string
		opts      CompileOptions
		wantUnsub bool
		wantNames []string
	}{
		{"Hallo {{ Vorname }}, {{firma|}} {{VORNAME}} {{x", CompileOptions{AppendUnsubscribe: true}, false, []string{"vorname", "firma"}},
		{"{{datum}} {{Unsubscribe_URL}}", CompileOptions{}, true, []string{"datum", "unsubscribe_url"}},
		{"nichts", CompileOptions{}, false, nil},
	}
	for _, tt := range tests {
		tmpl := Compile(tt.src, KindHTML, tt.opts)
		if got := tmpl.HasUnsubscribe(); got != tt.wantUnsub {
			t.Errorf("%q HasUnsubscribe = %v, want %v", tt.src, got, tt.wantUnsub)
		}
		if got := tmpl.Placeholders(); !slices.Equal(got, tt.wantNames) {
			t.Errorf("%q Placeholders = %v, want %v", tt.src, got, tt.wantNames)
		}
	}
}

// failWriter fails every write.
type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// plainWriter is an io.Writer that is not a *bytes.Buffer.
type plainWriter struct{ b []byte }

func (w *plainWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func TestRenderWriters(t *testing.T) {
	tmpl := Compile(`<p>Hallo {{vorname}}, <a href="?e={{email}}">{{datum}}</a></p>`, KindHTML, CompileOptions{AppendUnsubscribe: true})
	v := testValues()
	want, err := tmpl.AppendTo(nil, v)
	if err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	buf.WriteString("prefix:")
	if err := tmpl.Render(&buf, v); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "prefix:"+string(want) {
		t.Errorf("Render into bytes.Buffer = %q, want %q", got, "prefix:"+string(want))
	}

	var pw plainWriter
	if err := tmpl.Render(&pw, v); err != nil {
		t.Fatal(err)
	}
	if string(pw.b) != string(want) {
		t.Errorf("Render into io.Writer = %q, want %q", pw.b, want)
	}

	errDisk := errors.New("disk full")
	if err := tmpl.Render(failWriter{errDisk}, v); !errors.Is(err, errDisk) {
		t.Errorf("Render into failing writer = %v, want it to wrap %v", err, errDisk)
	}

	if _, err := tmpl.AppendTo(nil, nil); err != nil {
		t.Errorf("AppendTo with nil values: %v", err)
	}
}

func TestRenderDoesNotAllocate(t *testing.T) {
	tmpl := Compile(`<p>{{name}} {{ort}} <a href="?e={{email}}">{{datum}}</a> {{firma}}</p>`, KindHTML, CompileOptions{AppendUnsubscribe: true})
	v := testValues()
	v.Recipient.CustomFields = map[string]string{"Firma": "ACME & Söhne"}
	var buf bytes.Buffer
	allocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		if err := tmpl.Render(&buf, v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Render allocates %v times per call, want 0", allocs)
	}
}

// One compiled template remembers the date it rendered last; it must still
// turn over at midnight in Berlin, on the short and the long day of the
// daylight-saving changes too, and go back when a send's clock goes back.
func TestDateOfOneTemplateFollowsTheClock(t *testing.T) {
	tmpl := Compile("{{datum}}", KindText, CompileOptions{})
	tests := []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 3, 28, 22, 59, 59, 0, time.UTC), "28.03.2026"}, // 23:59:59 CET
		{time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC), "29.03.2026"},   // midnight; the day has 23 hours
		{time.Date(2026, 3, 29, 21, 59, 59, 0, time.UTC), "29.03.2026"}, // 23:59:59 CEST
		{time.Date(2026, 3, 29, 22, 0, 0, 0, time.UTC), "30.03.2026"},
		{time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC), "25.10.2026"}, // midnight CEST; the day has 25 hours
		{time.Date(2026, 10, 25, 22, 59, 59, 0, time.UTC), "25.10.2026"},
		{time.Date(2026, 10, 25, 23, 0, 0, 0, time.UTC), "26.10.2026"},
		{time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), "28.03.2026"}, // back again
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := tmpl.Render(&buf, &Values{Now: tt.now}); err != nil {
			t.Fatal(err)
		}
		if got := buf.String(); got != tt.want {
			t.Errorf("{{datum}} at %v = %q, want %q", tt.now, got, tt.want)
		}
	}
}

// Baking the sender joins the literals around the baked values; what a
// recipient gets must not change.
func TestBakeSenderRendersTheSame(t *testing.T) {
	src := `<html><body><p>{{firma}} grüßt {{vorname}}</p><p>{{impressum}}</p><p>{{company}}</p></body></html>`
	id := Identity{Company: "Beispiel & Co", Imprint: "Beispiel & Co\nMusterweg 2\n10115 Berlin"}
	v := &Values{Recipient: Recipient{FirstName: "Erika"}, Sender: id}
	plain := Compile(src, KindHTML, CompileOptions{AppendUnsubscribe: true})
	baked := Compile(src, KindHTML, CompileOptions{AppendUnsubscribe: true})
	baked.BakeSender(id)
	var want, got bytes.Buffer
	if err := plain.Render(&want, v); err != nil {
		t.Fatal(err)
	}
	if err := baked.Render(&got, v); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("baked = %q\nwant    %q", got.String(), want.String())
	}
	literals := 0
	for i, s := range baked.segs {
		if s.name == "" {
			literals++
			if i > 0 && baked.segs[i-1].name == "" {
				t.Errorf("segments %d and %d are both literals: not joined", i-1, i)
			}
		}
	}
	if literals == 0 {
		t.Error("no literal segments at all")
	}
}
