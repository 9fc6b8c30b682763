package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// The queues example that kube/deploy/20-config.yaml carries commented out, once uncommented,
// is read by the plugin and puts the scheduler behind the queues; a queues config that is
// wrong is refused when the scheduler is built, naming the problem.
func TestQueuesArgs(t *testing.T) {
	data, err := os.ReadFile("../deploy/20-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The ConfigMap's config.yaml, with the commented queues block uncommented.
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	block := regexp.MustCompile(`^(\s*)# (queues:|  .*)`)
	for _, l := range strings.Split(cm.Data["config.yaml"], "\n") {
		m := block.FindStringSubmatch(l)
		switch {
		case m != nil && strings.HasPrefix(m[2], "queues:"):
			in = true
			l = m[1] + m[2]
		case in && m != nil:
			l = m[1] + m[2]
		default:
			in = false
		}
		lines = append(lines, l)
	}
	var conf struct {
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &conf); err != nil {
		t.Fatalf("the config with its queues example uncommented: %v", err)
	}
	var raw map[string]any
	for _, p := range conf.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name == Name {
				raw = pc.Args
			}
		}
	}
	if raw["queues"] == nil {
		t.Fatal("kube/deploy/20-config.yaml has no commented queues example in the plugin's args")
	}
	build := func(raw map[string]any) (string, error) {
		js, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeArgs(&runtime.Unknown{Raw: js, ContentType: runtime.ContentTypeJSON})
		if err != nil {
			return "", err
		}
		if a.Queues == nil || len(a.Queues.Queues) != 2 {
			t.Fatalf("queues decoded as %+v", a.Queues)
		}
		s, _, err := NewScheduler(a, &PodSizes{})
		if err != nil {
			return "", err
		}
		return strings.Split(strings.TrimPrefix(fmt.Sprintf("%T", s), "*"), ".")[0], nil // the package of its type
	}
	pkg, err := build(raw)
	if err != nil {
		t.Fatalf("the shipped queues example is refused: %v", err)
	}
	if pkg != "queues" {
		t.Fatalf("with queues the scheduler is a %s, not behind the queues", pkg)
	}
	// Two queues of one name: refused.
	qs := raw["queues"].(map[string]any)["queues"].([]any)
	qs[1].(map[string]any)["name"] = qs[0].(map[string]any)["name"]
	if _, err := build(raw); err == nil || !strings.Contains(err.Error(), qs[0].(map[string]any)["name"].(string)) {
		t.Fatalf("two queues of one name: %v", err)
	}
}
