package ai

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rundbrief/rundbrief/store"
)

const mail = `<!--[if mso]><table><tr><td><![endif]--><div style="font-family:Arial"><h1 class="t">Hallo {{vorname}},</h1>` +
	`<p>Unser <strong>Sommer-Sale</strong> startet morgen.</p><p><a href="https://shop.example/sale?a=1&amp;b=2" title="Zum Sale">Jetzt ansehen</a>` +
	`<br><img src="https://cdn.example/b.png" alt="Banner"></p><style>p { color: #333 }</style></div><!--[if mso]></td></tr></table><![endif]-->`

func TestCheckStructure(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		ok     bool
	}{
		{"same", mail, true},
		{"text rewritten", strings.NewReplacer("Hallo", "Liebe", "startet morgen", "beginnt schon morgen früh", "Jetzt ansehen", "Zum Angebot").Replace(mail), true},
		{"alt and title are prose", strings.NewReplacer(`alt="Banner"`, `alt="Sommerbanner"`, `title="Zum Sale"`, `title="Angebote"`).Replace(mail), true},
		{"void tag spelled self-closing", strings.Replace(mail, "<br>", "<br/>", 1), true},
		{"attribute order", strings.Replace(mail, `<h1 class="t">`, `<h1  class="t" >`, 1), true},
		{"tag dropped", strings.NewReplacer("<strong>", "", "</strong>", "").Replace(mail), false},
		{"tag added", strings.Replace(mail, "morgen", "<b>morgen</b>", 1), false},
		{"link changed", strings.Replace(mail, "sale?a=1", "sale?a=2", 1), false},
		{"style attribute changed", strings.Replace(mail, "font-family:Arial", "font-family:Helvetica", 1), false},
		{"style element changed", strings.Replace(mail, "#333", "#000", 1), false},
		{"conditional comment dropped", strings.Replace(mail, "<!--[if mso]><table><tr><td><![endif]-->", "", 1), false},
		{"tags reordered", strings.Replace(mail, "<br><img", "<img", 1) + "<br>", false},
		{"cut off", mail[:strings.Index(mail, "<p><a")], false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkStructure(mail, c.answer)
			if (err == nil) != c.ok {
				t.Fatalf("checkStructure: %v, want ok=%v", err, c.ok)
			}
			if err != nil && !errors.Is(err, ErrStructure) {
				t.Errorf("error %v is not ErrStructure", err)
			}
		})
	}
}

func TestHTMLText(t *testing.T) {
	got := htmlText(mail)
	for _, want := range []string{"Hallo {{vorname}},", "Sommer-Sale", "Jetzt ansehen"} {
		if !strings.Contains(got, want) {
			t.Errorf("htmlText lacks %q: %q", want, got)
		}
	}
	if strings.ContainsAny(got, "<>") || strings.Contains(got, "color") {
		t.Errorf("htmlText kept markup or CSS: %q", got)
	}
	if got := htmlText("<p>Eins<br>Zwei</p>\n  <p>Drei &amp; vier</p><ul><li>a</li><li> b  c </li></ul><table><tr><td>x</td><td>y</td></tr></table>"); got != "Eins\nZwei\n\nDrei & vier\n\na\n\nb c\n\nx y" {
		t.Errorf("blocks and line breaks: %q", got)
	}
	if !hasText(mail) || hasText(`<div style="x"><img src="a.png"></div><style>p{}</style>`) || hasText("<p> &nbsp; </p>") {
		t.Error("hasText")
	}
}

func TestCleanAnswer(t *testing.T) {
	for in, want := range map[string]string{
		"  Neuer Text \n":                  "Neuer Text",
		"```html\n<p>Hallo</p>\n```":       "<p>Hallo</p>",
		"```\nZeile 1\nZeile 2\n```":       "Zeile 1\nZeile 2",
		"<<<TEXT\nNeuer Text\nTEXT>>>":     "Neuer Text",
		"Text mit ``` in der Mitte":        "Text mit ``` in der Mitte",
		"```html\n<p>a</p>\n<p>b</p>```":   "<p>a</p>\n<p>b</p>",
		"\n\n„Zitat bleibt erhalten“\n\n":  "„Zitat bleibt erhalten“",
		"```markdown\n**fett**\n```  \n\n": "**fett**",
	} {
		if got := cleanAnswer(in); got != want {
			t.Errorf("cleanAnswer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseIdeas(t *testing.T) {
	answer := "Hier sind 8 Betreffzeilen:\n\n1. „Dein Sommer beginnt jetzt“\n2) \"Nur heute: 20 % auf alles\"\n- Was {{vorname}} noch nicht weiß\n" +
		"* **Endlich da**\n• «Der Sale ist eröffnet»\n6: Kurz und knapp\n\n10 Gründe, heute reinzuschauen\n– Letzte Chance\nÜberzählig\n"
	got, err := parseIdeas(answer, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Dein Sommer beginnt jetzt", "Nur heute: 20 % auf alles", "Was {{vorname}} noch nicht weiß", "Endlich da",
		"Der Sale ist eröffnet", "Kurz und knapp", "10 Gründe, heute reinzuschauen", "Letzte Chance"}
	if !slices.Equal(got, want) {
		t.Errorf("ideas\n got %q\nwant %q", got, want)
	}
	if _, err := parseIdeas("Eins\nZwei\n", 3); err == nil {
		t.Error("two lines accepted as three suggestions")
	}
}

func TestPriceCost(t *testing.T) {
	haiku, _ := LookupModel("haiku")
	sonnet, _ := LookupModel("sonnet")
	for _, c := range []struct {
		price   Price
		in, out int
		want    store.Money
	}{
		{haiku.Price, 0, 0, 0},
		{haiku.Price, 1, 0, 1},               // 0.00000095 EUR rounds up to 0.0001
		{haiku.Price, 1000, 0, 10},           // 0.00095 → 0.0010
		{haiku.Price, 1000, 500, 34},         // 0.00095 + 0.002375 = 0.003325 → 0.0034
		{haiku.Price, 1_000_000, 0, 9500},    // exactly 0.95
		{sonnet.Price, 1000, 500, 100},       // 0.00285 + 0.007125 = 0.009975 → 0.0100
		{sonnet.Price, 0, 1_000_000, 142500}, // exactly 14.25
		{Price{}, 5000, 5000, 0},             // a free local fallback
	} {
		if got := c.price.Cost(c.in, c.out); got != c.want {
			t.Errorf("%+v × %d/%d = %d, want %d", c.price, c.in, c.out, got, c.want)
		}
	}
	if haiku.ID != "claude-haiku-4-5" || sonnet.ID != "claude-sonnet-4-5" {
		t.Errorf("model table: %+v %+v", haiku, sonnet)
	}
	if _, ok := LookupModel("opus"); ok {
		t.Error("unknown alias found")
	}
}

func TestMaxTokens(t *testing.T) {
	for _, a := range actions() {
		short, long := maxTokens(a, "Kurz."), maxTokens(a, strings.Repeat("x", MaxHTML))
		switch {
		case a.lines > 0:
			if short != long || short < 30*a.lines {
				t.Errorf("%s: %d/%d tokens for %d lines", a.name, short, long, a.lines)
			}
		case short != 1024 || long != 8192:
			t.Errorf("%s: max_tokens %d for a short, %d for the longest source; want 1024 and 8192", a.name, short, long)
		}
	}
}

func TestOpenAIEndpoint(t *testing.T) {
	for base, want := range map[string]string{
		"http://localhost:11434":                        "http://localhost:11434/v1/chat/completions",
		"http://localhost:11434/":                       "http://localhost:11434/v1/chat/completions",
		"http://localhost:8080/v1":                      "http://localhost:8080/v1/chat/completions",
		"https://api.openai.com/v1/":                    "https://api.openai.com/v1/chat/completions",
		"https://proxy.example/openai/chat/completions": "https://proxy.example/openai/chat/completions",
	} {
		if got := NewOpenAI(base, "", "m").endpoint; got != want {
			t.Errorf("NewOpenAI(%q) posts to %q, want %q", base, got, want)
		}
	}
}

func TestEveryActionHasAPrompt(t *testing.T) {
	want := []string{"improve", "shorten", "expand", "subject_ideas", "preheader", "urgency", "story", "emotional", "fix", "translate_en", "custom"}
	if got := ActionNames(); !slices.Equal(got, want) {
		t.Fatalf("actions %v, want %v", got, want)
	}
	for _, a := range actions() {
		if len([]rune(a.task)) < 80 || a.label == "" || (a.growth == 0 && a.lines == 0) {
			t.Errorf("%s: incomplete prompt %+v", a.name, a)
		}
	}
}

// BenchmarkCheckStructure compares a newsletter of the largest accepted size with
// itself, as every HTML answer is compared with its source.
func BenchmarkCheckStructure(b *testing.B) {
	html := strings.Repeat(mail, MaxHTML/len(mail))
	b.SetBytes(int64(2 * len(html)))
	for b.Loop() {
		if err := checkStructure(html, html); err != nil {
			b.Fatal(err)
		}
	}
}
