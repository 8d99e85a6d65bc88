package systemd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeSystemd listens where NOTIFY_SOCKET points and collects datagrams,
// as systemd does for a Type=notify service.
func fakeSystemd(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	out := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(out)
				return
			}
			out <- string(buf[:n])
		}
	}()
	return out
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no datagram from the notifier")
		return ""
	}
}

func TestNotifyReadyStatusStopping(t *testing.T) {
	ch := fakeSystemd(t)
	n := NewNotifier()
	if err := n.Ready("enforcing eco on node-a (rapl)"); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ch); m != "READY=1\nSTATUS=enforcing eco on node-a (rapl)" {
		t.Fatalf("ready datagram %q", m)
	}
	_ = n.Status("failsafe: keep")
	if m := next(t, ch); m != "STATUS=failsafe: keep" {
		t.Fatalf("status datagram %q", m)
	}
	_ = n.Reloading()
	if m := next(t, ch); !strings.HasPrefix(m, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("reloading datagram %q", m)
	}
	_ = n.Stopping("restoring original power settings")
	if m := next(t, ch); m != "STOPPING=1\nSTATUS=restoring original power settings" {
		t.Fatalf("stopping datagram %q", m)
	}
}

func TestWatchdogPingsWhileHealthy(t *testing.T) {
	ch := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "100000") // 100 ms: pings every 50 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	healthy := make(chan bool, 1)
	healthy <- true
	ok := true
	go NewNotifier().Watchdog(ctx, func() bool {
		select {
		case ok = <-healthy:
		default:
		}
		return ok
	})
	for range 2 {
		if m := next(t, ch); m != "WATCHDOG=1" {
			t.Fatalf("watchdog datagram %q", m)
		}
	}
	// A stuck loop stops the pings, so systemd kills and restarts it.
	healthy <- false
	time.Sleep(60 * time.Millisecond)
	for len(ch) > 0 {
		<-ch
	}
	select {
	case m := <-ch:
		t.Fatalf("pinged while unhealthy: %q", m)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestNoSystemdIsANoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	os.Unsetenv("NOTIFY_SOCKET")
	n := NewNotifier()
	if err := n.Ready("x"); err != nil {
		t.Fatalf("without systemd: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := n.Watchdog(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if l, err := ActivatedListener(); l != nil || err != nil {
		t.Fatalf("no LISTEN_FDS: %v %v", l, err)
	}
}
