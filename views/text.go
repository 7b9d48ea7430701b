package views

import (
	"context"
	"strings"
)

// Text holds every user-visible string of the views in one language, so that the
// templates contain markup only. To add a language, write a function like German
// that fills every field, and add its tag to TextFor.
type Text struct {
	// Lang is the BCP 47 tag written into <html lang>.
	Lang string

	ProductName   string
	SkipToContent string
	TitleSuffix   string // appended to every page title: "Kontakte · Rundbrief"

	HomeTitle        string
	HomeLead         string
	HomeFeaturesHead string
	HomeFeatures     []Feature
	HomeAPIHead      string
	HomeAPIIntro     string
	HomeAPIDocLink   string
	HomeAPIDocHint   string
	HomeAPIIndexLink string
	HomeAPIIndexHint string
	HomeSelfHosted   string
}

// Feature is one entry of the start page's feature list.
type Feature struct {
	Title string
	Body  string
}

// German returns the German interface strings, Rundbrief's default language.
func German() Text {
	return Text{
		Lang:          "de",
		ProductName:   "Rundbrief",
		SkipToContent: "Zum Inhalt springen",
		TitleSuffix:   " · Rundbrief",

		HomeTitle: "E-Mail-Marketing auf dem eigenen Server",
		HomeLead: "Rundbrief verwaltet Kontakte und Listen, verschickt Newsletter, Story-E-Mails " +
			"und automatische Sequenzen und zeigt, was davon ankommt – selbst betrieben, " +
			"mit einer vollständigen JSON-API.",
		HomeFeaturesHead: "Was Rundbrief kann",
		HomeFeatures: []Feature{
			{"Kontakte und Listen", "Import, Tags, Aktivitätsverlauf, Abmeldungen und Double-Opt-in über gehostete Formulare."},
			{"Newsletter und Sequenzen", "Planen, pausieren, fortsetzen; Story-Sequenzen, die Tag für Tag zugestellt werden."},
			{"A/B-Tests und Auswertung", "Öffnungen, Klicks und Zustellung je Kampagne, mit automatisch ermitteltem Gewinner."},
			{"Posteingang mit KI", "Antworten im verbundenen Postfach lesen, Regeln anlegen und Antwortentwürfe erstellen lassen."},
			{"Webhooks und Integrationen", "Signierte Ereignisse an Ihre Systeme; Käufe aus Stripe, Digistore24, CopeCart und PayPal."},
			{"Terminbuchung", "Öffentliche Buchungsseite mit freien Zeitfenstern, Bestätigung per E-Mail."},
		},
		HomeAPIHead:      "API",
		HomeAPIIntro:     "Alles, was das Portal kann, geht auch über die JSON-API. Sie authentifizieren sich mit einem API-Schlüssel im Authorization-Header:",
		HomeAPIDocLink:   "API-Beschreibung (OpenAPI)",
		HomeAPIDocHint:   "Maschinenlesbare Beschreibung aller Endpunkte, Parameter und Antworten.",
		HomeAPIIndexLink: "API-Übersicht",
		HomeAPIIndexHint: "Einstiegspunkt der API mit Version und Verweisen.",
		HomeSelfHosted:   "Rundbrief läuft als ein einziges Programm mit PostgreSQL. Ihre Daten bleiben auf Ihrem Server.",
	}
}

// languageKey is the context key under which WithLanguage stores the language tag.
type languageKey struct{}

// WithLanguage returns a context in which the views render in the language lang
// (a tag such as "de" or "de-DE"). Languages without strings fall back to German.
func WithLanguage(ctx context.Context, lang string) context.Context {
	return context.WithValue(ctx, languageKey{}, lang)
}

// TextFor returns the interface strings for the language set on ctx with
// WithLanguage; German when none is set or the language has no strings yet.
func TextFor(ctx context.Context) Text {
	lang, _ := ctx.Value(languageKey{}).(string)
	base, _, _ := strings.Cut(strings.ToLower(lang), "-")
	switch base {
	case "de":
		return German()
	default: // the default language until another one has its strings
		return German()
	}
}
