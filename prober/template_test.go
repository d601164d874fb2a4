package prober_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/prober"
)

func TestExpandArgs(t *testing.T) {
	tcp := prober.VarsFor(prober.Target{Network: "tcp", Address: "127.0.0.1:8080"})
	tcp.DebugAddr = "127.0.0.1:9090"
	tcp.HTTPAddr = "127.0.0.1:9191"
	sock := prober.VarsFor(prober.Target{Network: "unix", Address: "/tmp/cs1/server.sock"})
	for _, tt := range []struct {
		name    string
		tmpl    []string
		v       prober.Vars
		want    []string
		wantErr []string
	}{
		{"addr", []string{"--listen={addr}", "-v"}, tcp, []string{"--listen=127.0.0.1:8080", "-v"}, nil},
		{"host and port", []string{"-host", "{host}", "-port", "{port}", "--debug={debug_addr}"}, tcp,
			[]string{"-host", "127.0.0.1", "-port", "8080", "--debug=127.0.0.1:9090"}, nil},
		{"http_addr beside host", []string{"--grpc={host}:{port}", "--http-addr={http_addr}"}, tcp,
			[]string{"--grpc=127.0.0.1:8080", "--http-addr=127.0.0.1:9191"}, nil},
		{"socket", []string{"--socket", "{socket}"}, sock, []string{"--socket", "/tmp/cs1/server.sock"}, nil},
		{"no placeholders", []string{"serve"}, tcp, []string{"serve"}, nil},
		{"JSON braces left alone", []string{`--config={"port":{port}}`, "{}", "{ addr }"}, tcp,
			[]string{`--config={"port":8080}`, "{}", "{ addr }"}, nil},
		{"unknown placeholder", []string{"--listen={address}"}, tcp, nil,
			[]string{"unknown placeholder {address}", "--listen={address}", "{addr}, {host}, {port}, {socket}, {http_addr}, {debug_addr}, {tmpdir}"}},
		{"no socket for a tcp target", []string{"--socket={socket}"}, tcp, nil, []string{"no value for {socket}", "tcp 127.0.0.1:8080"}},
		{"no debug address chosen", []string{"--debug={debug_addr}"}, prober.Vars{Addr: "x"}, nil, []string{"no value for {debug_addr}"}},
		{"socket and port", []string{"--socket={socket}", "--port={port}"}, tcp, nil, []string{"{socket} and {addr}/{host}/{port}"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prober.ExpandArgs(tt.tmpl, tt.v)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("ExpandArgs(%q) = %q, want an error", tt.tmpl, got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("ExpandArgs(%q) error %q, want it to mention %q", tt.tmpl, err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ExpandArgs(%q): %v", tt.tmpl, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ExpandArgs(%q) (-want +got):\n%s", tt.tmpl, diff)
			}
		})
	}
}

func TestTemplateTarget(t *testing.T) {
	tcp := prober.Target{Network: "tcp", Address: "127.0.0.1:8080"}
	for _, tt := range []struct {
		tmpl []string
		want prober.Target
	}{
		{[]string{"--port", "{port}"}, tcp},
		{nil, tcp},
		{[]string{"--unix={socket}"}, prober.Target{Network: "unix", Address: "/tmp/cs1/server.sock"}},
	} {
		tp, err := prober.ParseTemplate(tt.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if got := tp.Target(tcp, "/tmp/cs1"); got != tt.want {
			t.Errorf("ParseTemplate(%q).Target = %v, want %v", tt.tmpl, got, tt.want)
		}
	}
}

func TestParseAddr(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    prober.Target
		wantErr string
	}{
		{"127.0.0.1:9000", prober.Target{Network: "tcp", Address: "127.0.0.1:9000"}, ""},
		{"localhost:9000", prober.Target{Network: "tcp", Address: "127.0.0.1:9000"}, ""},
		{"[::1]:9000", prober.Target{Network: "tcp", Address: "[::1]:9000"}, ""},
		{"unix:/run/app.sock", prober.Target{Network: "unix", Address: "/run/app.sock"}, ""},
		{"unix:///run/app.sock", prober.Target{Network: "unix", Address: "/run/app.sock"}, ""},
		{"10.1.2.3:9000", prober.Target{}, "not loopback"},
		{":9000", prober.Target{}, "not loopback"},
		{"127.0.0.1", prober.Target{}, "not host:port"},
		{"127.0.0.1:0", prober.Target{}, "not host:port"},
		{"unix:app.sock", prober.Target{}, "absolute path"},
	} {
		got, err := prober.ParseAddr(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), strconv.Quote(tt.in)) || strings.Contains(err.Error(), "--") {
				t.Errorf("ParseAddr(%q) = %v, %v; want an error naming the address (no flag) and mentioning %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseAddr(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseProbe(t *testing.T) {
	for _, tt := range []struct {
		spec, request string
		want          prober.Checker // compared by value; nil = check name only
		name          string
		wantErr       string
	}{
		{spec: "", want: prober.Health{}},
		{spec: "health", want: prober.Health{}},
		{spec: "health:coldstart.echo.v1.Echo", want: prober.Health{Service: "coldstart.echo.v1.Echo"}},
		{spec: "tcp", want: prober.TCP{}},
		{spec: "http:///healthz", want: &prober.HTTP{Path: "/healthz"}},
		{spec: "http://{addr}/", want: &prober.HTTP{Path: "/"}},
		{spec: "http://127.0.0.1:{port}/ready?x=1", want: &prober.HTTP{Path: "/ready?x=1"}},
		{spec: "http://localhost", want: &prober.HTTP{Path: "/"}},
		{spec: "h2c://[::1]:{port}/x", want: &prober.HTTP{H2C: true, Path: "/x"}},
		{spec: "h2c://127.0.0.5:9000/h", want: &prober.HTTP{H2C: true, Path: "/h", Fixed: prober.Target{Network: "tcp", Address: "127.0.0.5:9000"}}},
		{spec: "http://[::1]:9000", want: &prober.HTTP{Path: "/", Fixed: prober.Target{Network: "tcp", Address: "[::1]:9000"}}},
		{spec: "http:///echo", request: `{"payload":"aGk="}`, want: &prober.HTTP{Path: "/echo", Body: []byte(`{"payload":"aGk="}`), ContentType: "application/json"}},
		{spec: "/coldstart.echo.v1.Echo/Echo", request: `{"payload":"aGk="}`, name: "grpc-method /coldstart.echo.v1.Echo/Echo"},
		{spec: "coldstart.echo.v1.Echo/Echo", name: "grpc-method /coldstart.echo.v1.Echo/Echo"},

		{spec: "http://10.0.0.1:8080/healthz", wantErr: `probe: "http://10.0.0.1:8080/healthz": host "10.0.0.1" is not loopback`},
		{spec: "http://example.com/healthz", wantErr: `host "example.com" is not loopback`},
		{spec: "h2c://[2001:db8::1]:80/", wantErr: "is not loopback"},
		{spec: "http://0.0.0.0:{port}/", wantErr: "is not loopback"},
		{spec: "http://127.0.0.1:{prt}/", wantErr: "only {addr} or HOST:{port}"},
		{spec: "https://127.0.0.1:9/", name: "https /"},
		{spec: "https:///healthz", name: "https /healthz"},
		{spec: "grpcs://", name: "grpcs-health"},
		{spec: "grpcs://localhost/health:coldstart.echo.v1.Echo", name: "grpcs-health"},
		{spec: "grpcs://{addr}/coldstart.echo.v1.Echo/Echo", request: `{"payload":"aGk="}`, name: "grpcs-method /coldstart.echo.v1.Echo/Echo"},
		{spec: "grpcs://127.0.0.1:{port}", name: "grpcs-health"},
		{spec: "grpcs://127.0.0.1:8443", wantErr: "a grpcs:// probe takes no port"},
		{spec: "grpcs://example.com", wantErr: `host "example.com" is not loopback`},
		{spec: "ftp://127.0.0.1/", wantErr: `probe: unknown probe "ftp://127.0.0.1/"`},
		{spec: "grpc", wantErr: "known: health"},
		{spec: "/coldstart.echo.v1.Echo/", wantErr: "probe: \"/coldstart.echo.v1.Echo/\" is not a gRPC method"},
		{spec: "/coldstart.echo.v1.Echo/Echo", request: `{"payload":`, wantErr: "request: not valid JSON"},
		{spec: "/coldstart.echo.v1.Echo/Echo", request: "@/nonexistent/req.bin", wantErr: "request: read /nonexistent/req.bin"},
		{spec: "health", request: "{}", wantErr: "request: the health probe takes no request"},
		{spec: "tcp", request: "{}", wantErr: "request: the tcp probe takes no request"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := prober.ParseProbe(tt.spec, tt.request)
			if tt.wantErr != "" {
				// Every case with a request is about the request.
				option := "probe"
				if tt.request != "" {
					option = "request"
				}
				var oe *prober.OptionError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &oe) || oe.Option != option {
					t.Fatalf("ParseProbe(%q, %q) = %v, %v; want an OptionError about the %s mentioning %q", tt.spec, tt.request, got, err, option, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseProbe(%q, %q): %v", tt.spec, tt.request, err)
			}
			if tt.want == nil {
				if got.Name() != tt.name {
					t.Errorf("ParseProbe(%q).Name() = %q, want %q", tt.spec, got.Name(), tt.name)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseProbe(%q, %q) (-want +got):\n%s", tt.spec, tt.request, diff)
			}
		})
	}
}

func TestChooseTarget(t *testing.T) {
	fixed := prober.Target{Network: "tcp", Address: "127.0.0.1:9000"}
	sock := prober.Target{Network: "unix", Address: "/tmp/cs1/server.sock"}
	parse := func(probe string, tmpl ...string) (prober.Checker, prober.Template) {
		c, err := prober.ParseProbe(probe, "")
		if err != nil {
			t.Fatal(err)
		}
		tp, err := prober.ParseTemplate(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		return c, tp
	}
	for _, tt := range []struct {
		name    string
		fixed   prober.Target
		probe   string
		tmpl    []string
		dir     string        // "" = /tmp/cs1
		want    prober.Target // zero: a free TCP port
		wantErr string
	}{
		{name: "free port", probe: "health"},
		{name: "fixed address", fixed: fixed, probe: "health", want: fixed},
		{name: "probe URL names the address", probe: "http://127.0.0.1:9000/healthz", want: fixed},
		{name: "same in both", fixed: fixed, probe: "http://127.0.0.1:9000/healthz", want: fixed},
		{name: "socket", probe: "health", tmpl: []string{"--unix", "{socket}"}, want: sock},
		{name: "fixed socket", fixed: sock, probe: "health", tmpl: []string{"--unix", "{socket}"}, want: sock},
		{name: "conflict", fixed: fixed, probe: "http://127.0.0.1:9001/", wantErr: "probe: names tcp://127.0.0.1:9001, but the server's fixed address is tcp://127.0.0.1:9000: give one, or the same address"},
		{name: "socket path too long", probe: "health", tmpl: []string{"{socket}"}, dir: "/tmp/" + strings.Repeat("d", 100), wantErr: "over the 107-byte limit"},
		{name: "socket template, tcp addr", fixed: fixed, probe: "health", tmpl: []string{"{socket}"}, wantErr: "use {socket}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, tp := parse(tt.probe, tt.tmpl...)
			dir := tt.dir
			if dir == "" {
				dir = "/tmp/cs1"
			}
			got, err := prober.ChooseTarget(tt.fixed, c, tp, dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ChooseTarget = %v, %v; want error mentioning %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == (prober.Target{}) {
				if got.Network != "tcp" || !strings.HasPrefix(got.Address, "127.0.0.1:") || got.Port() == "" {
					t.Errorf("ChooseTarget = %v, want a free loopback TCP port", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("ChooseTarget = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTemplateVarsFor: a template's own Vars get free, distinct loopback
// ports for {debug_addr} and {http_addr} only when it uses them.
func TestTemplateVarsFor(t *testing.T) {
	target := prober.Target{Network: "tcp", Address: "127.0.0.1:8080"}
	tmpl, err := prober.ParseTemplate([]string{"--addr={addr}", "--http-addr={http_addr}", "--debug-addr={debug_addr}"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := tmpl.VarsFor(target)
	if err != nil {
		t.Fatal(err)
	}
	if v.HTTPAddr == "" || v.DebugAddr == "" || v.HTTPAddr == v.DebugAddr || v.HTTPAddr == v.Addr {
		t.Errorf("VarsFor = %+v, want distinct free http and debug addresses", v)
	}
	for _, a := range []string{v.HTTPAddr, v.DebugAddr} {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("address %q is not on loopback", a)
		}
	}
	plain, _ := prober.ParseTemplate([]string{"--addr={addr}"})
	if v, _ := plain.VarsFor(target); v.HTTPAddr != "" || v.DebugAddr != "" {
		t.Errorf("VarsFor without {http_addr}/{debug_addr} = %+v, want no ports picked", v)
	}
}

// FuzzTemplate: parsing and expanding any argument never panics; a
// template that parses expands to arguments without a known placeholder
// left in them, and unknown-placeholder errors name the placeholder.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"--listen={addr}", "{host}:{port}", "{socket}", `{"a":{port}}`, "{", "}{", "{{addr}}", "{http_addr}{debug_addr}", "{x}", "{addr}{socket}", "{ addr }", "\x00{port}"} {
		f.Add(s, "-v")
	}
	v := prober.VarsFor(prober.Target{Network: "tcp", Address: "127.0.0.1:8080"})
	v.DebugAddr, v.HTTPAddr = "127.0.0.1:9090", "127.0.0.1:9191"
	f.Fuzz(func(t *testing.T, a, b string) {
		tmpl, err := prober.ParseTemplate([]string{a, b})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "server arguments:") {
				t.Errorf("ParseTemplate(%q, %q) error %q does not start with \"server arguments:\"", a, b, err)
			}
			return
		}
		out, err := tmpl.Expand(v)
		if err != nil {
			return // {socket} for a tcp target: named in the error
		}
		if len(out) != 2 {
			t.Fatalf("Expand gave %d arguments, want 2", len(out))
		}
		for i, in := range []string{a, b} {
			for _, p := range prober.Placeholders {
				if strings.Contains(in, "{"+p+"}") && strings.Contains(out[i], "{"+p+"}") && !strings.Contains(v.HTTPAddr+v.DebugAddr+v.Addr, "{") {
					// A value may not reintroduce a placeholder; braces in
					// the input around it (e.g. "{{addr}}") stay.
					if strings.Count(out[i], "{"+p+"}") >= strings.Count(in, "{"+p+"}") {
						t.Errorf("Expand(%q) = %q: {%s} not filled", in, out[i], p)
					}
				}
			}
		}
	})
}
