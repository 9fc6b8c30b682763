// Package testenv starts a real Kubernetes control plane inside a test: an etcd server
// (go.etcd.io/etcd/server/v3/embed, the version Kubernetes 1.33 uses) and a kube-apiserver
// (k8s.io/kubernetes/cmd/kube-apiserver/app/testing) on loopback ports, torn down when the
// test ends. Nothing is installed: both come from the module's dependencies.
package testenv

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// Quiet keeps the control plane's informational logs (klog) out of the test output, unless
// the environment variable GPUSCHED_KUBE_LOG is set: warnings and errors still go to stderr.
func Quiet() {
	if os.Getenv("GPUSCHED_KUBE_LOG") != "" {
		return
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "WARNING")
	klog.SetOutput(io.Discard)
}

// Etcd starts an etcd server in process with its data in a test directory and returns its
// client URL. It stops when the test ends.
func Etcd(t testing.TB) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "error"
	cfg.Logger = "zap"
	client, peer := freePort(t), freePort(t)
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", client))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peer))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("testenv: start etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		t.Fatalf("testenv: etcd not ready after 60 s")
	}
	t.Cleanup(e.Close)
	return cu.String()
}

// APIServer starts etcd and a kube-apiserver against it and returns a client config for it
// (with admin rights). The ServiceAccount admission plugin is off (no controller creates
// service accounts here); extra are more kube-apiserver flags ("--authorization-mode=RBAC").
// Both stop when the test ends.
func APIServer(t testing.TB, extra ...string) *rest.Config {
	t.Helper()
	etcdURL := Etcd(t)
	storage := storagebackend.NewDefaultConfig(path.Join("gpusched-test", "registry"), nil)
	storage.Transport.ServerList = []string{etcdURL}
	flags := append([]string{"--disable-admission-plugins=ServiceAccount"}, extra...)
	srv, err := kubeapiservertesting.StartTestServer(t, kubeapiservertesting.NewDefaultTestServerOptions(), flags, storage)
	if err != nil {
		t.Fatalf("testenv: start kube-apiserver: %v", err)
	}
	t.Cleanup(srv.TearDownFn)
	cfg := rest.CopyConfig(srv.ClientConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	// The loopback config speaks protobuf, which custom resources (PodGroups) refuse.
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	return cfg
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Kubeconfig writes a kubeconfig file for cfg in a test directory and returns its path.
func Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData,
		TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("testenv: kubeconfig: %v", err)
	}
	return path
}

// Scheduler runs a kube-scheduler in process (several may run, as replicas) (app.Setup and app.Run, as the kube-scheduler
// binary does) with the configuration file given and the out-of-tree plugins of opts, without
// its HTTPS endpoint. stop ends it and waits until it has stopped; it is also called when the
// test ends.
func Scheduler(t testing.TB, configFile string, opts ...app.Option) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o := options.NewOptions()
	fg := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	ev := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	ev.SetEmulationVersion(fg.EmulationVersion())
	reg := compatibility.NewComponentGlobalsRegistry()
	if err := reg.Register(compatibility.DefaultKubeComponent, ev, fg); err != nil {
		t.Fatalf("testenv: scheduler feature gates: %v", err)
	}
	o.ComponentGlobalsRegistry = reg
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range o.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config=" + configFile, "--secure-port=0"}); err != nil {
		t.Fatalf("testenv: scheduler flags: %v", err)
	}
	if err := o.ComponentGlobalsRegistry.Set(); err != nil {
		t.Fatalf("testenv: scheduler feature gates: %v", err)
	}
	cc, sched, err := app.Setup(ctx, o, opts...)
	if err != nil {
		cancel()
		t.Fatalf("testenv: scheduler setup: %v", err)
	}
	done := make(chan struct{})
	// app.Run registers its configuration for /configz, once per process: a second replica
	// in the same test process takes the name over.
	configz.Delete("componentconfig")
	go func() {
		defer close(done)
		if err := app.Run(ctx, cc, sched); err != nil && ctx.Err() == nil {
			t.Errorf("testenv: scheduler: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("testenv: scheduler did not stop in 30 s")
			}
			configz.Delete("componentconfig")
		})
	}
	t.Cleanup(stop)
	return stop
}
