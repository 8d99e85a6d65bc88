package daemon

import (
	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/podmeter"
)

// newKubelet is the pod-resources client of the configuration; nil while
// the client does not exist.
func newKubelet(config.Config) podmeter.Kubelet { return nil }
