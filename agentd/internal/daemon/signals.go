package daemon

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// CatchSignals takes over SIGTERM, SIGINT and SIGHUP for the rest of the
// process's life. The main calls it before anything can write a power
// control: until then the default action (death) is harmless, and from
// then on no signal can end the process between a write and the restore.
//
// The returned context ends at the first SIGTERM or SIGINT, with the
// signal as its cause; later ones are absorbed, so a second Ctrl-C or
// `systemctl stop` cannot cut the restore short. A SIGHUP waits on reload
// (one pending at most: a reload reads the latest file anyway) until the
// daemon is ready to take it. release stops catching.
func CatchSignals(parent context.Context) (ctx context.Context, reload <-chan os.Signal, release func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := make(chan os.Signal, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-stop:
			cancel(fmt.Errorf("signal %s", sig))
		case <-done:
		}
	}()
	return ctx, hup, func() {
		signal.Stop(stop)
		signal.Stop(hup)
		close(done)
		cancel(nil)
	}
}
