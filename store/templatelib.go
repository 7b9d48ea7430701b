package store

import (
	"strings"
)

// This file is the template library: ready designs shipped in the binary
// (GET /template-library), copied into an account with
// POST /template-library/{key}/copy. Every design is one table layout at most
// 600 px wide that shrinks to the screen (320 px phones included), with inline
// styles only (mail clients drop <style>), an unsubscribe placeholder and the
// imprint placeholder below it, German text, and absolute links.

// LibraryTemplate is one design of the library.
type LibraryTemplate struct {
	Key         string
	Name        string
	Category    string
	Description string
	Subject     string
	Preheader   string
	HTML        string
}

// libraryPage wraps a design's rows into the shared document: one outer table
// (the layout), a 600 px inner table that shrinks with the screen, and the
// footer with the unsubscribe link and the imprint below it.
func libraryPage(bg, accent string, rows ...string) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="de"><head><meta charset="utf-8">` +
		`<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{firma}}</title></head>` +
		`<body style="margin:0;padding:0;background:` + bg + `;">` +
		`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="width:100%;background:` + bg + `;">` +
		`<tr><td align="center" style="padding:24px 12px;">` +
		`<div style="width:100%;max-width:600px;margin:0 auto;background:#ffffff;border-radius:8px;overflow:hidden;` +
		`border-top:4px solid ` + accent + `;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2937;font-size:16px;line-height:1.6;">`)
	for _, r := range rows {
		b.WriteString(r)
	}
	b.WriteString(`<div style="padding:24px;border-top:1px solid #e5e7eb;font-size:12px;line-height:1.5;color:#6b7280;text-align:center;">` +
		`<p style="margin:0 0 12px;">Sie erhalten diese E-Mail, weil Sie sich bei {{firma}} angemeldet haben. ` +
		`<a href="{{abmelde_link}}" style="color:#6b7280;">Hier abmelden</a>.</p>` +
		`<div style="margin:0;">{{impressum}}</div></div>` +
		`</div></td></tr></table></body></html>`)
	return b.String()
}

// libraryBlock is a padded block of the design.
func libraryBlock(style, inner string) string {
	return `<div style="padding:24px;` + style + `">` + inner + `</div>`
}

func libraryHeading(text string) string {
	return `<h1 style="margin:0 0 12px;font-size:26px;line-height:1.25;color:#111827;">` + text + `</h1>`
}

func libraryH2(text string) string {
	return `<h2 style="margin:0 0 8px;font-size:19px;line-height:1.3;color:#111827;">` + text + `</h2>`
}

func libraryP(text string) string {
	return `<p style="margin:0 0 16px;">` + text + `</p>`
}

func libraryButton(accent, href, label string) string {
	return `<p style="margin:8px 0 16px;"><a href="` + href + `" style="display:inline-block;padding:12px 24px;background:` + accent +
		`;color:#ffffff;text-decoration:none;border-radius:6px;font-weight:bold;">` + label + `</a></p>`
}

func libraryImage(src, alt string) string {
	return `<img src="` + src + `" alt="` + alt + `" width="600" style="display:block;width:100%;max-width:600px;height:auto;border:0;">`
}

// libraryDesigns are the designs in the order the gallery shows them.
var libraryDesigns = []LibraryTemplate{
	{
		Key: "newsletter", Name: "Newsletter", Category: "newsletter",
		Description: "Klassischer Newsletter mit Titelbild, Einleitung und drei Beiträgen.",
		Subject:     "Neuigkeiten von {{firma}}", Preheader: "Das Wichtigste dieses Monats auf einen Blick.",
		HTML: libraryPage("#f3f4f6", "#2563eb",
			libraryImage("https://www.example.com/bilder/newsletter.jpg", "Titelbild des Newsletters"),
			libraryBlock("", libraryHeading("Hallo {{vorname|zusammen}},")+
				libraryP("hier ist unser Überblick über das, was sich in den letzten Wochen getan hat.")),
			libraryBlock("padding-top:0;", libraryH2("Erster Beitrag")+
				libraryP("Ein kurzer Anriss des Themas in zwei oder drei Sätzen. Worum geht es, und warum lohnt sich das Weiterlesen?")+
				`<p style="margin:0 0 16px;"><a href="https://www.example.com/beitrag-1" style="color:#2563eb;">Weiterlesen →</a></p>`),
			libraryBlock("padding-top:0;", libraryH2("Zweiter Beitrag")+
				libraryP("Noch ein Thema, kurz und klar erzählt.")+
				`<p style="margin:0 0 16px;"><a href="https://www.example.com/beitrag-2" style="color:#2563eb;">Weiterlesen →</a></p>`),
			libraryBlock("padding-top:0;", libraryH2("Dritter Beitrag")+
				libraryP("Und zum Schluss ein Tipp für den Alltag.")+
				`<p style="margin:0;"><a href="https://www.example.com/beitrag-3" style="color:#2563eb;">Weiterlesen →</a></p>`),
		),
	},
	{
		Key: "ankuendigung", Name: "Ankündigung", Category: "announcement",
		Description: "Eine wichtige Nachricht, groß und deutlich, mit einem Knopf.",
		Subject:     "Wichtige Neuigkeit", Preheader: "Das sollten Sie wissen.",
		HTML: libraryPage("#fef3c7", "#d97706",
			libraryBlock("text-align:center;", libraryHeading("Wir haben Neuigkeiten!")+
				libraryP("Liebe/r {{vorname|Kundin, lieber Kunde}}, ab dem 1. des kommenden Monats ändert sich etwas Wichtiges. Hier erfahren Sie, was das für Sie bedeutet.")+
				libraryButton("#d97706", "https://www.example.com/neuigkeit", "Mehr erfahren")),
		),
	},
	{
		Key: "produktstart", Name: "Produktstart", Category: "product_launch",
		Description: "Ein neues Produkt vorstellen: Bild, Vorteile, Preis und Knopf zum Kauf.",
		Subject:     "Neu: unser jüngstes Produkt", Preheader: "Jetzt entdecken und als Erste/r bestellen.",
		HTML: libraryPage("#ecfdf5", "#059669",
			libraryImage("https://www.example.com/bilder/produkt.jpg", "Das neue Produkt"),
			libraryBlock("", libraryHeading("Endlich da: das Neue")+
				libraryP("{{vorname|Hallo}}, wir haben lange daran gearbeitet. Das sind die drei Dinge, die es besonders machen:")+
				`<ul style="margin:0 0 16px;padding-left:20px;"><li>Einfach in der Bedienung</li><li>Langlebig und reparierbar</li><li>In Deutschland gefertigt</li></ul>`+
				libraryP(`<strong>Einführungspreis: 49 €</strong> (nur bis Monatsende)`)+
				libraryButton("#059669", "https://www.example.com/produkt", "Jetzt bestellen")),
		),
	},
	{
		Key: "einladung", Name: "Einladung zur Veranstaltung", Category: "event",
		Description: "Einladung mit Datum, Ort und Anmeldeknopf.",
		Subject:     "Einladung: Sie sind dabei?", Preheader: "Wir freuen uns auf Sie.",
		HTML: libraryPage("#eef2ff", "#4f46e5",
			libraryBlock("", libraryHeading("Sie sind eingeladen")+
				libraryP("Liebe/r {{vorname|Gast}}, wir laden Sie herzlich zu unserer Veranstaltung ein.")+
				`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="width:100%;margin:0 0 16px;background:#f5f3ff;border-radius:6px;">`+
				`<tr><td style="padding:16px;font-size:15px;"><strong>Wann:</strong> Donnerstag, 18:00 Uhr<br><strong>Wo:</strong> Musterstraße 1, 10115 Berlin</td></tr></table>`+
				libraryButton("#4f46e5", "https://www.example.com/anmeldung", "Jetzt anmelden")+
				libraryP("Die Teilnahme ist kostenlos; die Plätze sind begrenzt.")),
		),
	},
	{
		Key: "willkommen", Name: "Willkommen", Category: "welcome",
		Description: "Begrüßung neuer Abonnentinnen und Abonnenten mit den ersten Schritten.",
		Subject:     "Willkommen bei {{firma}}!", Preheader: "Schön, dass Sie da sind.",
		HTML: libraryPage("#f0f9ff", "#0284c7",
			libraryBlock("", libraryHeading("Willkommen, {{vorname|schön dass Sie da sind}}!")+
				libraryP("Danke für Ihre Anmeldung. Ab jetzt erhalten Sie unsere Neuigkeiten als Erste/r.")+
				libraryH2("Ihre ersten Schritte")+
				`<ol style="margin:0 0 16px;padding-left:20px;"><li>Stöbern Sie in unseren beliebtesten Beiträgen.</li><li>Folgen Sie uns, um nichts zu verpassen.</li><li>Antworten Sie einfach auf diese E-Mail, wenn Sie Fragen haben.</li></ol>`+
				libraryButton("#0284c7", "https://www.example.com/start", "Los geht’s")),
		),
	},
	{
		Key: "brief", Name: "Schlichter Brief (Layout)", Category: "story",
		Description: "Persönlicher Brief ohne Bilder, gut für Geschichten und tägliche E-Mails. Ein Layout: der Inhalt jeder Mail kommt in {{inhalt}}.",
		Subject:     "", Preheader: "",
		HTML: libraryPage("#ffffff", "#374151",
			libraryBlock("font-family:Georgia,'Times New Roman',serif;font-size:17px;line-height:1.7;", `{{inhalt}}`),
		),
	},
	{
		Key: "wochenrueckblick", Name: "Wochenrückblick", Category: "digest",
		Description: "Kompakter Überblick über mehrere Links, ideal als wöchentliche Zusammenfassung.",
		Subject:     "Ihr Wochenrückblick", Preheader: "Fünf Dinge, die diese Woche wichtig waren.",
		HTML: libraryPage("#f9fafb", "#7c3aed",
			libraryBlock("", libraryHeading("Die Woche in fünf Punkten")+
				libraryP("{{vorname|Hallo}}, das waren die wichtigsten Themen der Woche:")+
				`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="width:100%;">`+
				digestRow("1", "https://www.example.com/thema-1", "Erstes Thema", "Worum es ging, in einem Satz.")+
				digestRow("2", "https://www.example.com/thema-2", "Zweites Thema", "Worum es ging, in einem Satz.")+
				digestRow("3", "https://www.example.com/thema-3", "Drittes Thema", "Worum es ging, in einem Satz.")+
				digestRow("4", "https://www.example.com/thema-4", "Viertes Thema", "Worum es ging, in einem Satz.")+
				digestRow("5", "https://www.example.com/thema-5", "Fünftes Thema", "Worum es ging, in einem Satz.")+
				`</table>`),
		),
	},
	{
		Key: "wiedersehen", Name: "Wir vermissen Sie", Category: "reengagement",
		Description: "Inaktive Kontakte zurückgewinnen, mit Angebot und der Frage, ob sie weiter Post möchten.",
		Subject:     "{{vorname|Hallo}}, wir vermissen Sie", Preheader: "Ein kleines Dankeschön wartet auf Sie.",
		HTML: libraryPage("#fdf2f8", "#db2777",
			libraryBlock("text-align:center;", libraryHeading("Lange nicht gesehen!")+
				libraryP("{{vorname|Hallo}}, wir haben schon eine Weile nichts von Ihnen gehört. Als Dankeschön für Ihre Treue schenken wir Ihnen 15 % auf Ihre nächste Bestellung.")+
				`<p style="margin:0 0 16px;font-size:22px;font-weight:bold;letter-spacing:2px;color:#db2777;">WIEDERDA15</p>`+
				libraryButton("#db2777", "https://www.example.com/angebot", "Gutschein einlösen")+
				libraryP(`Keine Lust mehr auf unsere Post? Kein Problem: <a href="{{abmelde_link}}" style="color:#db2777;">Mit einem Klick abmelden</a>.`)),
		),
	},
}

func digestRow(n, href, title, text string) string {
	return `<tr><td valign="top" style="padding:8px 12px 8px 0;font-size:20px;font-weight:bold;color:#7c3aed;width:24px;">` + n + `</td>` +
		`<td style="padding:8px 0;border-bottom:1px solid #e5e7eb;"><a href="` + href + `" style="color:#111827;font-weight:bold;text-decoration:none;">` +
		title + `</a><br><span style="color:#4b5563;font-size:15px;">` + text + `</span></td></tr>`
}

// LibraryDesigns returns the library's designs.
func LibraryDesigns() []LibraryTemplate { return libraryDesigns }

// LibraryDesign returns the design with key.
func LibraryDesign(key string) (LibraryTemplate, bool) {
	for _, d := range libraryDesigns {
		if d.Key == key {
			return d, true
		}
	}
	return LibraryTemplate{}, false
}
