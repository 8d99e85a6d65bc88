// Package podresources tells the agent which pod holds which GPU, by
// asking the kubelet's pod-resources API (k8s.io/kubelet's
// podresources/v1, gRPC on a Unix socket of the host, normally
// /var/lib/kubelet/pod-resources/kubelet.sock). It is the first half of
// per-pod energy (SPEC.md, "Power states, parking and per-pod energy"):
// the agent measures each GPU, and this package says whose work it was.
//
// Two parts. Client is the edge: it dials the socket lazily, bounds every
// call by a timeout, keeps its connection from tick to tick and dials
// again when the kubelet replaces its socket on a restart, and turns the
// kubelet's protobuf answer into plain values (Pod). GPUHolders is the
// pure core: from those values and the resource names that count as GPUs,
// the map from each GPU's device ID to the containers holding it, with
// the device plugins' replica IDs folded onto their physical GPU.
//
// A missing socket is a normal state, not a failure: a standalone host
// has no kubelet, and an old or locked-down kubelet may not serve the
// API. Poll reports it in its Status, which a caller shows to the
// operator on every tick, and the agent goes on with per-node figures.
package podresources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const (
	// DefaultSocket is where the kubelet serves the pod-resources API.
	DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
	// Off is the socket path that turns the client off: it never looks
	// for a socket, and Poll reports StateOff.
	Off = "none"
	// DefaultTimeout bounds one call when New is given none. The kubelet
	// answers List from memory in milliseconds; a second leaves most of
	// a 5 s tick to the rest of the agent even when it does not answer.
	DefaultTimeout = time.Second
	// maxReceive is the largest answer accepted: the kubelet's own
	// pod-resources client allows 16 MiB, far above a full node's List
	// (a few hundred bytes per pod), while still refusing a runaway one.
	maxReceive = 16 << 20
)

// Errors of List that are states rather than failures.
var (
	// ErrOff: the client was made with Off.
	ErrOff = errors.New("pod-resources client switched off")
	// ErrNoSocket: nothing at the socket path.
	ErrNoSocket = errors.New("no kubelet pod-resources socket")
)

// Client asks one kubelet for its pods' devices. Its methods are safe
// for concurrent use. The zero value is not usable; call New.
type Client struct {
	socket  string
	timeout time.Duration

	mu sync.Mutex
	// conn is the connection in use, nil before the first call and
	// after one that found it broken; api calls through it.
	conn *grpc.ClientConn
	api  v1.PodResourcesListerClient
	// file is the socket file conn was made for, so that a socket
	// replaced by a restarted kubelet is noticed before a call.
	file fileID
	// dialErr is the last failure to connect to the socket, kept to
	// explain the gRPC status, whose text alone does not say why.
	dialErr error
}

// New returns a client of the kubelet serving the pod-resources API on
// the Unix socket at socket (DefaultSocket, or Off), whose calls take at
// most timeout each (DefaultTimeout when zero or less). It does not
// touch the socket: the first call does.
func New(socket string, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{socket: socket, timeout: timeout}
}

// List returns the pods the kubelet runs, sorted by namespace and name,
// with the devices of each container. It fails with an error wrapping
// ErrOff or ErrNoSocket when there is nothing to ask, and otherwise with
// one that says what failed and what to look at.
//
// Each call first stats the socket: that alone is the cost when there is
// no kubelet. A connection is reused while the socket file stays the
// same one, and made anew when the kubelet has replaced it or the last
// call found it broken.
func (c *Client) List(ctx context.Context) ([]Pod, error) {
	if c.socket == Off {
		return nil, ErrOff
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	file, err := c.stat()
	if err != nil {
		c.drop(nil)
		return nil, err
	}
	api, conn, fresh, err := c.connect(file)
	if err != nil {
		return nil, err
	}
	resp, err := api.List(ctx, &v1.ListPodResourcesRequest{})
	if err != nil && !fresh && status.Code(err) == codes.Unavailable && ctx.Err() == nil {
		// The connection outlived its kubelet though the socket file
		// looks the same (a new file may reuse the old one's inode and
		// timestamps within a clock tick): one more try on a new one.
		c.drop(conn)
		if api, conn, _, err = c.connect(file); err != nil {
			return nil, err
		}
		resp, err = api.List(ctx, &v1.ListPodResourcesRequest{})
	}
	if err != nil {
		if code := status.Code(err); code == codes.Unavailable || code == codes.DeadlineExceeded {
			// A connection that failed or hung is not kept: the next call
			// dials at once instead of waiting out gRPC's reconnect
			// backoff, which grows to two minutes.
			c.drop(conn)
		}
		return nil, c.explain(err)
	}
	return fromProto(resp.GetPodResources()), nil
}

// Close releases the connection. A later call dials again.
func (c *Client) Close() error {
	c.drop(nil)
	return nil
}

// fileID tells one socket file from another made at the same path.
type fileID struct {
	dev, ino uint64
	ctime    syscall.Timespec
}

// stat checks that the socket is there and is a socket, and identifies it.
func (c *Client) stat() (fileID, error) {
	fi, err := os.Stat(c.socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileID{}, fmt.Errorf("%w at %s", ErrNoSocket, c.socket)
	case errors.Is(err, fs.ErrPermission):
		return fileID{}, fmt.Errorf("cannot look at the kubelet's pod-resources socket %s: %w; "+
			"joulie-agentd must run as root (the kubelet's directory is root's alone)", c.socket, err)
	case err != nil:
		return fileID{}, fmt.Errorf("cannot look at the kubelet's pod-resources socket: %w", err)
	case fi.Mode().Type() != fs.ModeSocket:
		return fileID{}, fmt.Errorf("%s is not a socket but a %s; podResources.socket must name the kubelet's "+
			"pod-resources socket (%s), or be %q", c.socket, fileKind(fi.Mode()), DefaultSocket, Off)
	}
	var id fileID
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id = fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: st.Ctim}
	}
	return id, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file (" + m.Type().String() + ")"
}

// connect returns the connection to the socket file, making one unless
// the one in use was made for that very file; fresh says it was made now.
// Making one does not dial: gRPC connects on the first call.
func (c *Client) connect(file fileID) (v1.PodResourcesListerClient, *grpc.ClientConn, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && c.file == file {
		return c.api, c.conn, false, nil
	}
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	c.dialErr = nil
	// passthrough: the target is not a name to resolve; the dialer
	// below knows the one place to go.
	conn, err := grpc.NewClient("passthrough:///kubelet-pod-resources",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(c.dial),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReceive)),
	)
	if err != nil {
		return nil, nil, false, fmt.Errorf("set up a gRPC client for the kubelet's socket %s: %w", c.socket, err)
	}
	c.conn, c.api, c.file = conn, v1.NewPodResourcesListerClient(conn), file
	return c.api, conn, true, nil
}

func (c *Client) dial(ctx context.Context, _ string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		c.mu.Lock()
		c.dialErr = err
		c.mu.Unlock()
	}
	return conn, err
}

// drop closes conn if it is still the one in use; nil closes any.
func (c *Client) drop(conn *grpc.ClientConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && (conn == nil || conn == c.conn) {
		c.conn.Close()
		c.conn, c.api = nil, nil
	}
}

// explain turns a failed List into what an operator can act on.
func (c *Client) explain(err error) error {
	c.mu.Lock()
	dialErr := c.dialErr
	c.mu.Unlock()
	st, _ := status.FromError(err)
	where := "the kubelet's pod-resources API at " + c.socket
	switch st.Code() {
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s did not answer List within %v: the kubelet may be overloaded or hung", where, c.timeout)
	case codes.Unavailable:
		if errors.Is(dialErr, fs.ErrPermission) {
			return fmt.Errorf("cannot connect to %s: %v; joulie-agentd must run as root to use the kubelet's socket", where, dialErr)
		}
		if errors.Is(dialErr, syscall.ECONNREFUSED) {
			return fmt.Errorf("cannot connect to %s: nothing listens on the socket; is the kubelet running?", where)
		}
		return fmt.Errorf("cannot reach %s (%s); is the kubelet running?", where, st.Message())
	case codes.Unimplemented:
		return fmt.Errorf("%s does not serve List (%s): this is no kubelet's pod-resources socket, or the kubelet is too old", where, st.Message())
	case codes.ResourceExhausted:
		// gRPC's own refusal of an answer over maxReceive has this code
		// too; its text is the only way to tell it from the kubelet's.
		if strings.Contains(st.Message(), "larger than max") {
			return fmt.Errorf("%s answered List with more than the %d MiB the agent reads (%s)", where, maxReceive>>20, st.Message())
		}
		return fmt.Errorf("%s refused List: %s; the kubelet limits calls to this API per second, "+
			"and another client on this host may be using them up", where, st.Message())
	case codes.Canceled:
		return fmt.Errorf("List on %s canceled: %s", where, st.Message())
	}
	return fmt.Errorf("%s failed List: %s: %s", where, st.Code(), st.Message())
}

// fromProto copies the kubelet's answer into plain values, leaving out
// CPU, memory and dynamic resources, and sorts the pods. The getters
// make nil messages read as empty ones, so a sparse answer cannot panic.
func fromProto(in []*v1.PodResources) []Pod {
	pods := make([]Pod, 0, len(in))
	for _, p := range in {
		if p == nil {
			continue
		}
		pod := Pod{Namespace: p.GetNamespace(), Name: p.GetName()}
		for _, ct := range p.GetContainers() {
			if ct == nil {
				continue
			}
			c := Container{Name: ct.GetName()}
			for _, d := range ct.GetDevices() {
				if d == nil {
					continue
				}
				c.Devices = append(c.Devices, Allocation{Resource: d.GetResourceName(), IDs: d.GetDeviceIds()})
			}
			pod.Containers = append(pod.Containers, c)
		}
		pods = append(pods, pod)
	}
	slices.SortFunc(pods, func(a, b Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return pods
}
