// Package systemd is joulie-agentd's side of the service manager: readiness
// and status lines through sd_notify, watchdog pings when WatchdogSec is
// set, and the local API's socket when systemd passes one (socket
// activation). Without systemd (NOTIFY_SOCKET unset) every call is a no-op,
// so the daemon runs the same under a shell or a container.
package systemd

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends state changes to systemd.
type Notifier struct {
	// send is daemon.SdNotify without unsetting the environment, so the
	// watchdog and later calls keep NOTIFY_SOCKET.
	send func(state string) (bool, error)
}

// NewNotifier returns a notifier for the NOTIFY_SOCKET of the environment.
func NewNotifier() *Notifier {
	return &Notifier{send: func(state string) (bool, error) { return daemon.SdNotify(false, state) }}
}

// Ready says the service is up: discovery and the first reconcile are
// done (Type=notify units wait for it).
func (n *Notifier) Ready(status string) error {
	return n.notify(daemon.SdNotifyReady + "\nSTATUS=" + status)
}

// Status sets the line `systemctl status` shows.
func (n *Notifier) Status(status string) error { return n.notify("STATUS=" + status) }

// Reloading says a SIGHUP reload is under way; Ready ends it.
func (n *Notifier) Reloading() error {
	return n.notify(daemon.SdNotifyReloading + fmt.Sprintf("\nMONOTONIC_USEC=%d", monotonicUsec()))
}

// Stopping says the service is shutting down (restoring originals).
func (n *Notifier) Stopping(status string) error {
	return n.notify(daemon.SdNotifyStopping + "\nSTATUS=" + status)
}

func (n *Notifier) notify(state string) error {
	if _, err := n.send(state); err != nil {
		return fmt.Errorf("sd_notify %q: %w", state, err)
	}
	return nil
}

// Watchdog pings systemd at half the configured WatchdogSec while healthy
// reports true, until ctx ends. It returns at once when no watchdog is set.
// healthy lets the daemon stop pinging when its loop is stuck, so systemd
// restarts it.
func (n *Notifier) Watchdog(ctx context.Context, healthy func() bool) error {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return fmt.Errorf("read watchdog settings: %w", err)
	}
	if interval == 0 {
		return nil
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if healthy == nil || healthy() {
				_ = n.notify(daemon.SdNotifyWatchdog)
			}
		}
	}
}

// ActivatedListener returns the Unix listener systemd passed (the
// joulie-agentd.socket unit), or nil when the daemon was not socket
// activated and must listen itself.
func ActivatedListener() (net.Listener, error) {
	ls, err := activation.Listeners()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	for _, l := range ls {
		if l != nil {
			return l, nil
		}
	}
	return nil, nil
}
