package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// The JSON form of a cluster:
//
//	{
//	  "name": "lab",
//	  "racks": [{"id": "r0", "oversubscription": 2}],
//	  "servers": [
//	    {"id": "a100", "count": 4, "preset": "a100", "rack": "r0"},
//	    {"id": "t4-0", "preset": "t4", "rack": "r0", "nic_bandwidth": 12.5e9}
//	  ]
//	}
//
// A server entry holds the fields of Server (bandwidths in bytes per second, latencies in
// seconds, memory in bytes, peak throughput in FLOP/s). "preset" fills the spec from a preset
// (see Preset) and the entry's other fields override it. "count" > 1 repeats the entry, naming
// the servers "<id>-0" ... "<id>-(count-1)". A file holds at most 2^20 servers in all.
// Unknown fields are errors, so a misspelt key is caught rather than ignored.
type clusterJSON struct {
	Name    string            `json:"name"`
	Racks   []Rack            `json:"racks,omitempty"`
	Servers []json.RawMessage `json:"servers"`
}

type serverHead struct {
	Preset string `json:"preset"`
	Count  *int   `json:"count"`
}

type serverJSON struct {
	Server
	Preset string `json:"preset,omitempty"`
	Count  *int   `json:"count,omitempty"`
}

// maxServerCount bounds "count", and the servers of the whole file, so that a small malformed
// file cannot ask for unbounded memory (2^20 servers take about 250 MB).
const maxServerCount = 1 << 20

// Load reads a cluster in its JSON form (see the package documentation) and validates it. Errors
// wrap ErrInvalidCluster and name the offending server entry.
func Load(r io.Reader) (*Cluster, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("topology: reading cluster JSON: %w", err)
	}
	return parse(data)
}

// parse is Load from a byte slice.
func parse(data []byte) (*Cluster, error) {
	var cj clusterJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCluster, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the cluster object", ErrInvalidCluster)
	}
	var servers []Server
	total := 0
	for i, raw := range cj.Servers {
		var head serverHead
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("%w: server entry %d: %v", ErrInvalidCluster, i, err)
		}
		var sj serverJSON
		if head.Preset != "" {
			spec, err := Preset(head.Preset)
			if err != nil {
				return nil, fmt.Errorf("server entry %d: %w", i, err)
			}
			sj.ServerSpec = spec
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&sj); err != nil {
			return nil, fmt.Errorf("%w: server entry %d: %v", ErrInvalidCluster, i, err)
		}
		n := 1
		if sj.Count != nil {
			n = *sj.Count
			if n < 1 || n > maxServerCount {
				return nil, fmt.Errorf("%w: server entry %d (%q): count %d must be in 1..%d",
					ErrInvalidCluster, i, sj.ID, n, maxServerCount)
			}
		}
		if total += n; total > maxServerCount {
			return nil, fmt.Errorf("%w: server entry %d (%q): more than %d servers in all",
				ErrInvalidCluster, i, sj.ID, maxServerCount)
		}
		if n == 1 && sj.Count == nil {
			servers = append(servers, sj.Server)
			continue
		}
		for k := 0; k < n; k++ {
			s := sj.Server
			s.ID = fmt.Sprintf("%s-%d", sj.ID, k)
			servers = append(servers, s)
		}
	}
	return New(cj.Name, servers, cj.Racks)
}

// Save writes the cluster in its JSON form, one entry per server with its full spec, indented.
// Load(Save(c)) gives a cluster equal to c.
func (c *Cluster) Save(w io.Writer) error {
	out := struct {
		Name    string   `json:"name"`
		Racks   []Rack   `json:"racks,omitempty"`
		Servers []Server `json:"servers"`
	}{c.name, c.racks, c.servers}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("topology: writing cluster %q: %w", c.name, err)
	}
	return nil
}

// MarshalJSON returns the cluster's JSON form (see Save).
func (c *Cluster) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := c.Save(&b); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// UnmarshalJSON parses the cluster's JSON form (see Load) into c.
func (c *Cluster) UnmarshalJSON(data []byte) error {
	n, err := parse(data)
	if err != nil {
		return err
	}
	*c = *n
	return nil
}

// Equal reports whether two clusters have the same name, servers (in order) and racks.
func (c *Cluster) Equal(d *Cluster) bool {
	if c == nil || d == nil {
		return c == d
	}
	if c.name != d.name || len(c.servers) != len(d.servers) || len(c.racks) != len(d.racks) {
		return false
	}
	for i := range c.servers {
		if c.servers[i] != d.servers[i] {
			return false
		}
	}
	for i := range c.racks {
		if c.racks[i] != d.racks[i] {
			return false
		}
	}
	return true
}
