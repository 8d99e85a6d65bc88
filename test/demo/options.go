package demo

import (
	"errors"
	"fmt"
	"time"
)

// ErrUsage marks a bad command line or option: joulie-demo exits with 2.
var ErrUsage = errors.New("bad usage")

// Options are what a demo runs: joulie-demo's flags (test/README.md,
// "make demo", says what each does).
type Options struct {
	Duration    time.Duration
	Nodes       int
	DaemonNodes int
	Seed        int64
	MaxPods     int
	Out         string
	Compare     bool
	Kubeconfig  string
	BinDir      string
	Helm        string
	Chart       string
	Refresh     time.Duration
	Step        time.Duration
	Plain       bool
	Parking     bool
	BootTime    time.Duration
	BMCNodes    int
}

// Validate says, naming the flag, what in o no demo can run with.
func (o *Options) Validate() error {
	switch {
	case o.BootTime < time.Second:
		return fmt.Errorf("%w: --boot-time=%s: at least 1s", ErrUsage, o.BootTime)
	case o.Duration < 20*time.Second:
		return fmt.Errorf("%w: --duration=%s: at least 20s, so the controller can act", ErrUsage, o.Duration)
	case o.Nodes < 3:
		return fmt.Errorf("%w: --nodes=%d: at least 3, one per hardware family", ErrUsage, o.Nodes)
	case o.DaemonNodes < 0 || o.DaemonNodes > o.Nodes:
		return fmt.Errorf("%w: --daemon-nodes=%d: between 0 and --nodes (%d)", ErrUsage, o.DaemonNodes, o.Nodes)
	case o.Refresh <= 0 || o.Step <= 0:
		return fmt.Errorf("%w: --refresh=%s, --step=%s: both must be positive", ErrUsage, o.Refresh, o.Step)
	case o.MaxPods <= 0:
		return fmt.Errorf("%w: --max-pods=%d: must be positive", ErrUsage, o.MaxPods)
	case o.Compare && o.Kubeconfig != "":
		return fmt.Errorf("%w: --compare needs the embedded cluster: it turns Joulie off, which the demo cannot do on a cluster it does not run", ErrUsage)
	}
	return nil
}
