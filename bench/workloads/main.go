// Command workloads writes the workloads of the A-SRPT regression benchmark
// (bench/asrpt_families.sh) that gpusched cannot generate itself, as JSON lines that
// `gpusched compare -trace FILE` replays (models and plans included):
//
//	workloads philly -in philly.csv -vcs b436b2,103959 -cluster a100:24 -o out.jsonl
//	    the rows of the named virtual clusters (the file's cluster column), mapped to zoo
//	    models and plans on the cluster as gpusched maps a Philly file
//	workloads pollux -in philly.csv -jobs 160 -seed 1 -cluster t4:16 -o out.jsonl
//	    a Pollux-style workload drawn from the Philly file (trace.GeneratePolluxWorkload)
package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "workloads:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "philly" && args[0] != "pollux") {
		return errors.New("usage: workloads philly|pollux -in FILE -cluster PRESET:SERVERS -o FILE [...]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	in := fs.String("in", "", "the Philly job file")
	out := fs.String("o", "", "output JSON lines file")
	cl := fs.String("cluster", "a100:8", "cluster the jobs are mapped onto: preset:servers")
	vcs := fs.String("vcs", "", "philly: comma-separated virtual clusters to keep")
	jobs := fs.Int("jobs", 160, "pollux: number of jobs")
	seed := fs.Uint64("seed", 1, "seed of the mapping (philly) or of the workload (pollux)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return errors.New("-in and -o are required")
	}
	c, err := cluster(*cl)
	if err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	var tr *trace.Trace
	switch args[0] {
	case "philly":
		if *vcs == "" {
			return errors.New("philly: -vcs is required")
		}
		sub, err := keepClusters(f, strings.Split(*vcs, ","))
		if err != nil {
			return err
		}
		tr, err = trace.ReadPhilly(bytes.NewReader(sub), "philly-"+strings.ReplaceAll(*vcs, ",", "-"), trace.ReadOptions{Seed: *seed, Cluster: c})
		if err != nil {
			return err
		}
	case "pollux":
		tr, err = trace.GeneratePolluxWorkload(f, "philly.csv", trace.PolluxWorkloadConfig{Jobs: *jobs, Seed: *seed}, trace.ReadOptions{Cluster: c})
		if err != nil {
			return err
		}
	}
	w, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := trace.WriteJSONL(w, tr.Records); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// cluster builds a uniform cluster from "preset:servers".
func cluster(s string) (*topology.Cluster, error) {
	preset, n, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("-cluster %q: want preset:servers", s)
	}
	spec, err := topology.Preset(preset)
	if err != nil {
		return nil, err
	}
	k, err := strconv.Atoi(n)
	if err != nil {
		return nil, fmt.Errorf("-cluster %q: %w", s, err)
	}
	return topology.Uniform(spec, k)
}

// keepClusters returns the Philly CSV with only the rows of the given virtual clusters.
func keepClusters(r io.Reader, keep []string) ([]byte, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, err
	}
	col := slices.Index(head, "cluster")
	if col < 0 {
		return nil, errors.New("philly: the file has no cluster column")
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(head); err != nil {
		return nil, err
	}
	n := 0
	for {
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if slices.Contains(keep, row[col]) {
			if err := w.Write(row); err != nil {
				return nil, err
			}
			n++
		}
	}
	w.Flush()
	if n == 0 {
		return nil, fmt.Errorf("philly: no row of virtual clusters %v", keep)
	}
	return buf.Bytes(), w.Error()
}
