package prober

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Vars are what the prober chose for one instance, filled into a server's
// argument template.
type Vars struct {
	// Addr is host:port ({addr}); Host and Port are its parts ({host},
	// {port}). Empty for a Unix socket.
	Addr, Host, Port string
	// Socket is a Unix socket path ({socket}) in a per-instance directory.
	Socket string
	// DebugAddr is a free loopback host:port for the server's debug
	// listener ({debug_addr}).
	DebugAddr string
	// HTTPAddr is a free loopback host:port for the server's HTTP/1.1
	// listener ({http_addr}), where steady sends HTTP load.
	HTTPAddr string
}

// Placeholders are the names a template may use, in braces.
// coldstart run, density, pull and steady run all take the same set.
// {tmpdir} is not an instance's: it is the campaign's temporary directory
// (internal/hooks; the hooks' placeholder too), filled in the arguments
// before they reach a Template, so Vars has no value for it.
var Placeholders = []string{"addr", "host", "port", "socket", "http_addr", "debug_addr", "tmpdir"}

func (v Vars) value(name string) string {
	switch name {
	case "addr":
		return v.Addr
	case "host":
		return v.Host
	case "port":
		return v.Port
	case "socket":
		return v.Socket
	case "debug_addr":
		return v.DebugAddr
	case "http_addr":
		return v.HTTPAddr
	}
	return ""
}

// VarsFor fills Vars from the target an instance listens on.
func VarsFor(t Target) Vars {
	if t.Network == "unix" {
		return Vars{Socket: t.Address}
	}
	host, port, _ := net.SplitHostPort(t.Address)
	return Vars{Addr: t.Address, Host: host, Port: port}
}

// placeholder matches {name}; braces around anything that is not an
// identifier ({"a":1}, {}) are left alone.
var placeholder = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Template is a server's argument list (what follows `--`) with
// placeholders filled per instance: {addr}, {host}, {port}, {socket},
// {http_addr}, {debug_addr} (and {tmpdir}, filled before: Placeholders). The same placeholders work in --env values.
// It is the one expander: coldstart's commands and steady use it.
type Template struct {
	args []string
	used map[string]bool
}

// ParseTemplate checks args for unknown placeholders: the error names the
// first one and lists the known ones.
func ParseTemplate(args []string) (Template, error) {
	t := Template{args: slices.Clone(args), used: map[string]bool{}}
	for _, a := range args {
		for _, m := range placeholder.FindAllStringSubmatch(a, -1) {
			if !slices.Contains(Placeholders, m[1]) {
				return Template{}, fmt.Errorf("server arguments: unknown placeholder {%s} in %q (known: {%s})",
					m[1], a, strings.Join(Placeholders, "}, {"))
			}
			t.used[m[1]] = true
		}
	}
	if t.used["socket"] && (t.used["addr"] || t.used["host"] || t.used["port"]) {
		return Template{}, fmt.Errorf("server arguments: {socket} and {addr}/{host}/{port} in one template: the server listens on one of them")
	}
	return t, nil
}

// Uses reports whether the template uses the named placeholder.
func (t Template) Uses(name string) bool { return t.used[name] }

// UsesSocket reports whether the server listens on the Unix socket the
// template gives it: the instance's target is then that socket.
func (t Template) UsesSocket() bool { return t.used["socket"] }

// Target picks where one instance listens: the Unix socket SocketPath(dir)
// when the template uses {socket} (dir is the instance's own temporary
// directory), else tcp.
func (t Template) Target(tcp Target, dir string) Target {
	if t.UsesSocket() {
		return Target{Network: "unix", Address: SocketPath(dir)}
	}
	return tcp
}

// SocketPath is the socket path the prober gives a server in its
// per-instance directory dir. Keep dir short: a socket path is limited to
// 107 bytes.
func SocketPath(dir string) string { return filepath.Join(dir, "server.sock") }

// maxSocketPath is sun_path's size on Linux (108) less its terminating NUL.
const maxSocketPath = 107

// VarsFor fills Vars for an instance listening at t, picking a free
// loopback port for {debug_addr} and {http_addr} when the template uses
// them.
func (t Template) VarsFor(target Target) (Vars, error) {
	v := VarsFor(target)
	for _, p := range []struct {
		name string
		dst  *string
	}{{"debug_addr", &v.DebugAddr}, {"http_addr", &v.HTTPAddr}} {
		if !t.used[p.name] {
			continue
		}
		for i := 0; ; i++ {
			free, err := FreeTCP()
			if err != nil {
				return v, err
			}
			// FreeTCP closes the port it found: two calls may agree.
			if (free.Address != v.Addr && free.Address != v.DebugAddr) || i == 10 {
				*p.dst = free.Address
				break
			}
		}
	}
	return v, nil
}

// Expand fills the placeholders. A placeholder whose value is empty (a
// {debug_addr} nobody chose, an {addr} for a socket target) is an error.
func (t Template) Expand(v Vars) ([]string, error) {
	return expand(t.args, v)
}

// ExpandArgs checks and fills a template in one step.
func ExpandArgs(tmpl []string, v Vars) ([]string, error) {
	t, err := ParseTemplate(tmpl)
	if err != nil {
		return nil, err
	}
	return t.Expand(v)
}

func expand(args []string, v Vars) ([]string, error) {
	out := make([]string, len(args))
	var missing string
	for i, a := range args {
		out[i] = placeholder.ReplaceAllStringFunc(a, func(m string) string {
			name := m[1 : len(m)-1]
			val := v.value(name)
			if val == "" && missing == "" {
				missing = name
			}
			return val
		})
	}
	if missing == "tmpdir" {
		return nil, fmt.Errorf("server arguments: no value for {tmpdir} here (coldstart run, density, explain and steady run make one)")
	}
	if missing != "" {
		return nil, fmt.Errorf("server arguments: no value for {%s} (the target is %s)", missing, targetOf(v))
	}
	return out, nil
}

func targetOf(v Vars) string {
	if v.Socket != "" {
		return "unix socket " + v.Socket
	}
	if v.Addr != "" {
		return "tcp " + v.Addr
	}
	return "unset"
}

// ParseAddr parses a server's fixed address: host:port on a loopback
// host, or unix:/path (also unix:///path). A server that insists on one
// address is probed there; EnsureFree refuses to start it while anything
// answers at it. Its errors name the address, not where it came from.
func ParseAddr(s string) (Target, error) {
	if p, ok := strings.CutPrefix(s, "unix:"); ok {
		p = strings.TrimPrefix(p, "//")
		if !strings.HasPrefix(p, "/") {
			return Target{}, fmt.Errorf("%q: a Unix socket needs an absolute path (unix:/path/to.sock)", s)
		}
		return Target{Network: "unix", Address: p}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || port == "" || port == "0" {
		return Target{}, fmt.Errorf("%q is not host:port or unix:/path", s)
	}
	if !IsLoopback(host) {
		return Target{}, fmt.Errorf("%q: host %q is not loopback; coldstart runs servers on 127.0.0.0/8, ::1 or localhost", s, host)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1" // what the server most likely binds; no resolver in the loop
	}
	return Target{Network: "tcp", Address: net.JoinHostPort(host, port)}, nil
}

// ChooseTarget decides where one instance listens. A fixed address wins:
// fixed (the server's own, as ParseAddr reads it; zero = none), or else
// the address a probe URL names (http://127.0.0.1:9000/...); a probe URL
// that names another is an OptionError about the probe. Without one, the server gets the Unix socket
// SocketPath(dir) when its template uses {socket} (dir is the instance's own
// directory), else a free loopback TCP port. Call it once per instance; with
// a fixed address, call EnsureFree before each start and WaitFree after each
// stop.
func ChooseTarget(fixed Target, c Checker, tmpl Template, dir string) (Target, error) {
	if h, ok := c.(*HTTP); ok && h.Fixed.Address != "" {
		if fixed.Address != "" && fixed != h.Fixed {
			return Target{}, optionf("probe", "names %s, but the server's fixed address is %s: give one, or the same address", h.Fixed, fixed)
		}
		fixed = h.Fixed
	}
	if fixed.Address != "" {
		if tmpl.UsesSocket() && fixed.Network != "unix" {
			return Target{}, fmt.Errorf("server arguments use {socket} but the server's address is %s", fixed)
		}
		return fixed, nil
	}
	if tmpl.UsesSocket() {
		if dir == "" {
			return Target{}, fmt.Errorf("server arguments use {socket}: no directory for the socket")
		}
		p := SocketPath(dir)
		if len(p) > maxSocketPath {
			return Target{}, fmt.Errorf("socket path %s is %d bytes, over the %d-byte limit: use a shorter directory", p, len(p), maxSocketPath)
		}
		return Target{Network: "unix", Address: p}, nil
	}
	return FreeTCP()
}
