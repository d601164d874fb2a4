package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Phases the prebound launcher adds, from T0 (see record).
const (
	PhaseQueued         = record.PhaseQueued
	PhaseServerAccepted = record.PhaseServerAccepted
)

// ErrIgnoresListener is returned when a server started with an inherited
// listening socket does not use it: it binds its own instead, or fails
// trying to bind the address coldstart already holds.
var ErrIgnoresListener = errors.New("server ignores the inherited listener")

// Prebound launches servers the way socket activation does: coldstart
// creates, binds and listens on the server's socket itself, then starts the
// server with it as fd 3 and LISTEN_FDS=1, LISTEN_PID, LISTEN_FDNAMES in its
// environment (systemd's convention, sd_listen_fds(3)). Connections made
// before the server is ready wait in the kernel's accept queue instead of
// being refused, so no retry loop stands between "ready" and "first answer".
//
// LISTEN_PID must be the server's own pid: every reader of the convention
// (libsystemd's sd_listen_fds, go-systemd's activation.Files) ignores the
// sockets otherwise, so that a child of the server that inherits the
// environment does not take them. systemd sets it in the child between fork
// and exec; Go's os/exec cannot run code there, and a helper that sets it and
// execs the server would add a whole exec to every cold start. Prebound
// starts the server as the first process of a new PID namespace instead, so
// its pid is known before the fork: LISTEN_PID=1. The server sees itself as
// pid 1 (signals without a handler are then ignored, so Stop falls back to
// SIGKILL after the grace period for a server that installs no SIGTERM
// handler); coldstart reads its /proc figures by its host pid as usual. As
// root the namespace is CLONE_NEWPID alone; otherwise a user namespace that
// maps the caller's own uid and gid comes with it.
//
// The listener is plain TCP (not MPTCP, which Go would pick by default), or
// a Unix socket for a unix target. PORT is still set, so a server that
// ignores the inherited socket and binds $PORT fails with "address already
// in use", which Prebound reports as ErrIgnoresListener; a server that binds
// some other address is found by its listening sockets in /proc.
type Prebound struct {
	// Process starts the server (its Grace applies; its Prepare runs
	// before Prebound's own).
	Process Process
	// Name is LISTEN_FDNAMES ("" = "grpc").
	Name string
	// Backlog is the listen(2) backlog (0 = 4096, capped by the kernel's
	// net.core.somaxconn).
	Backlog int
	// Poll is how often the accept queue is read while the first
	// connection waits (0 = 200 µs).
	Poll time.Duration
	// Stage, when set, runs the server as its user (--run-as), as AsUser
	// does; the socket is bound by coldstart and inherited, so the user
	// needs no access to its address.
	Stage *runas.Stage
}

var _ Launcher = Prebound{}

// Launch binds s.Target, then starts s with the socket as fd 3.
func (l Prebound) Launch(ctx context.Context, s Spec) (Instance, error) {
	lf, err := listenFile(s.Target, l.Backlog)
	if err != nil {
		return nil, fmt.Errorf("start %s prebound: %w", s.Arm, err)
	}
	ino, err := socketInode(lf)
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s prebound: %w", s.Arm, err)
	}
	name := l.Name
	if name == "" {
		name = "grpc"
	}
	pl := l.Process
	if s, err = asUser(l.Stage, s, &pl); err != nil {
		lf.Close()
		return nil, err
	}
	prev := pl.Prepare
	pl.Prepare = func(cmd *exec.Cmd) {
		if prev != nil {
			prev(cmd)
		}
		cmd.ExtraFiles = append([]*os.File{lf}, cmd.ExtraFiles...)
		// Last in the environment: os/exec keeps the last of duplicates.
		cmd.Env = append(cmd.Env, "LISTEN_FDS=1", "LISTEN_PID=1", "LISTEN_FDNAMES="+name)
		inNewPIDNamespace(cmd.SysProcAttr)
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "+ # prebound: fd 3 = %s (listening), in a new PID namespace: LISTEN_FDS=1 LISTEN_PID=1 LISTEN_FDNAMES=%s\n", s.Target, name)
	}
	inst, err := pl.Launch(ctx, s)
	if err != nil {
		lf.Close()
		return nil, err
	}
	p := &prebound{Instance: inst, lf: lf, ino: ino, target: s.Target, arm: s.Arm,
		done: make(chan struct{}), stopWatch: make(chan struct{}), poll: l.Poll}
	if p.poll == 0 {
		p.poll = 200 * time.Microsecond
	}
	p.watched.Add(1)
	go p.watch()
	return p, nil
}

// inNewPIDNamespace makes the child the first process (pid 1) of a new PID
// namespace; without root, inside a user namespace mapping our own ids.
func inNewPIDNamespace(a *syscall.SysProcAttr) {
	a.Cloneflags |= syscall.CLONE_NEWPID
	if os.Geteuid() == 0 {
		return
	}
	a.Cloneflags |= syscall.CLONE_NEWUSER
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
}

// listenFile creates the listening socket for t and returns it as a file
// to hand to the child.
func listenFile(t prober.Target, backlog int) (*os.File, error) {
	if backlog <= 0 {
		backlog = 4096
	}
	var domain int
	var sa unix.Sockaddr
	switch t.Network {
	case "tcp":
		a, err := net.ResolveTCPAddr("tcp", t.Address)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", t, err)
		}
		if ip4 := a.IP.To4(); ip4 != nil {
			sa4 := &unix.SockaddrInet4{Port: a.Port}
			copy(sa4.Addr[:], ip4)
			domain, sa = unix.AF_INET, sa4
		} else {
			sa6 := &unix.SockaddrInet6{Port: a.Port}
			copy(sa6.Addr[:], a.IP.To16())
			domain, sa = unix.AF_INET6, sa6
		}
	case "unix":
		_ = os.Remove(t.Address) // a stale socket file
		domain, sa = unix.AF_UNIX, &unix.SockaddrUnix{Name: t.Address}
	default:
		return nil, fmt.Errorf("listen %s: network %q not supported", t, t.Network)
	}
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("listen %s: socket: %w", t, err)
	}
	if domain != unix.AF_UNIX {
		// As net.Listen does: rebinding a port in TIME_WAIT must work.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("listen %s: SO_REUSEADDR: %w", t, err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen %s: bind: %w", t, err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen %s: %w", t, err)
	}
	return os.NewFile(uintptr(fd), "listener "+t.String()), nil
}

func socketInode(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, fmt.Errorf("stat listener: %w", err)
	}
	return st.Ino, nil
}

type prebound struct {
	Instance
	lf     *os.File
	ino    uint64
	target prober.Target
	arm    string
	poll   time.Duration

	done      chan struct{}
	stopWatch chan struct{}
	watched   sync.WaitGroup
	once      sync.Once

	mu       sync.Mutex
	err      error // ErrIgnoresListener, when found
	queued   time.Duration
	accepted time.Duration
}

func (p *prebound) Done() <-chan struct{} { return p.done }

func (p *prebound) Err() error {
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	if err != nil {
		return err
	}
	err = p.Instance.Err()
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		return fmt.Errorf("%w: %s tried to bind %s itself instead of taking fd 3 (LISTEN_FDS=1, LISTEN_PID=1); %s", ErrIgnoresListener, p.arm, p.target, takeListenerHint(err))
	}
	return err
}

func takeListenerHint(err error) string {
	return "make the server use the listener handed over by socket activation (Go: github.com/coreos/go-systemd/v22/activation.Listeners); it said: " + err.Error()
}

func (p *prebound) Phases() []prober.Phase {
	ph := p.Instance.Phases()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queued > 0 {
		ph = append(ph, prober.Phase{Name: PhaseQueued, Ms: ms(p.queued)})
	}
	if p.accepted > 0 {
		ph = append(ph, prober.Phase{Name: PhaseServerAccepted, Ms: ms(p.accepted)})
	}
	return ph
}

func (p *prebound) Stop(ctx context.Context) error {
	p.once.Do(func() { close(p.stopWatch) })
	err := p.Instance.Stop(ctx)
	p.watched.Wait()
	return err
}

// watch follows the instance until it exits: it times the first
// connection's wait in the accept queue (TCP only: a listening socket's
// TCP_INFO says how many connections wait to be accepted), looks every 10 ms
// for a listening socket of the server's own, and closes coldstart's copy of
// the listener when the server has gone (else the kernel would keep queueing
// connections for nobody).
func (p *prebound) watch() {
	defer p.watched.Done()
	defer close(p.done)
	defer p.lf.Close()
	t0 := p.Instance.T0()
	tcp := p.target.Network == "tcp"
	var maxQueued uint32
	lastLook := time.Now()
	tick := time.NewTicker(p.poll)
	defer tick.Stop()
	for {
		select {
		case <-p.Instance.Done():
			return
		case <-p.stopWatch:
			<-p.Instance.Done()
			return
		case <-tick.C:
		}
		p.mu.Lock()
		timing := tcp && p.accepted == 0
		p.mu.Unlock()
		if timing {
			if n, err := acceptQueue(p.lf); err == nil {
				now := time.Since(t0)
				p.mu.Lock()
				switch {
				case n > 0 && p.queued == 0:
					p.queued, maxQueued = now, n
				case n > maxQueued:
					maxQueued = n
				case p.queued > 0 && n < maxQueued:
					p.accepted = now
				}
				p.mu.Unlock()
			}
		} else if time.Since(lastLook) < 10*time.Millisecond {
			// Accepting: the server uses the listener; only the exit
			// matters now. Slow the loop down.
			tick.Reset(10 * time.Millisecond)
		}
		if time.Since(lastLook) >= 10*time.Millisecond {
			lastLook = time.Now()
			if own, err := ownListener(procfs.Host.Root, p.Instance.PID(), p.ino); err == nil && own != "" {
				p.mu.Lock()
				p.err = fmt.Errorf("%w: %s listens on its own socket (%s) instead of fd 3 (LISTEN_FDS=1, LISTEN_PID=1, %s); make the server use the listener handed over by socket activation (Go: github.com/coreos/go-systemd/v22/activation.Listeners)", ErrIgnoresListener, p.arm, own, p.target)
				p.mu.Unlock()
				return
			}
		}
	}
}

// acceptQueue is how many connections wait in a TCP listening socket's
// accept queue: for a socket in LISTEN state the kernel reports that in
// tcpi_unacked (and the backlog limit in tcpi_sacked).
func acceptQueue(f *os.File) (uint32, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var info *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) {
		info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return info.Unacked, nil
}

// ownListener returns a description of a listening socket that pid holds
// other than the one with inode skip ("" when there is none): TCP and TCP6
// sockets in LISTEN state and listening Unix sockets, matched to pid's open
// file descriptors by inode.
func ownListener(procRoot string, pid int, skip uint64) (string, error) {
	base := fmt.Sprintf("%s/%d", procRoot, pid)
	ents, err := os.ReadDir(base + "/fd")
	if err != nil {
		return "", err
	}
	mine := map[uint64]bool{}
	for _, e := range ents {
		l, err := os.Readlink(base + "/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(l, "socket:[") {
			continue
		}
		ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"), 10, 64)
		if err == nil && ino != skip {
			mine[ino] = true
		}
	}
	if len(mine) == 0 {
		return "", nil
	}
	for _, f := range []string{"tcp", "tcp6"} {
		if d, err := listeningTCP(base+"/net/"+f, mine); err != nil || d != "" {
			return d, err
		}
	}
	return listeningUnix(base+"/net/unix", mine)
}

// listeningTCP scans a /proc/net/tcp{,6} table for a socket in LISTEN state
// (st 0A) whose inode is in inodes.
func listeningTCP(path string, inodes map[uint64]bool) (string, error) {
	// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
	return scanSockets(path, inodes, 10, 9, func(fs []string) (string, bool) {
		return "tcp " + hexAddr(fs[1]), fs[3] == "0A"
	})
}

// listeningUnix scans /proc/net/unix for a listening socket (flags with
// __SO_ACCEPTCON, 00010000) whose inode is in inodes.
func listeningUnix(path string, inodes map[uint64]bool) (string, error) {
	// Num RefCount Protocol Flags Type St Inode Path
	return scanSockets(path, inodes, 7, 6, func(fs []string) (string, bool) {
		if len(fs) > 7 {
			return "unix " + fs[7], fs[3] == "00010000"
		}
		return "unix socket", fs[3] == "00010000"
	})
}

// scanSockets reads a /proc/net socket table and returns the description
// of the first row (of at least minFields fields) that listens and whose
// inode (field inodeField) is in inodes; "" when none does.
func scanSockets(path string, inodes map[uint64]bool, minFields, inodeField int, listens func(fs []string) (string, bool)) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < minFields {
			continue
		}
		d, ok := listens(fs)
		if !ok {
			continue
		}
		if ino, err := strconv.ParseUint(fs[inodeField], 10, 64); err == nil && inodes[ino] {
			return d, nil
		}
	}
	return "", sc.Err()
}

// hexAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080"
// (IPv4, little-endian words) or an IPv6 address.
func hexAddr(s string) string {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return s
	}
	var ip net.IP
	switch len(h) {
	case 8, 32:
		ip = make(net.IP, len(h)/2)
		for w := 0; w < len(h)/8; w++ {
			v, err := strconv.ParseUint(h[w*8:w*8+8], 16, 32)
			if err != nil {
				return s
			}
			// Each 32-bit word is printed in host (little-endian) order.
			ip[w*4], ip[w*4+1], ip[w*4+2], ip[w*4+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
	default:
		return s
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10))
}
