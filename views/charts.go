package views

import (
	"math"
	"strconv"
	"strings"
)

// Chart is a server-rendered SVG chart (see ChartFigure): a line chart or a
// bar chart of one or more series over the same labels. It needs no
// JavaScript; the SVG is an image with a title and a description for screen
// readers, and every value is also in a data table below it.
type Chart struct {
	ID     string // unique on the page: element ids and data-testid="chart-<ID>"
	Kind   string // ChartLine or ChartBar
	Title  string // the chart's <title> and the table's caption
	Desc   string // the chart's <desc>: what it shows, in a sentence
	Labels []string
	Series []ChartSeries
	// Percent writes values (0 to 1) as percentages; otherwise they are counts.
	Percent bool
	// LabelHead heads the table's label column (e.g. "Tag", "Kampagne").
	LabelHead string
}

// ChartSeries is one series of a chart: a value per label.
type ChartSeries struct {
	Name   string
	Values []float64
}

// Chart kinds.
const (
	ChartLine = "line"
	ChartBar  = "bar"
)

// The drawing area of every chart, in SVG user units; the SVG scales to the
// width of its container.
const (
	chartW      = 640
	chartH      = 240
	chartLeft   = 56 // room for the y axis labels
	chartRight  = 12
	chartTop    = 12
	chartBottom = 32 // room for the x axis labels
	chartTicks  = 4  // horizontal grid lines above the baseline
	// chartMaxXLabels bounds the x axis labels drawn; the table has them all.
	chartMaxXLabels = 8
)

// chartGeom is what the template draws.
type chartGeom struct {
	YTicks  []chartTick
	XLabels []chartTick
	Lines   []chartLine
	Bars    []chartBar
	Base    float64 // y of the baseline
}

type chartTick struct {
	Pos   float64 // y for y ticks, x for x labels
	Label string
}

type chartLine struct {
	Class  string
	Points string // the polyline's points
	Dots   []chartDot
}

type chartDot struct {
	X, Y  float64
	Label string // the point's <title>: label and value
}

type chartBar struct {
	Class      string
	X, Y, W, H float64
	Label      string
}

// Empty reports whether the chart has nothing to draw.
func (c Chart) Empty() bool {
	if len(c.Labels) == 0 {
		return true
	}
	for _, s := range c.Series {
		for _, v := range s.Values {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// seriesClass is the CSS class that colours series i (the palette has six).
func seriesClass(i int) string { return "chart-series-" + strconv.Itoa(i%6+1) }

// niceMax rounds the largest value up to a number whose tick steps are round:
// 1, 2, 2.5 or 5 times a power of ten per step.
func niceMax(v float64, percent bool) float64 {
	if percent {
		// Rates: up to 100 %, in steps of 5, 10, 25 or 50 %.
		for _, m := range []float64{0.2, 0.4, 1} {
			if v <= m {
				return m
			}
		}
		return 1
	}
	if v <= chartTicks {
		return chartTicks // whole numbers on every tick
	}
	step := v / chartTicks
	p := math.Pow(10, math.Floor(math.Log10(step)))
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if f*p >= step && (f != 2.5 || p >= 1) {
			return f * p * chartTicks
		}
	}
	return 10 * p * chartTicks
}

// geom lays the chart out.
func (c Chart) geom(t Text) chartGeom {
	maxV := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			maxV = max(maxV, v)
		}
	}
	top := niceMax(maxV, c.Percent)
	plotW := float64(chartW - chartLeft - chartRight)
	plotH := float64(chartH - chartTop - chartBottom)
	base := float64(chartTop) + plotH
	y := func(v float64) float64 { return round1(base - v/top*plotH) }
	g := chartGeom{Base: base}
	for i := 0; i <= chartTicks; i++ {
		v := top * float64(i) / chartTicks
		g.YTicks = append(g.YTicks, chartTick{Pos: y(v), Label: c.format(t, v)})
	}
	n := len(c.Labels)
	if n == 0 {
		return g
	}
	slot := plotW / float64(n)
	center := func(i int) float64 { return round1(float64(chartLeft) + slot*(float64(i)+0.5)) }
	every := (n + chartMaxXLabels - 1) / chartMaxXLabels
	for i, l := range c.Labels {
		// Always the last label; the others evenly thinned out.
		if (n-1-i)%every == 0 {
			g.XLabels = append(g.XLabels, chartTick{Pos: center(i), Label: l})
		}
	}
	switch c.Kind {
	case ChartBar:
		group := slot * 0.8
		w := group / float64(max(len(c.Series), 1))
		for si, s := range c.Series {
			for i, v := range s.Values {
				if i >= n {
					break
				}
				x := float64(chartLeft) + slot*float64(i) + (slot-group)/2 + w*float64(si)
				top := y(v)
				g.Bars = append(g.Bars, chartBar{Class: seriesClass(si), X: round1(x), Y: top, W: round1(max(w-1, 1)),
					H: round1(base - top), Label: c.Labels[i] + ", " + s.Name + ": " + c.format(t, v)})
			}
		}
	default:
		for si, s := range c.Series {
			l := chartLine{Class: seriesClass(si)}
			var pts []string
			for i, v := range s.Values {
				if i >= n {
					break
				}
				px, py := center(i), y(v)
				pts = append(pts, fmtCoord(px)+","+fmtCoord(py))
				l.Dots = append(l.Dots, chartDot{X: px, Y: py, Label: c.Labels[i] + ", " + s.Name + ": " + c.format(t, v)})
			}
			l.Points = strings.Join(pts, " ")
			g.Lines = append(g.Lines, l)
		}
	}
	return g
}

// format writes a value as the chart's axis and table show it.
func (c Chart) format(t Text, v float64) string {
	if c.Percent {
		return formatPercent(t, v)
	}
	if v == math.Trunc(v) {
		return formatInt(t, int64(v))
	}
	return formatDecimal(t, v, 1)
}

// value is series s's value at label i (0 when missing).
func (c Chart) value(s ChartSeries, i int) float64 {
	if i < len(s.Values) {
		return s.Values[i]
	}
	return 0
}

// formatPercent writes a rate between 0 and 1 as a percentage with one
// decimal when needed ("40 %", "12,5 %").
func formatPercent(t Text, r float64) string {
	p := math.Round(r*1000) / 10
	if p == math.Trunc(p) {
		return formatInt(t, int64(p)) + "\u00a0%"
	}
	return formatDecimal(t, p, 1) + "\u00a0%"
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func fmtCoord(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
