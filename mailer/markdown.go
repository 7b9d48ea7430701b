package mailer

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// MarkdownToHTML renders a newsletter written in Markdown (CommonMark with
// GitHub's extensions: tables, strikethrough, autolinks, task lists) to HTML.
// Raw HTML in the source is kept: the author may write HTML directly anyway.
//
// Placeholders survive unchanged, also inside link targets, where goldmark
// would otherwise percent-encode the braces ({{email}} → %7B%7Bemail%7D%7D):
// each is swapped for an opaque alphanumeric marker before rendering and
// swapped back afterwards.
func MarkdownToHTML(src string) (string, error) {
	protected, restore := protectPlaceholders(src)
	md := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	var buf bytes.Buffer
	if err := md.Convert([]byte(protected), &buf); err != nil {
		return "", fmt.Errorf("mailer: render markdown: %w", err)
	}
	return restore(buf.String()), nil
}

// protectPlaceholders replaces every "{{…}}" (no brace inside) in src by a
// marker of letters and digits that occurs nowhere in src, and returns a
// function that puts the placeholders back.
func protectPlaceholders(src string) (string, func(string) string) {
	prefix := "rbph"
	for strings.Contains(src, prefix) {
		prefix += "q"
	}
	var (
		b      strings.Builder
		pairs  []string
		last   int
		marker = func(i int) string { return prefix + strconv.Itoa(i) + "x" }
	)
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			break
		}
		start := i + j
		end := placeholderEnd(src, start)
		if end < 0 {
			i = start + 1
			continue
		}
		m := marker(len(pairs) / 2)
		pairs = append(pairs, m, src[start:end])
		b.WriteString(src[last:start])
		b.WriteString(m)
		last, i = end, end
	}
	if len(pairs) == 0 {
		return src, func(s string) string { return s }
	}
	b.WriteString(src[last:])
	// The closing x keeps rbph1x from matching inside rbph11x.
	r := strings.NewReplacer(pairs...)
	return b.String(), r.Replace
}
