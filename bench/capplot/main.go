// Command capplot draws the capacity curve of bench/capacity.sh: from its
// table (capacity.tsv), a PNG with the mutations per second against the
// number of agents (top) and each operation's p50 and p99 latency (bottom,
// a log scale), with the leases lost at each N under the axis. It uses the
// standard library only (image/png), with a small bitmap font of its own.
//
//	go run ./bench/capplot -in bench/capacity/capacity.tsv -out bench/capacity/capacity.png
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "capacity.tsv", "the table bench/capacity.sh wrote")
	out := flag.String("out", "capacity.png", "the PNG to write")
	flag.Parse()
	rows, title, err := readTable(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "capplot:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "capplot: no rows in", *in)
		os.Exit(1)
	}
	img := draw(rows, title)
	f, err := os.Create(*out)
	if err == nil {
		err = png.Encode(f, img)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capplot:", err)
		os.Exit(1)
	}
}

// row is one N's figures, by column name.
type row map[string]float64

// readTable reads the tab-separated table: "#" lines (the first one is the
// title), a header line, then one line per N ("-" is a missing value).
func readTable(name string) ([]row, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	var (
		header []string
		rows   []row
		title  string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			if title == "" {
				title = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			}
			continue
		case strings.TrimSpace(line) == "":
			continue
		case header == nil:
			header = strings.Split(line, "\t")
			continue
		}
		r := row{}
		for i, v := range strings.Split(line, "\t") {
			if i >= len(header) {
				break
			}
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				r[header[i]] = x
			} else if v != "-" {
				return nil, "", fmt.Errorf("%s: column %s: %q is not a number", name, header[i], v)
			}
		}
		if _, ok := r["agents"]; !ok {
			return nil, "", fmt.Errorf("%s: a row without agents", name)
		}
		rows = append(rows, r)
	}
	return rows, title, sc.Err()
}

const (
	width, height = 960, 720
	left, right   = 90, 200 // margins: axis labels, legend
)

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grey  = color.RGBA{220, 220, 220, 255}
	red   = color.RGBA{200, 30, 30, 255}
	green = color.RGBA{20, 130, 40, 255}
	// series colours: acquire, renew, release
	opColour = map[string]color.RGBA{
		"acquire": {31, 119, 180, 255},
		"renew":   {214, 39, 40, 255},
		"release": {44, 160, 44, 255},
	}
)

// panel is a plotting area with its scales.
type panel struct {
	x0, y0, x1, y1 int // pixels: left, top, right, bottom
	nMin, nMax     float64
	vMin, vMax     float64
	log            bool // log10 value axis
}

func (p panel) px(n float64) int {
	if p.nMax == p.nMin {
		return (p.x0 + p.x1) / 2
	}
	f := (math.Log2(n) - math.Log2(p.nMin)) / (math.Log2(p.nMax) - math.Log2(p.nMin))
	return p.x0 + 20 + int(f*float64(p.x1-p.x0-40))
}

func (p panel) py(v float64) int {
	var f float64
	if p.log {
		f = (math.Log10(v) - math.Log10(p.vMin)) / (math.Log10(p.vMax) - math.Log10(p.vMin))
	} else {
		f = (v - p.vMin) / (p.vMax - p.vMin)
	}
	return p.y1 - int(f*float64(p.y1-p.y0))
}

func draw(rows []row, title string) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), white)
	nMin, nMax := rows[0]["agents"], rows[0]["agents"]
	opsMax, latMin, latMax := 0.0, math.Inf(1), 0.0
	for _, r := range rows {
		nMin, nMax = math.Min(nMin, r["agents"]), math.Max(nMax, r["agents"])
		opsMax = math.Max(opsMax, r["ops_s"])
		for op := range opColour {
			for _, q := range []string{"_p50", "_p99"} {
				if v, ok := r[op+q]; ok && v > 0 {
					latMin, latMax = math.Min(latMin, v), math.Max(latMax, v)
				}
			}
		}
	}
	text(img, 20, 12, 2, black, "capacity of one git server: loopx run, one lease per agent")
	text(img, 20, 34, 1, black, title)

	// Top: mutations per second.
	top := panel{x0: left, y0: 70, x1: width - right, y1: 300, nMin: nMin, nMax: nMax, vMin: 0, vMax: niceCeil(opsMax * 1.15)}
	frame(img, top)
	for _, t := range linearTicks(top.vMax) {
		y := top.py(t)
		hline(img, top.x0+1, top.x1-1, y, grey)
		label := strconv.FormatFloat(t, 'f', -1, 64)
		text(img, top.x0-8-textWidth(label, 1), y-3, 1, black, label)
	}
	text(img, 14, top.y0-14, 1, black, "mutations/s")
	var prev image.Point
	for i, r := range rows {
		pt := image.Pt(top.px(r["agents"]), top.py(r["ops_s"]))
		if i > 0 {
			line(img, prev, pt, black, 2)
		}
		dot(img, pt, black)
		digits := 1
		if r["ops_s"] < 10 {
			digits = 2
		}
		text(img, pt.X+6, pt.Y-14, 1, black, strconv.FormatFloat(r["ops_s"], 'f', digits, 64))
		prev = pt
	}
	xAxis(img, top, rows, false)

	// Bottom: latency per operation, p50 (thin) and p99 (thick).
	if latMax == 0 {
		latMin, latMax = 1, 10
	}
	bot := panel{x0: left, y0: 350, x1: width - right, y1: 630, nMin: nMin, nMax: nMax,
		vMin: math.Pow(10, math.Floor(math.Log10(latMin))), vMax: math.Pow(10, math.Ceil(math.Log10(latMax*1.05))), log: true}
	frame(img, bot)
	for _, t := range logTicks(bot.vMin, bot.vMax) {
		y := bot.py(t)
		hline(img, bot.x0+1, bot.x1-1, y, grey)
		label := strconv.FormatFloat(t, 'f', -1, 64)
		text(img, bot.x0-8-textWidth(label, 1), y-3, 1, black, label)
	}
	text(img, 14, bot.y0-14, 1, black, "ms per operation (log scale)")
	ly := bot.y0 + 4
	for _, op := range []string{"acquire", "renew", "release"} {
		c := opColour[op]
		for _, q := range []struct {
			suffix string
			thick  int
		}{{"_p50", 1}, {"_p99", 3}} {
			var prev image.Point
			have := false
			for _, r := range rows {
				v, ok := r[op+q.suffix]
				if !ok || v <= 0 {
					have = false
					continue
				}
				pt := image.Pt(bot.px(r["agents"]), bot.py(v))
				if have {
					line(img, prev, pt, c, q.thick)
				}
				dot(img, pt, c)
				prev, have = pt, true
			}
			// legend
			line(img, image.Pt(bot.x1+14, ly+3), image.Pt(bot.x1+44, ly+3), c, q.thick)
			text(img, bot.x1+50, ly, 1, black, op+" "+strings.TrimPrefix(q.suffix, "_"))
			ly += 16
		}
	}
	xAxis(img, bot, rows, true)
	return img
}

// xAxis draws the agents' ticks under p; with lost, the leases lost at
// each N under them (red when any).
func xAxis(img *image.RGBA, p panel, rows []row, lost bool) {
	for _, r := range rows {
		x := p.px(r["agents"])
		vline(img, x, p.y1, p.y1+5, black)
		label := strconv.FormatFloat(r["agents"], 'f', -1, 64)
		text(img, x-textWidth(label, 1)/2, p.y1+9, 1, black, label)
		if lost {
			n := r["leases_lost"]
			c := green
			if n > 0 {
				c = red
			}
			l := strconv.FormatFloat(n, 'f', -1, 64)
			text(img, x-textWidth(l, 1)/2, p.y1+42, 1, c, l)
		}
	}
	text(img, (p.x0+p.x1)/2-textWidth("agents", 1)/2, p.y1+24, 1, black, "agents")
	if lost {
		text(img, 14, p.y1+42, 1, black, "leases lost")
	}
}

func frame(img *image.RGBA, p panel) {
	hline(img, p.x0, p.x1, p.y0, black)
	hline(img, p.x0, p.x1, p.y1, black)
	vline(img, p.x0, p.y0, p.y1, black)
	vline(img, p.x1, p.y0, p.y1, black)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// linearTicks are about five round ticks from 0 to max.
func linearTicks(max float64) []float64 {
	step := niceCeil(max / 5)
	var ts []float64
	for t := 0.0; t <= max+step/1000; t += step {
		ts = append(ts, math.Round(t*1000)/1000)
	}
	return ts
}

// logTicks are 1, 2 and 5 times each power of ten between lo and hi.
func logTicks(lo, hi float64) []float64 {
	var ts []float64
	for e := lo; e <= hi; e *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if t := m * e; t <= hi*1.0001 {
				ts = append(ts, t)
			}
		}
	}
	return ts
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		img.SetRGBA(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		img.SetRGBA(x, y, c)
	}
}

func dot(img *image.RGBA, p image.Point, c color.RGBA) {
	fill(img, image.Rect(p.X-3, p.Y-3, p.X+4, p.Y+4), c)
}

// line draws a segment of the given thickness (Bresenham, a square pen).
func line(img *image.RGBA, a, b image.Point, c color.RGBA, thick int) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := sign(b.X-a.X), sign(b.Y-a.Y)
	err := dx + dy
	x, y := a.X, a.Y
	for {
		fill(img, image.Rect(x-thick/2, y-thick/2, x-thick/2+thick, y-thick/2+thick), c)
		if x == b.X && y == b.Y {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x += sx
		}
		if e2 <= dx {
			err += dx
			y += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// text draws s at (x, y) (its top left) in the 5×7 font, scaled.
func text(img *image.RGBA, x, y, scale int, c color.RGBA, s string) {
	for _, r := range s {
		g, ok := glyphs[r]
		if !ok {
			g, ok = glyphs[r-'a'+'A']
			if r < 'a' || r > 'z' || !ok {
				g = glyphs['?']
			}
		}
		for row, bits := range g {
			for col, b := range bits {
				if b == '#' {
					fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
				}
			}
		}
		x += 6 * scale
	}
}

func textWidth(s string, scale int) int { return len([]rune(s)) * 6 * scale }

// glyphs is a 5×7 bitmap font: digits, capitals (lower case is drawn with
// them) and some punctuation.
var glyphs = map[rune][7]string{
	' ':  {".....", ".....", ".....", ".....", ".....", ".....", "....."},
	'0':  {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
	'1':  {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'2':  {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
	'3':  {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
	'4':  {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
	'5':  {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
	'6':  {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
	'7':  {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
	'8':  {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
	'9':  {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
	'A':  {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'B':  {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."},
	'C':  {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."},
	'D':  {"###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."},
	'E':  {"#####", "#....", "#....", "####.", "#....", "#....", "#####"},
	'F':  {"#####", "#....", "#....", "####.", "#....", "#....", "#...."},
	'G':  {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"},
	'H':  {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'I':  {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'J':  {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."},
	'K':  {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"},
	'L':  {"#....", "#....", "#....", "#....", "#....", "#....", "#####"},
	'M':  {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"},
	'N':  {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"},
	'O':  {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'P':  {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."},
	'Q':  {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"},
	'R':  {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"},
	'S':  {".####", "#....", "#....", ".###.", "....#", "....#", "####."},
	'T':  {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."},
	'U':  {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'V':  {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."},
	'W':  {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."},
	'X':  {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"},
	'Y':  {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."},
	'Z':  {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"},
	'.':  {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."},
	',':  {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."},
	':':  {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."},
	';':  {".....", ".##..", ".##..", ".....", ".##..", "..#..", ".#..."},
	'-':  {".....", ".....", ".....", "#####", ".....", ".....", "....."},
	'+':  {".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."},
	'=':  {".....", ".....", "#####", ".....", "#####", ".....", "....."},
	'/':  {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."},
	'%':  {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"},
	'(':  {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."},
	')':  {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."},
	'_':  {".....", ".....", ".....", ".....", ".....", ".....", "#####"},
	'?':  {".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."},
	'\'': {"..#..", "..#..", ".#...", ".....", ".....", ".....", "....."},
	'×':  {".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "....."},
}
