package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/trace"
)

// burstGap is the longest gap, in seconds, between two submissions of one group that
// missesReport counts in one burst.
const burstGap = 600

// bursts numbers the jobs' bursts: a job joins the burst of its group's previous submission
// when it came at most burstGap seconds after it.
func bursts(recs []trace.Record) []int {
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(recs[a].Job.Arrival, recs[b].Job.Arrival) })
	type last struct {
		t     float64
		burst int
	}
	prev := map[string]last{}
	id := make([]int, len(recs))
	n := 0
	for _, i := range order {
		g, t := recs[i].Job.Features.Group, recs[i].Job.Arrival
		if l, ok := prev[g]; ok && t-l.t <= burstGap {
			id[i] = l.burst
		} else {
			id[i] = n
			n++
		}
		prev[g] = last{t, id[i]}
	}
	return id
}

// missesReport prints, for each method and each cluster of clusters, where its 80% intervals
// missed over the test jobs idx[cluster] (seeds pooled): coverage and the shares below and
// above the interval in each quarter of the test period (by submit order), and how the misses
// fall into bursts (a group's submissions at most burstGap apart): the bursts with test jobs,
// those with a miss, and the share of the misses in the five bursts with the most.
func missesReport(recs []trace.Record, actual []float64, clusters []string, idx map[string][]int, names []string, runs [][]result) {
	burst := bursts(recs)
	lo, hi := level(0.1), level(0.9)
	fmt.Printf("\n80%% misses by quarter of the test period (coverage / below / above, seeds pooled) and by burst (a group's submissions at most %d s apart)\n\n", burstGap)
	fmt.Println("| cluster | method | 1st quarter | 2nd | 3rd | 4th | bursts | with a miss | misses in the 5 worst bursts |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range clusters {
		jobs := idx[c]
		if len(jobs) < 100 {
			continue
		}
		for m, name := range names {
			line := fmt.Sprintf("| %s | %s |", c, name)
			for q := range 4 {
				part := jobs[q*len(jobs)/4 : (q+1)*len(jobs)/4]
				in, below, above, n := 0, 0, 0, 0
				for _, r := range runs[m] {
					for _, i := range part {
						switch v := r.Quant[i]; {
						case actual[i] < v[lo]:
							below++
						case actual[i] > v[hi]:
							above++
						default:
							in++
						}
						n++
					}
				}
				f := func(k int) float64 { return 100 * float64(k) / math.Max(float64(n), 1) }
				line += fmt.Sprintf(" %.0f / %.0f / %.0f |", f(in), f(below), f(above))
			}
			missBy := map[int]int{}
			all := map[int]bool{}
			total := 0
			for _, r := range runs[m] {
				for _, i := range jobs {
					all[burst[i]] = true
					if v := r.Quant[i]; actual[i] < v[lo] || actual[i] > v[hi] {
						missBy[burst[i]]++
						total++
					}
				}
			}
			counts := make([]int, 0, len(missBy))
			for _, k := range missBy {
				counts = append(counts, k)
			}
			slices.Sort(counts)
			slices.Reverse(counts)
			top := 0
			for _, k := range counts[:min(5, len(counts))] {
				top += k
			}
			fmt.Printf("%s %d | %d | %.0f%% |\n", line, len(all), len(missBy), 100*float64(top)/math.Max(float64(total), 1))
		}
	}
}
