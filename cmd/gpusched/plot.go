package main

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gpusched/gpusched/sim"
)

// Plot geometry and resolution.
const (
	plotWidth  = 9 * vg.Inch
	plotHeight = 5 * vg.Inch
	cdfPoints  = 1000 // points per CDF curve
	timeBins   = 600  // bins of the over-time plots
)

// savePlot writes p as dir/name.png and dir/name.svg.
func savePlot(p *plot.Plot, dir, name string) error {
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(plotWidth, plotHeight, filepath.Join(dir, name+ext)); err != nil {
			return fmt.Errorf("plot %s%s: %w", name, ext, err)
		}
	}
	return nil
}

// palette holds the series colours: 20 colours far apart (after Kelly's colours of maximum
// contrast, white and the palest left out, the most legible first), so that the 16 policies of a
// comparison get 16 distinct colours.
var palette = []color.RGBA{
	{0xbe, 0x00, 0x32, 0xff}, // red
	{0x00, 0x67, 0xa5, 0xff}, // blue
	{0x00, 0x88, 0x56, 0xff}, // green
	{0xf3, 0x84, 0x00, 0xff}, // orange
	{0x87, 0x56, 0x92, 0xff}, // purple
	{0x22, 0x22, 0x22, 0xff}, // black
	{0xa1, 0xca, 0xf1, 0xff}, // light blue
	{0x88, 0x2d, 0x17, 0xff}, // reddish brown
	{0x8d, 0xb6, 0x00, 0xff}, // yellow green
	{0xe6, 0x8f, 0xac, 0xff}, // purplish pink
	{0x84, 0x84, 0x82, 0xff}, // grey
	{0x60, 0x4e, 0x97, 0xff}, // violet
	{0xf6, 0xa6, 0x00, 0xff}, // orange yellow
	{0xb3, 0x44, 0x6c, 0xff}, // purplish red
	{0x2b, 0x3d, 0x26, 0xff}, // olive green
	{0xe2, 0x58, 0x22, 0xff}, // reddish orange
	{0xc2, 0xb2, 0x80, 0xff}, // buff
	{0x65, 0x45, 0x22, 0xff}, // yellowish brown
	{0xf9, 0x93, 0x79, 0xff}, // yellowish pink
	{0xdc, 0xd3, 0x00, 0xff}, // greenish yellow
}

// seriesColor returns the colour of series i: palette's, wrapping.
func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// styleLine gives series i its colour, and a dash pattern once the colours wrap.
func styleLine(l *plotter.Line, i int) {
	l.Color = seriesColor(i)
	l.Width = vg.Points(1.5)
	if n := len(palette); i >= n {
		l.Dashes = plotutil.Dashes(1 + (i/n-1)%(len(plotutil.DefaultDashes)-1))
	}
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return p
}

// plotCompare draws the JCT CDF of every policy in one plot, and queue length and GPU
// utilisation over time as one panel per policy (shared axes), so that curves that would
// overlap stay readable.
func plotCompare(dir string, outs []outcome) error {
	cdf, queues, utils, err := comparePlots(outs)
	if err != nil {
		return err
	}
	if err := savePlot(cdf, dir, "jct_cdf"); err != nil {
		return err
	}
	if err := saveGrid(queues, "Jobs waiting over time (mean per bin)", dir, "queue"); err != nil {
		return err
	}
	return saveGrid(utils, "GPU utilisation over time: busy GPUs / GPUs (mean per bin)", dir, "utilisation")
}

// comparePlots builds plotCompare's plots: the CDF, and the queue and utilisation panels, one
// per policy, each with its axes labelled.
func comparePlots(outs []outcome) (cdf *plot.Plot, queues, utils []*plot.Plot, err error) {
	cdf = newPlot("Job completion time CDF", "job completion time (s, log scale)", "fraction of jobs")
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = plot.LogTicks{Prec: -1}
	cdf.Y.Min, cdf.Y.Max = 0, 1
	cdf.Legend.Top, cdf.Legend.Left = true, true
	cdf.Legend.XOffs = vg.Points(8)
	maxQ, maxT := 1.0, 0.0
	for i, oc := range outs {
		name := oc.policy.Name
		l, err := plotter.NewLine(oc.series.cdf)
		if err != nil {
			return nil, nil, nil, err
		}
		styleLine(l, i)
		cdf.Add(l)
		cdf.Legend.Add(name, l)

		q, u := oc.series.queue, oc.series.util
		for _, p := range q {
			maxQ = max(maxQ, p.Y)
			maxT = max(maxT, p.X)
		}
		for _, x := range []struct {
			xy    plotter.XYs
			label string
			list  *[]*plot.Plot
		}{{q, "jobs waiting", &queues}, {u, "busy GPUs / GPUs", &utils}} {
			p := newPlot(name, "time (hours)", x.label)
			ln, err := plotter.NewLine(x.xy)
			if err != nil {
				return nil, nil, nil, err
			}
			styleLine(ln, i)
			p.Add(ln)
			*x.list = append(*x.list, p)
		}
	}
	for _, p := range queues {
		p.Y.Min, p.Y.Max = 0, maxQ*1.05
		p.X.Min, p.X.Max = 0, maxT
	}
	for _, p := range utils {
		p.Y.Min, p.Y.Max = 0, 1.05
		p.X.Min, p.X.Max = 0, maxT
	}
	return cdf, queues, utils, nil
}

// gridShape returns the rows and columns of a figure of n panels: no more columns than
// panels, three a row, or four when that leaves fewer blank tiles in the last row (16
// policies: 4 x 4).
func gridShape(n int) (rows, cols int) {
	n = max(n, 1)
	cols = min(3, n)
	if blank := func(c int) int { return (c - n%c) % c }; n > 4 && blank(4) < blank(3) {
		cols = 4
	}
	return (n + cols - 1) / cols, cols
}

// saveGrid writes the plots as panels of one figure, three per row, under a title, as
// dir/name.png and dir/name.svg.
func saveGrid(plots []*plot.Plot, title, dir, name string) error {
	rows, cols := gridShape(len(plots))
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range plots {
		grid[i/cols][i%cols] = p
	}
	w, h := max(vg.Length(cols)*4*vg.Inch, 7*vg.Inch), vg.Length(rows)*2.6*vg.Inch+0.5*vg.Inch
	draw := func(c vg.CanvasSizer) {
		dc := vgdraw.New(c)
		head := vgdraw.Crop(dc, 0, 0, dc.Max.Y-dc.Min.Y-0.45*vg.Inch, 0)
		sty := vgdraw.TextStyle{Color: color.Black, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler}
		sty.Font.Size = vg.Points(14)
		sty.XAlign = vgdraw.XCenter
		head.FillText(sty, vg.Point{X: (head.Min.X + head.Max.X) / 2, Y: head.Min.Y + 0.1*vg.Inch}, title)
		body := vgdraw.Crop(dc, 0, 0, 0, -0.5*vg.Inch)
		tiles := vgdraw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12),
			PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		canvases := plot.Align(grid, tiles, body)
		for r := range grid {
			for k, p := range grid[r] {
				if p != nil {
					p.Draw(canvases[r][k])
				}
			}
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
	draw(img)
	if err := writeFile(filepath.Join(dir, name+".png"), func(f io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		return err
	}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	draw(svg)
	return writeFile(filepath.Join(dir, name+".svg"), func(f io.Writer) error {
		_, err := svg.WriteTo(f)
		return err
	})
}

// jctCDF returns at most n points of the empirical CDF of the job completion times.
func jctCDF(r *sim.Result, n int) plotter.XYs {
	jct := make([]float64, len(r.Jobs))
	for i, j := range r.Jobs {
		jct[i] = max(j.JCT, 1e-3) // the log axis needs positive values
	}
	slices.Sort(jct)
	k := len(jct)
	step := max(1, k/n)
	var xy plotter.XYs
	for i := 0; i < k; i += step {
		xy = append(xy, plotter.XY{X: jct[i], Y: float64(i+1) / float64(k)})
	}
	if last := xy[len(xy)-1]; last.Y != 1 {
		xy = append(xy, plotter.XY{X: jct[k-1], Y: 1})
	}
	return xy
}

// timeSeries returns the time-weighted mean queue length and utilisation over n equal bins
// of the run (time in hours from the first sample).
//
// Each interval between two samples is spread over the bins it overlaps, walking the bins
// by index, so that the loop ends however small the bins are against the times' float64
// spacing (at t = 1e15 s, bins of a millisecond are below it).
func timeSeries(r *sim.Result, n int) (queue, util plotter.XYs) {
	tl := r.Timeline
	if len(tl) < 2 {
		return plotter.XYs{{X: 0, Y: 0}}, plotter.XYs{{X: 0, Y: 0}}
	}
	t0, t1 := tl[0].Time, tl[len(tl)-1].Time
	width := (t1 - t0) / float64(n)
	if !(width > 0) {
		return plotter.XYs{{X: 0, Y: float64(tl[0].Queued)}}, plotter.XYs{{X: 0, Y: float64(tl[0].BusyGPUs) / float64(r.GPUs)}}
	}
	qs := make([]float64, n)
	us := make([]float64, n)
	bin := func(x float64) int { return min(n-1, max(0, int(x/width))) }
	for i := 0; i+1 < len(tl); i++ {
		a, b := tl[i].Time-t0, tl[i+1].Time-t0 // seconds from the start
		if !(b > a) {
			continue
		}
		q, u := float64(tl[i].Queued), float64(tl[i].BusyGPUs)/float64(r.GPUs)
		for k, last := bin(a), bin(b); k <= last; k++ {
			lo, hi := max(a, float64(k)*width), b
			if k < last {
				hi = min(b, float64(k+1)*width)
			}
			if dt := hi - lo; dt > 0 {
				qs[k] += dt * q
				us[k] += dt * u
			}
		}
	}
	for k := range n {
		x := (float64(k) + 0.5) * width / 3600
		queue = append(queue, plotter.XY{X: x, Y: qs[k] / width})
		util = append(util, plotter.XY{X: x, Y: us[k] / width})
	}
	return queue, util
}

// plotSweep draws the mean JCT (averaged over seeds) against load, per policy.
func plotSweep(dir string, outs []outcome) error {
	p := newPlot("Mean job completion time against load", "load", "mean JCT (hours)")
	p.Legend.Top, p.Legend.Left = true, true
	type key struct {
		policy string
		load   float64
	}
	sum := map[key]float64{}
	cnt := map[key]int{}
	var order []string
	for _, oc := range outs {
		k := key{oc.policy.Name, oc.load}
		sum[k] += oc.sum.AvgJCT
		cnt[k]++
		if !slices.Contains(order, oc.policy.Name) {
			order = append(order, oc.policy.Name)
		}
	}
	for i, name := range order {
		var xy plotter.XYs
		for k, s := range sum {
			if k.policy == name {
				xy = append(xy, plotter.XY{X: k.load, Y: s / float64(cnt[k]) / 3600})
			}
		}
		slices.SortFunc(xy, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		styleLine(l, i)
		pts.Color = l.Color
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	if math.IsInf(p.Y.Max, 0) {
		p.Y.Max = 1
	}
	return savePlot(p, dir, "sweep_jct")
}
