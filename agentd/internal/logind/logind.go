// Package logind asks systemd-logind, over the D-Bus system bus, to power
// the host off: the last step of a park, once the agent has restored
// every cap and told the cluster (SPEC.md, "Power states, parking and
// per-pod energy").
//
// The call is logind's org.freedesktop.login1.Manager.PowerOff with
// interactive=false, as go-systemd's login1.Conn.PowerOff makes it. That
// method drops logind's reply (coreos/go-systemd#326), so a refusal by
// polkit or a missing logind would go unseen; the agent makes the same
// call through godbus, the D-Bus library go-systemd itself uses, and
// keeps the error, which the agent reports on the node's status.
package logind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/godbus/dbus/v5"
)

// logind's well-known name, object and method.
const (
	Name          = "org.freedesktop.login1"
	Path          = dbus.ObjectPath("/org/freedesktop/login1")
	Interface     = "org.freedesktop.login1.Manager"
	powerOffCall  = Interface + ".PowerOff"
	systemBusPath = "/run/dbus/system_bus_socket"
)

// Client reaches logind on a bus.
type Client struct {
	// Address is the bus's D-Bus address (unix:path=...). Empty is the
	// system bus: $DBUS_SYSTEM_BUS_ADDRESS, else the standard socket.
	Address string
	// Timeout bounds connecting and the call (30s when zero): logind
	// answers PowerOff once the shutdown job is queued, in milliseconds.
	Timeout time.Duration
}

// PowerOff asks logind to power the host off now, without asking anyone
// for a password (interactive=false). It returns once logind has accepted
// or refused; the shutdown itself follows, and stops this daemon.
func (c Client) PowerOff(ctx context.Context) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	call := conn.Object(Name, Path).CallWithContext(ctx, powerOffCall, 0, false)
	if call.Err != nil {
		return explain(call.Err)
	}
	return nil
}

func (c Client) connect(ctx context.Context) (*dbus.Conn, error) {
	where := c.Address
	if where == "" {
		where = os.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
	}
	if where == "" {
		where = "unix:path=" + systemBusPath
	}
	conn, err := dbus.Dial(where, dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("cannot reach the D-Bus system bus at %s to ask logind to power off (%v): "+
			"is dbus running, and is its socket reachable from joulie-agentd's unit?", where, err)
	}
	// EXTERNAL with the numeric uid, as go-systemd does: no user lookup.
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("authenticate to the D-Bus system bus at %s: %w", where, err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("register on the D-Bus system bus at %s: %w", where, err)
	}
	return conn, nil
}

// explain turns logind's refusal into what an operator can act on.
func explain(err error) error {
	var de dbus.Error
	if pe := (*dbus.Error)(nil); errors.As(err, &pe) {
		de = *pe
	} else if !errors.As(err, &de) {
		return fmt.Errorf("logind PowerOff: %w", err)
	}
	switch de.Name {
	case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
		return fmt.Errorf("logind PowerOff: no systemd-logind on the system bus (%s: %s); "+
			"this host cannot be powered off by the agent", de.Name, de.Error())
	case "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", "org.freedesktop.DBus.Error.AccessDenied":
		return fmt.Errorf("logind PowerOff refused (%s: %s): the agent runs as root and needs CAP_SYS_BOOT "+
			"(in the shipped unit's CapabilityBoundingSet) or a polkit rule allowing org.freedesktop.login1.power-off", de.Name, de.Error())
	}
	return fmt.Errorf("logind PowerOff failed (%s: %s)", de.Name, de.Error())
}
