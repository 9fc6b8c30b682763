package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/kube/internal/testenv"
	"github.com/gpusched/gpusched/kube/plugin"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"sigs.k8s.io/yaml"
)

// TestManifests validates kube/deploy against a real API server (server-side dry run) and
// the KubeSchedulerConfiguration with kube-scheduler's own loader; and, on the same API
// server, the recipes of kube/recipes (checkRecipes).
func TestManifests(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and a kube-apiserver")
	}
	cfg := testenv.APIServer(t)
	installCRD(t, cfg)
	validateManifests(t, cfg)
	t.Run("recipes", func(t *testing.T) { checkRecipes(t, cfg) })
}

// installCRD installs the PodGroup CRD that scheduler-plugins publishes in its module
// (config/crd/bases), the one users install with it.
func installCRD(t testing.TB, cfg *rest.Config) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins").Output()
	if err != nil {
		t.Fatalf("locate sigs.k8s.io/scheduler-plugins: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "scheduling.x-k8s.io_podgroups.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	cs := apiextensions.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the PodGroup CRD", func() bool {
		c, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
	// Discovery must see the new group before clients use it.
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	waitFor(t, 30*time.Second, "PodGroups in discovery", func() bool {
		_, err := dc.ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1")
		return err == nil
	})
}

// validateManifests sends every object of kube/deploy to the API server as a server-side dry
// run (the namespace is created for real), in the order kubectl apply sends them, and checks the KubeSchedulerConfiguration
// inside the config ConfigMap with kube-scheduler's own loader and validation, and the
// plugin's arguments with the plugin's decoder.
func validateManifests(t *testing.T, cfg *rest.Config) { createManifests(t, cfg, true) }

// manifestObjects reads kube/deploy: every object of every file, files by name, objects in
// file order (as kubectl apply -f kube/deploy/ sends them).
func manifestObjects(t testing.TB) []*unstructured.Unstructured {
	files, err := filepath.Glob(filepath.Join("..", "deploy", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in kube/deploy: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			objs = append(objs, u)
		}
	}
	return objs
}

// createManifests creates the objects of kube/deploy in kubectl's order: namespaces for
// real, the others as a server-side dry run (dryRun) or for real.
func createManifests(t testing.TB, cfg *rest.Config, dryRun bool) {
	objs := manifestObjects(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := context.Background()
	// In the order kubectl apply -f kube/deploy/ sends them (files by name, objects in file
	// order): namespaces for real, everything else as a dry run, which fails for an object
	// whose namespace does not exist yet.
	for _, u := range objs {
		pass := 1
		if u.GetKind() == "Namespace" {
			pass = 0
		}
		{
			gvk := u.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("%s %s: %v", gvk.Kind, u.GetName(), err)
				continue
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if u.GetNamespace() != "" {
				ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
			}
			opts := metav1.CreateOptions{FieldValidation: "Strict"}
			if pass == 1 && dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			if _, err := ri.Create(ctx, u, opts); err != nil {
				t.Errorf("%s %s/%s rejected by the API server: %v", gvk.Kind, u.GetNamespace(), u.GetName(), err)
				continue
			}
			t.Logf("%s %s/%s: accepted (%s)", gvk.Kind, u.GetNamespace(), u.GetName(), map[bool]string{true: "created", false: "server-side dry run"}[pass == 0 || !dryRun])
			if gvk.Kind == "ConfigMap" && dryRun {
				checkSchedulerConfig(t.(*testing.T), u)
			}
		}
	}
}

func checkSchedulerConfig(t *testing.T, u *unstructured.Unstructured) {
	text, _, _ := unstructured.NestedString(u.Object, "data", "config.yaml")
	if text == "" {
		t.Errorf("ConfigMap %s has no config.yaml", u.GetName())
		return
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Errorf("KubeSchedulerConfiguration: %v", err)
		return
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Errorf("KubeSchedulerConfiguration invalid: %v", err)
	}
	found := false
	for _, p := range cfg.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name != plugin.Name {
				continue
			}
			found = true
			a, err := plugin.DecodeArgs(pc.Args)
			if err != nil {
				t.Errorf("plugin args: %v", err)
				continue
			}
			if _, _, err := plugin.NewScheduler(a, &plugin.PodSizes{}); err != nil {
				t.Errorf("plugin args: %v", err)
			}
		}
	}
	if !found {
		t.Errorf("the KubeSchedulerConfiguration does not configure plugin %s", plugin.Name)
	}
}
