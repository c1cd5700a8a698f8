package web

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// The lease timeline is drawn as SVG on the server: one row per todo, one
// bar per execution (epoch), coloured by owner (and labelled, so colour is
// never the only cue), with marks where an execution was transferred or
// taken over after it lapsed. Geometry uses SVG attributes only (no style
// attributes: the Content-Security-Policy forbids inline styles). The same
// facts are in a table below the drawing, for screen readers and for
// copying.

// Geometry of the drawing, in viewBox units.
const (
	tlWidth     = 1000.0
	tlLabelW    = 190.0
	tlRowH      = 28
	tlBarH      = 18
	tlTop       = 30
	tlRightPad  = 12.0
	tlRowsPage  = 50
	tlOwnerCols = 8
)

type tlView struct {
	Width, Height   int
	LabelW, PlotEnd float64
	NowX            float64
	Rows            []tlRow
	Ticks           []tlTick
	Owners          []tlOwner
	Total, Shown    int
	More            string
	Empty           bool
}

type tlOwner struct {
	Name  string
	Class string
}

type tlRow struct {
	Todo, Text string
	Y, TextY   int
	BarY       int
	Bars       []tlBar
	Marks      []tlMark
}

type tlBar struct {
	X, W      float64
	Class     string
	Label     string
	Title     string
	LabelX    float64
	ShowLabel bool
	Span      Span
}

type tlMark struct {
	X     float64
	Kind  string // transfer | takeover
	Title string
}

type tlTick struct {
	X     float64
	Label string
}

// layoutTimeline computes the drawing of tl's rows as q pages them (n=COUNT).
func layoutTimeline(tl *Timeline, q url.Values) *tlView {
	v := &tlView{Width: int(tlWidth), LabelW: tlLabelW, PlotEnd: tlWidth - tlRightPad, Total: len(tl.Rows)}
	shown := tlRowsPage
	if n, err := strconv.Atoi(q.Get("n")); err == nil && n > shown {
		shown = min(n, maxShown)
	}
	rows := tl.Rows
	if len(rows) > shown {
		rows = rows[:shown]
		nq := url.Values{}
		for k, vs := range q {
			nq[k] = vs
		}
		nq.Set("n", strconv.Itoa(shown+tlRowsPage))
		v.More = "?" + nq.Encode()
	}
	v.Shown = len(rows)
	if len(rows) == 0 {
		v.Empty = true
		return v
	}
	// The time axis: from the earliest start shown to now (or the latest
	// end, if the clock is behind a recorded time), with a small margin.
	start, end := tl.Now, tl.Now
	for _, r := range rows {
		for _, s := range r.Spans {
			if s.Start.Before(start) {
				start = s.Start
			}
			if s.End != nil && s.End.After(end) {
				end = *s.End
			}
		}
	}
	if !end.After(start) {
		end = start.Add(time.Minute)
	}
	span := end.Sub(start)
	end = end.Add(span / 20)
	span = end.Sub(start)
	plotW := v.PlotEnd - tlLabelW
	x := func(t time.Time) float64 {
		return tlLabelW + plotW*float64(t.Sub(start))/float64(span)
	}
	v.NowX = x(tl.Now)
	owners := map[string]string{}
	ownerClass := func(o string) string {
		c, ok := owners[o]
		if !ok {
			c = fmt.Sprintf("o%d", len(owners)%tlOwnerCols)
			owners[o] = c
			v.Owners = append(v.Owners, tlOwner{Name: o, Class: c})
		}
		return c
	}
	for i, r := range rows {
		y := tlTop + i*tlRowH
		row := tlRow{Todo: r.Todo, Text: r.Text, Y: y, TextY: y + tlRowH/2 + 5, BarY: y + (tlRowH-tlBarH)/2}
		for j, s := range r.Spans {
			x0 := x(s.Start)
			e := tl.Now
			if s.End != nil {
				e = *s.End
			}
			x1 := x(e)
			w := max(x1-x0, 2)
			cls := ownerClass(s.Owner)
			switch {
			case s.Current && s.InForce:
				cls += " live"
			case s.Current:
				cls += " lapsed"
			}
			label := fmt.Sprintf("%s e%d", s.Owner, s.Epoch)
			b := tlBar{X: x0, W: w, Class: cls, Label: label, Title: spanTitle(r.Todo, s, tl.Now), LabelX: x0 + 4,
				ShowLabel: w > float64(len(label))*6.5+8, Span: s}
			row.Bars = append(row.Bars, b)
			if j > 0 {
				prev := r.Spans[j-1]
				switch prev.EndReason {
				case "transferred":
					row.Marks = append(row.Marks, tlMark{X: x0, Kind: "transfer",
						Title: fmt.Sprintf("%s: transferred from %s (epoch %d) to %s (epoch %d)", r.Todo, prev.Owner, prev.Epoch, s.Owner, s.Epoch)})
				case "expired":
					row.Marks = append(row.Marks, tlMark{X: x0, Kind: "takeover",
						Title: fmt.Sprintf("%s: %s took over (epoch %d) after %s's lease (epoch %d) lapsed", r.Todo, s.Owner, s.Epoch, prev.Owner, prev.Epoch)})
				}
			}
		}
		v.Rows = append(v.Rows, row)
	}
	v.Height = tlTop + len(rows)*tlRowH + 8
	v.Ticks = ticks(start, end, x)
	return v
}

// spanTitle describes one execution in words (the bar's tooltip and the
// table's row).
func spanTitle(todo string, s Span, now time.Time) string {
	t := fmt.Sprintf("%s epoch %d: %s from %s", todo, s.Epoch, s.Owner, s.Start.UTC().Format(time.RFC3339))
	switch {
	case s.End != nil:
		t += " to " + s.End.UTC().Format(time.RFC3339) + " (" + endWords(s.EndReason) + ")"
	case s.Current && s.InForce && s.ExpiresAt != nil:
		t += ", in force, expires " + s.ExpiresAt.UTC().Format(time.RFC3339)
	case s.Current && s.ExpiresAt != nil:
		t += ", no longer in force (expiry " + s.ExpiresAt.UTC().Format(time.RFC3339) + "), not taken over"
	}
	return t
}

// endWords says how an execution ended.
func endWords(reason string) string {
	switch reason {
	case "expired":
		return "lapsed, then taken over"
	case "":
		return "ended"
	}
	return reason
}

// tickSteps are the axis steps the timeline may use.
var tickSteps = []time.Duration{time.Second * 10, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour,
	3 * time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour}

// ticks places at most about 8 labelled ticks between start and end.
func ticks(start, end time.Time, x func(time.Time) float64) []tlTick {
	span := end.Sub(start)
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 8 {
			step = s
			break
		}
	}
	format := "15:04"
	switch {
	case step < time.Minute:
		format = "15:04:05"
	case step >= 24*time.Hour:
		format = "2006-01-02"
	case span > 24*time.Hour:
		format = "01-02 15:04"
	}
	var out []tlTick
	for t := start.UTC().Truncate(step).Add(step); t.Before(end); t = t.Add(step) {
		out = append(out, tlTick{X: x(t), Label: t.Format(format)})
	}
	return out
}
