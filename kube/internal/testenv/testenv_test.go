package testenv

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	cfg := APIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.Items) == 0 {
		t.Fatal("no namespaces")
	}
}
