package steady

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/coldstart-go/coldstart/prober"
)

// ErrNotListener is returned when a PID given for a target is not the
// process listening at the target's address.
var ErrNotListener = errors.New("not the target's listener")

// listeners finds, from a proc root (/proc, or testdata in tests), which
// socket inodes listen at an address and whether a process holds one.
type listeners struct {
	Root string
}

// checkListener verifies that process pid holds the socket listening at
// t: the listening socket's inode, from /proc/PID/net/{tcp,tcp6,unix}
// ({udp,udp6} for a "udp" t: the socket bound there) in the process's
// network namespace, must be one of the sockets among /proc/PID/fd.
func (l listeners) checkListener(pid int, t prober.Target) error {
	dir := filepath.Join(l.Root, strconv.Itoa(pid))
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("no process %d: %w", pid, err)
	}
	inodes, err := l.listening(pid, t)
	if err != nil {
		return err
	}
	if len(inodes) == 0 {
		return fmt.Errorf("process %d: %w: nothing listens at %s in its network namespace", pid, ErrNotListener, t)
	}
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return fmt.Errorf("read the sockets of process %d: %w", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			if inodes[strings.TrimSuffix(ino, "]")] {
				return nil
			}
		}
	}
	return fmt.Errorf("process %d: %w: it holds no socket listening at %s (another process does)", pid, ErrNotListener, t)
}

// listening returns the inodes of sockets listening at t.
func (l listeners) listening(pid int, t prober.Target) (map[string]bool, error) {
	net := filepath.Join(l.Root, strconv.Itoa(pid), "net")
	found := map[string]bool{}
	if t.Network == "unix" {
		// Num RefCount Protocol Flags Type St Inode Path; flags 00010000 = listening.
		err := scan(filepath.Join(net, "unix"), func(f []string) {
			if len(f) >= 8 && f[3] == "00010000" && f[7] == t.Address {
				found[f[6]] = true
			}
		})
		return found, err
	}
	host, port, err := splitHostPort(t.Address)
	if err != nil {
		return nil, err
	}
	// sl local_address rem_address st ... inode; st 0A = LISTEN, and for
	// UDP 07, a socket bound but not connected (a server's).
	files, state := []string{"tcp", "tcp6"}, "0A"
	if t.Network == "udp" {
		files, state = []string{"udp", "udp6"}, "07"
	}
	for _, file := range files {
		err := scan(filepath.Join(net, file), func(f []string) {
			if len(f) < 10 || f[3] != state {
				return
			}
			ip, p, ok := parseProcAddr(f[1])
			if !ok || p != port {
				return
			}
			if ip.IsUnspecified() || ip.Equal(host) || host == nil {
				found[f[9]] = true
			}
		})
		if err != nil && !(file == files[1] && errors.Is(err, os.ErrNotExist)) {
			return nil, err
		}
	}
	return found, nil
}

func scan(path string, line func([]string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		line(strings.Fields(sc.Text()))
	}
	return sc.Err()
}

func splitHostPort(addr string) (net.IP, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, 0, fmt.Errorf("port %q: %w", p, err)
	}
	if h == "localhost" {
		return net.IPv4(127, 0, 0, 1), port, nil
	}
	return net.ParseIP(h), port, nil
}

// parseProcAddr reads /proc/net/tcp's "0100007F:1F90": the address as
// 32-bit words in host (little-endian) order, then the port in hex.
func parseProcAddr(s string) (net.IP, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || (len(a) != 8 && len(a) != 32) {
		return nil, 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	ip := make(net.IP, len(a)/2)
	for w := 0; w < len(a)/8; w++ {
		v, err := strconv.ParseUint(a[w*8:w*8+8], 16, 32)
		if err != nil {
			return nil, 0, false
		}
		ip[w*4], ip[w*4+1], ip[w*4+2], ip[w*4+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return ip, int(port), true
}
