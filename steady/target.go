package steady

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/echo/echopb"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

// Target is a running server steady did not start: it loads it where it
// listens and meters it only when told its process.
type Target struct {
	// Name labels its rows (the arm column; "" = "target").
	Name string
	// Addr is where it serves gRPC (and HTTP/1.1 or h2c, unless HTTPAddr
	// is set): host:port, or a Unix socket.
	Addr prober.Target
	// HTTPAddr is where HTTP load goes, if not Addr.
	HTTPAddr prober.Target
	// PID is the server process, for its CPU and memory from /proc. 0 =
	// unknown: the rows' server figures are null, never 0.
	PID int
	// DebugAddr serves the server's runtime metrics (rtmetrics.Path), for
	// allocation per call, heap and GC cycles ("" = none).
	DebugAddr string
	// AllowRemote permits an address that is not loopback.
	AllowRemote bool
	// Authority is the gRPC :authority to send ("" = Addr), for an
	// ingress that routes on it (a Knative Service's host).
	Authority string
	// Pods counts the instances serving the target, read at each window's
	// edges (nil = not counted): a Knative revision's running pods.
	Pods func(context.Context) (int, error)
}

// ErrRefused is returned when nothing answers at a target's address.
var ErrRefused = errors.New("target refused the connection")

// ParseTarget reads a target address: host:port, or unix:///path (also
// unix:/path) for a Unix socket. host:port may be written as a URL,
// http://, grpcs://, https:// or h3://HOST:PORT; grpcs://, https:// and
// h3:// say the target serves TLS (TargetTLS), h3:// that it serves
// HTTP/3 on that UDP port (TargetH3). A URL's path is TargetPath's.
func ParseTarget(s string) (prober.Target, error) {
	if p, ok := strings.CutPrefix(s, "unix://"); ok {
		if !strings.HasPrefix(p, "/") {
			return prober.Target{}, fmt.Errorf("%q: want unix:///absolute/path", s)
		}
		return prober.Target{Network: "unix", Address: p}, nil
	}
	if p, ok := strings.CutPrefix(s, "unix:"); ok && strings.HasPrefix(p, "/") {
		return prober.Target{Network: "unix", Address: p}, nil
	}
	hp, _ := splitURL(s)
	h, p, err := net.SplitHostPort(hp)
	if err != nil || p == "" {
		return prober.Target{}, fmt.Errorf("%q: want host:port, h3://host:port/path or unix:///path", s)
	}
	_ = h
	return prober.Target{Network: "tcp", Address: hp}, nil
}

// urlSchemes are the schemes a target's host:port may be written with;
// those but grpcs:// and dns:/// may carry a path.
var urlSchemes = []string{"http://", "https://", "h3://", "grpcs://", "dns:///"}

// splitURL cuts s into its host:port and, for an http://, https:// or
// h3:// URL, its path ("" when none, or just "/").
func splitURL(s string) (hostPort, path string) {
	for _, scheme := range urlSchemes {
		rest, ok := strings.CutPrefix(s, scheme)
		if !ok {
			continue
		}
		if scheme == "grpcs://" || scheme == "dns:///" {
			return strings.TrimSuffix(rest, "/"), ""
		}
		hostPort, path, _ = strings.Cut(rest, "/")
		if path != "" {
			path = "/" + path
		}
		return hostPort, path
	}
	return strings.TrimSuffix(s, "/"), ""
}

// TargetPath is the path of a target written as an http://, https:// or
// h3:// URL ("" when it has none): where its HTTP load POSTs.
func TargetPath(s string) string {
	_, p := splitURL(s)
	return p
}

// TargetTLS says the target address s names a TLS server: grpcs://,
// https:// or h3://, as coldstart's probes take them.
func TargetTLS(s string) bool {
	return strings.HasPrefix(s, "grpcs://") || strings.HasPrefix(s, "https://") || TargetH3(s)
}

// TargetH3 says the target address s is h3://: a server that serves
// HTTP/3 over QUIC on the UDP port of its host:port.
func TargetH3(s string) bool {
	return strings.HasPrefix(s, "h3://")
}

// targetAddr is one of a target's addresses and its field path in Config,
// which errors about it name.
type targetAddr struct {
	field string
	addr  prober.Target
}

// fieldAddrs are the target's gRPC and HTTP addresses.
func (t Target) fieldAddrs() []targetAddr {
	return []targetAddr{{"Target.Addr", t.Addr}, {"Target.HTTPAddr", t.HTTPAddr}}
}

// checkLoopback refuses an address outside this machine unless allowed.
func (t Target) checkLoopback() error {
	for _, a := range t.fieldAddrs() {
		if a.addr.Address == "" || a.addr.Network == "unix" || t.AllowRemote {
			continue
		}
		host, _, err := net.SplitHostPort(a.addr.Address)
		if err != nil {
			return optionf(a.field, "%q: %w", a.addr.Address, err)
		}
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return &OptionError{Option: a.field, Fix: "Target.AllowRemote",
				Err: fmt.Errorf("%s is not a loopback address; steady loads only this machine's servers unless allowed", a.addr.Address)}
		}
	}
	return nil
}

// attached is a running server as a launcher's Instance: it was not
// started here and is never stopped here. With a PID, Done closes when
// the process is gone.
type attached struct {
	pid  int
	t0   time.Time
	done chan struct{}
	stop chan struct{}
}

var _ launch.Instance = (*attached)(nil)

func attach(pid int) *attached {
	a := &attached{pid: pid, t0: time.Now(), done: make(chan struct{}), stop: make(chan struct{})}
	if pid > 0 {
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-a.stop:
					return
				case <-tick.C:
					if _, err := procfs.Host.CPU(pid); err != nil {
						close(a.done)
						return
					}
				}
			}
		}()
	}
	return a
}

func (a *attached) PID() int                     { return a.pid }
func (a *attached) T0() time.Time                { return a.t0 }
func (a *attached) Phases() []prober.Phase       { return nil }
func (a *attached) Done() <-chan struct{}        { return a.done }
func (a *attached) Usage() (budget.Usage, error) { return budget.Usage{}, nil }
func (a *attached) Err() error {
	select {
	case <-a.done:
		return fmt.Errorf("%w: process %d is gone", launch.ErrExited, a.pid)
	default:
		return nil
	}
}

// Stop leaves the server running: it is not ours.
func (a *attached) Stop(context.Context) error {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	return nil
}

// attachTarget checks the target (loopback, reachable, PID its listener)
// and returns it as a server to load.
func attachTarget(ctx context.Context, cfg Config, t Target) (*server, error) {
	if err := t.checkLoopback(); err != nil {
		return nil, err
	}
	if t.HTTPAddr.Address == "" {
		t.HTTPAddr = t.Addr
	}
	name := t.Name
	if name == "" {
		name = "target"
	}
	// HTTP/3 alone reaches the server over UDP only: there is no TCP
	// listener to dial, and the PID is the process bound to that UDP
	// port (checkH3 below says whether HTTP/3 answers there).
	udpOnly := cfg.Call == nil && !known(cfg.Protocols, GRPC) && !usesHTTP(cfg.Protocols) && known(cfg.Protocols, H3)
	if !udpOnly {
		d := net.Dialer{Timeout: 5 * time.Second}
		for _, a := range t.fieldAddrs() {
			c, err := d.DialContext(ctx, a.addr.Network, a.addr.Address)
			if err != nil {
				return nil, optionf(a.field, "%w: %s: %v (is the server running there?)", ErrRefused, a.addr, err)
			}
			c.Close()
		}
	}
	if t.PID > 0 {
		at := t.Addr
		if udpOnly {
			at = prober.Target{Network: "udp", Address: t.HTTPAddr.Address}
		}
		if err := (listeners{Root: procfs.Host.Root}).checkListener(t.PID, at); err != nil {
			return nil, optionf("Target.PID", "%w; give the PID of the process listening at %s, or leave it out (server figures are then unknown)", err, at)
		}
	}
	// One check over each address the load reaches, over TLS when asked:
	// a TLS setting that cannot work (a certificate that does not verify,
	// a plaintext server, a client certificate demanded), or a TLS server
	// loaded in plaintext, is said now rather than counted as every
	// call's error. An ingress that routes on the authority (a Knative
	// Service's, always in clear text) is left to the load.
	checkGRPC := (cfg.Call != nil || known(cfg.Protocols, GRPC)) && t.Authority == ""
	if checkGRPC {
		if err := checkOnce(ctx, readyChecker(cfg, true), t.Addr); err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Addr, err)
		}
	}
	if usesHTTP(cfg.Protocols) && t.Authority == "" && (!checkGRPC || t.HTTPAddr != t.Addr) {
		if err := checkOnce(ctx, readyChecker(cfg, false), t.HTTPAddr); err != nil {
			return nil, fmt.Errorf("target %s: %w", t.HTTPAddr, err)
		}
	}
	if known(cfg.Protocols, H3) && t.Authority == "" {
		if err := checkH3(ctx, cfg, t.HTTPAddr); err != nil {
			return nil, fmt.Errorf("target udp://%s: %w", t.HTTPAddr.Address, err)
		}
	}
	health := false
	var call *resolvedCall
	if cfg.Call != nil {
		var err error
		if call, err = resolveCall(ctx, cfg.Call, t.Addr, t.Authority, cfg.TLS); err != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Log, "steady: %s at %s: gRPC load calls %s (%d request(s), %d B on average)\n", name, t.Addr, call.method, len(call.wire), call.bytes)
	} else if known(cfg.Protocols, GRPC) {
		var err error
		if health, err = probeEcho(ctx, t, cfg.TLS); err != nil {
			return nil, err
		}
		if health && known(cfg.Scenarios, Stream) {
			return nil, errNoEchoStream(t.Addr)
		}
		if health {
			fmt.Fprintf(cfg.Log, "steady: %s at %s has no coldstart Echo service: its gRPC load is %s (no payload)\n", name, t.Addr, healthMethod)
		}
	}
	inst := attach(t.PID)
	s := &server{health: health, call: call, arm: name, budget: "unknown", inst: inst, addrs: addrs{grpc: t.Addr, http: t.HTTPAddr}, metered: t.PID > 0,
		cleanup: []func(){func() { inst.Stop(context.Background()) }}, authority: t.Authority, pods: t.Pods}
	if t.DebugAddr != "" {
		s.addrs.debug = prober.Target{Network: "tcp", Address: t.DebugAddr}
	}
	fmt.Fprintf(cfg.Log, "steady: loading %s at %s (pid %s)\n", name, t.Addr, pidText(t.PID))
	return s, nil
}

// errNoEchoStream refuses the stream scenario on a server at addr that has
// no coldstart Echo service, so no EchoStream to ping-pong.
func errNoEchoStream(addr prober.Target) error {
	return optionf("Scenarios", "stream: %s has no coldstart Echo service (so no EchoStream); steady can load it with unary health checks only (sequential, throughput, open, ramp)", addr)
}

// healthMethod is the standard gRPC health check, what a target without
// coldstart's Echo service is loaded with.
const healthMethod = healthpb.Health_Check_FullMethodName

// probeEcho finds out whether a target serves coldstart's Echo. One that
// answers Unimplemented but serves the standard health check (fortio's
// gRPC server, say) is loaded with health checks: health is true. Any
// other answer leaves it to the load, which counts what fails. tl, when
// set, is the TLS the load speaks.
func probeEcho(ctx context.Context, t Target, tl *prober.TLS) (health bool, err error) {
	opts := grpcDialOptions(tl, nil)
	if t.Authority != "" {
		opts = append(opts, grpc.WithAuthority(t.Authority))
	}
	cc, err := grpc.NewClient(t.Addr.GRPCTarget(), opts...)
	if err != nil {
		return false, optionf("Target.Addr", "%s: %w", t.Addr, err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	eerr := cc.Invoke(ctx, echoMethod, &echopb.EchoRequest{}, new(echopb.EchoResponse))
	if status.Code(eerr) != codes.Unimplemented {
		return false, nil
	}
	if herr := cc.Invoke(ctx, healthMethod, &healthpb.HealthCheckRequest{}, new(healthpb.HealthCheckResponse)); herr != nil {
		return false, &OptionError{Option: "Target.Addr", Fix: "Protocols",
			Err: fmt.Errorf("%s serves neither coldstart's Echo (%v) nor the gRPC health check (%v); give the address of a gRPC server that has one, or load it over http1 or h2c", t.Addr, eerr, herr)}
	}
	return true, nil
}

func pidText(pid int) string {
	if pid <= 0 {
		return "unknown: server figures null"
	}
	return fmt.Sprint(pid)
}
