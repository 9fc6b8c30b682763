// Command gpusched-scheduler is kube-scheduler with the gpusched plugin: it runs any gpusched
// scheduler (A-SRPT by default) on a Kubernetes cluster. Give it a KubeSchedulerConfiguration
// whose profile (schedulerName gpusched) enables the plugin Gpusched at PreEnqueue,
// PreFilter, Filter, Score, Reserve and Permit; kube/deploy has the manifests and the README
// section "Run on Kubernetes" the steps.
//
//	gpusched-scheduler --config=/etc/gpusched/config.yaml
package main

import (
	"os"
	"time"

	"github.com/gpusched/gpusched/kube/plugin"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.Factory(nil)))
	code := cli.Run(cmd)
	plugin.Wait(10 * time.Second) // the planner's last state written
	os.Exit(code)
}
