// kube-controller-manager, adapted from k8s.io/kubernetes cmd/kube-controller-manager/controller-manager.go.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
