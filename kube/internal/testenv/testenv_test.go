package testenv

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The API server answers, and so does a client built from the kubeconfig file that the
// in-process scheduler reads (its TLS server name and CA included).
func TestAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	Quiet()
	cfg := APIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.Items) == 0 {
		t.Fatal("no namespaces")
	}
	kc, err := clientcmd.BuildConfigFromFlags("", Kubeconfig(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(kc).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("client from the kubeconfig file: %v", err)
	}
}
