// Command joulie-testcluster runs the harness's control plane as a process
// for tests that are not Go tests: hack/test-ansible.sh points the Ansible
// role at it to obtain a node identity through the CSR API, and the agent
// it installs in a container syncs with it.
//
// It starts etcd and kube-apiserver on loopback ports, installs the Helm
// chart (CRDs, RBAC, the admission policy), runs kube-controller-manager's
// kube-apiserver-client CSR signer, and writes into -dir:
//
//	admin.kubeconfig  an identity in system:masters
//	ca.crt            the CA of the API server's serving certificate
//	server            the API server's URL
//	ready             written last, once all of the above is in place
//
// The logs of etcd and the API server and the audit log of every write
// are in -dir too. It runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"joulie.io/joulie/test/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "joulie-testcluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "directory for the control plane's files (required)")
	chart := flag.String("chart", "../packaging/helm/joulie", "the Helm chart to install")
	helm := flag.String("helm", "", "the pinned helm (default: $JOULIE_HELM, else what make print-helm says)")
	certTTL := flag.Duration("max-cert-ttl", 365*24*time.Hour, "longest certificate the CSR signer issues (kube-controller-manager's default)")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		flag.Usage()
		return errors.New("-dir is required and there are no arguments")
	}
	if *helm == "" {
		var err error
		if *helm, err = harness.PinnedHelm(filepath.Join(*chart, "../../..")); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	cp, err := harness.Start(harness.Options{Dir: *dir})
	if err != nil {
		return err
	}
	defer cp.Stop()
	setupCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := cp.InstallChart(setupCtx, *helm, *chart, harness.ChartRelease); err != nil {
		return err
	}
	if err := cp.StartCSRSigner(ctx, *certTTL); err != nil {
		return err
	}
	if err := harness.WriteKubeconfigFile(filepath.Join(*dir, "admin.kubeconfig"), cp.AdminConfig()); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "ca.crt"), cp.ServerCA(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "server"), []byte(cp.Host()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "ready"), nil, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "joulie-testcluster: %s up in %s, files in %s\n", cp.Host(), time.Since(start).Round(time.Millisecond), *dir)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "joulie-testcluster: stopping")
	return nil
}
