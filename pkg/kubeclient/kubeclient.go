// Package kubeclient is how Joulie's programs reach the API server: the
// client configuration from the kubeconfig key, or without one the pod's
// service account, named by the program's user agent, with errors that
// say which key to fix. One place, so that the three programs read a
// kubeconfig the same way.
package kubeclient

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is the client configuration of the kubeconfig file at path, or,
// when path is empty, of the service account of the pod the program runs
// in. setBy names where path is set, for the errors ("--kubeconfig /
// KUBECONFIG"). userAgent names the program in the API server's logs and
// audit events. The rate limits are client-go's until the caller sets
// them.
func Config(path, setBy, userAgent string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if path != "" {
		if rc, err = clientcmd.BuildConfigFromFlags("", path); err != nil {
			return nil, fmt.Errorf("%s = %q: %w", setBy, path, err)
		}
	} else if rc, err = rest.InClusterConfig(); err != nil {
		return nil, fmt.Errorf("no %s given and not running in a cluster: %w", setBy, err)
	}
	rc.UserAgent = userAgent
	return rc, nil
}
