package harness

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd runs a single-member etcd inside the process. Free ports are
// found by listening and closing, so another process may take one in
// between; a failed start is retried on new ports.
func startEtcd(dir, logPath string) (*embed.Etcd, string, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		e, clientURL, err := startEtcdOnce(filepath.Join(dir, fmt.Sprintf("etcd-data-%d", attempt)), logPath)
		if err == nil {
			return e, clientURL, nil
		}
		lastErr = err
	}
	return nil, "", fmt.Errorf("start embedded etcd: %w", lastErr)
}

func startEtcdOnce(dataDir, logPath string) (*embed.Etcd, string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, "", err
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}

	cfg := embed.NewConfig()
	cfg.Name = "harness"
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// The data lives for one test run; fsync would only slow the suite.
	cfg.UnsafeNoFsync = true
	cfg.Logger = "zap"
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{logPath}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, clientURL.String(), nil
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd stopped while starting: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, "", errors.New("etcd not ready after a minute")
	}
}

// freePorts reserves n distinct loopback ports by holding them all open
// before closing, so the same port is not handed out twice.
func freePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
